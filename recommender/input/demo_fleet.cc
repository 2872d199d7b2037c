// Demo fleet generator. Randomness comes from SplitMix64 so the bytes do not depend on the
// standard library's distributions.
#include "recommender/input/demo_fleet.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numbers>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/time_format.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kDay = 86400;

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  double Uniform() {  // [0, 1)
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

struct DemoSample {
  double vram_bytes = 0;
  double sm = 0;
  bool oom = false;
};

// When the sample falls in the trace: seconds since start, hour of day, weekday (0 = Monday).
struct Clock {
  double since_start_s;
  double hour;
  int weekday;
};

struct DemoWorkload {
  const char* ns;
  const char* kind;
  const char* name;
  const char* container;
  const char* gpu_model;
  const char* allocation;
  const char* cost_center;
  std::vector<std::string> pods;
  int devices;
  std::function<DemoSample(const Clock&, SplitMix64&)> shape;
};

// 0 at 04:00, 1 at 16:00: the daily traffic cycle of an interactive service.
double Diurnal(const Clock& c) {
  return 0.5 - 0.5 * std::cos(2 * std::numbers::pi * (c.hour - 4) / 24);
}

std::vector<DemoWorkload> DemoWorkloads(double period_s) {
  std::vector<DemoWorkload> w;
  struct Burst {
    double end_s = -1;
    bool oom_done = false;
  };
  auto burst = std::make_shared<Burst>();
  const double burst_start_probability = period_s / (45 * 60);
  w.push_back({"agents",
               "Deployment",
               "agent-loop",
               "worker",
               "A100-80GB",
               "nvidia.com/gpu=1",
               "ai-agents",
               {"agent-loop-7d9f8c6b5-x2kqp"},
               1,
               [=](const Clock& c, SplitMix64& r) {
                 if (c.since_start_s >= burst->end_s && r.Uniform() < burst_start_probability)
                   burst->end_s = c.since_start_s + (2 + 6 * r.Uniform()) * 60;
                 if (c.since_start_s < burst->end_s) {
                   DemoSample s{14 * kGiB + 4 * kGiB * r.Uniform(), 0.55 + 0.3 * r.Uniform()};
                   if (!burst->oom_done && c.since_start_s >= 3 * kDay) {
                     burst->oom_done = true;
                     s.vram_bytes = 19.5 * kGiB;
                     s.oom = true;
                   }
                   return s;
                 }
                 return DemoSample{14 * kGiB, 0.01 * r.Uniform()};
               }});
  w.push_back({"search",
               "Deployment",
               "embed-server",
               "server",
               "L4-24GB",
               "nvidia.com/gpu=1",
               "search",
               {"embed-server-5c7d9b8f4-4hjzt", "embed-server-5c7d9b8f4-9mfwq"},
               1,
               [](const Clock& c, SplitMix64& r) {
                 const double d = Diurnal(c);
                 return DemoSample{9.5 * kGiB + 0.6 * kGiB * d + 0.1 * kGiB * r.Uniform(),
                                   0.15 + 0.45 * d + 0.05 * r.Uniform()};
               }});
  w.push_back({"chat",
               "StatefulSet",
               "vllm-llama",
               "vllm",
               "H100-80GB",
               "nvidia.com/gpu=1",
               "chat",
               {"vllm-llama-0"},
               1,
               [](const Clock& c, SplitMix64& r) {
                 return DemoSample{0.90 * 80 * kGiB + 64.0 * 1024 * 1024 * r.Uniform(),
                                   0.03 + 0.12 * Diurnal(c) + 0.03 * r.Uniform()};
               }});
  w.push_back({"research",
               "StatefulSet",
               "nightly-train",
               "trainer",
               "H100-80GB",
               "nvidia.com/gpu=4",
               "research",
               {"nightly-train-0"},
               4,
               [](const Clock& c, SplitMix64& r) {
                 if (c.hour >= 1 && c.hour < 3)
                   return DemoSample{62 * kGiB + 6 * kGiB * r.Uniform(), 0.85 + 0.1 * r.Uniform()};
                 return DemoSample{0.5 * kGiB, 0};
               }});
  w.push_back({"ml-team",
               "StatefulSet",
               "notebook-alice",
               "notebook",
               "T4-16GB",
               "nvidia.com/gpu=1",
               "ml-team",
               {"notebook-alice-0"},
               1,
               [](const Clock& c, SplitMix64& r) {
                 const bool after_lunch = c.weekday < 5 && c.hour >= 14 && c.hour < 14 + 20.0 / 60;
                 if (after_lunch) return DemoSample{3.1 * kGiB, 0.1 + 0.3 * r.Uniform()};
                 return DemoSample{2.1 * kGiB, 0};
               }});
  w.push_back({"fraud",
               "Deployment",
               "fraud-scorer",
               "scorer",
               "H100-80GB",
               "nvidia.com/mig-3g.40gb=1",
               "fraud",
               {"fraud-scorer-6b8c7d5f9-qwv2n"},
               1,
               [](const Clock& c, SplitMix64& r) {
                 return DemoSample{7 * kGiB + 0.3 * kGiB * r.Uniform(),
                                   0.08 + 0.06 * Diurnal(c) + 0.02 * r.Uniform()};
               }});
  w.push_back({"dev",
               "Deployment",
               "batch-embed",
               "embed",
               "A100-80GB",
               "nvidia.com/gpu.shared=1/4",
               "dev",
               {"batch-embed-84f6d7c9b-lp7rx"},
               1,
               [](const Clock& c, SplitMix64& r) {
                 const double minute = std::fmod(c.hour * 60, 60);
                 if (minute < 10) return DemoSample{5 * kGiB, 0.5 + 0.2 * r.Uniform()};
                 return DemoSample{3.5 * kGiB, 0.02 * r.Uniform()};
               }});
  return w;
}

}  // namespace

std::string GenerateDemoFleetTrace(const DemoFleetOptions& o) {
  SplitMix64 rng(o.seed);
  std::vector<DemoWorkload> fleet = DemoWorkloads(o.sample_period_s);
  std::string out =
      "timestamp,namespace,workload_kind,workload_name,container,pod,device,gpu_model,allocation,"
      "vram_bytes,sm_active,cuda_oom,cost_center\n";
  const auto ticks = static_cast<int64_t>(o.days * kDay / o.sample_period_s);
  char line[512];
  for (int64_t i = 0; i < ticks; ++i) {
    const double t = o.start_time_s + static_cast<double>(i) * o.sample_period_s;
    const double since = t - o.start_time_s;
    const Clock clock{since, std::fmod(since, kDay) / 3600, static_cast<int>(since / kDay) % 7};
    const std::string stamp = FormatTimestamp(t);
    for (DemoWorkload& w : fleet) {
      for (const std::string& pod : w.pods) {
        for (int device = 0; device < w.devices; ++device) {
          const DemoSample s = w.shape(clock, rng);
          const int n = std::snprintf(
              line, sizeof line, "%s,%s,%s,%s,%s,%s,%d,%s,%s,%.0f,%.4f,%d,%s\n", stamp.c_str(),
              w.ns, w.kind, w.name, w.container, pod.c_str(), device, w.gpu_model, w.allocation,
              s.vram_bytes, s.sm, s.oom ? 1 : 0, w.cost_center);
          out.append(line, static_cast<size_t>(n));
        }
      }
    }
  }
  return out;
}

Status WriteDemoFleetTrace(const DemoFleetOptions& options, const std::string& path) {
  return WriteFileAtomically(path, GenerateDemoFleetTrace(options));
}

}  // namespace gpuvpa::recommender
