// Writes a trace CSV of GPU workloads with known VRAM behaviour, for `gpuvpa backtest`: flat
// servers, diurnal load, rare spikes, slow growth, step changes and declining use, each with
// random parameters from a seed. The backtest then shows how each sizing strategy fares on
// behaviour whose future is known by construction.
//   spike_trace --out FILE [--workloads 129] [--days 2] [--seed 1] [--period-seconds 60]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kStart = 1'780'000'000;  // 2026-05-28T20:26:40Z
constexpr double kDayS = 86400;

enum class Shape { kFlat, kDiurnal, kSpiky, kGrowing, kStep, kDeclining };
constexpr const char* kShapeNames[] = {"flat", "diurnal", "spiky", "growing", "step", "declining"};

struct Workload {
  Shape shape;
  double level_gib;
  double amplitude;    // diurnal: relative swing; spiky: relative spike height
  double rate;         // spiky: spike probability per hour; growing: relative growth per day
  double step_at_s;    // step / declining: when the level changes (seconds from start)
  double step_factor;  // step / declining: the new level over the old
  double noise;        // relative sample noise
  double spike_end_s = -1;
};

Workload Draw(std::mt19937_64& rng, double days) {
  std::uniform_real_distribution<double> u(0, 1);
  const double r = u(rng);
  Workload w{};
  w.shape = r < 0.30   ? Shape::kFlat
            : r < 0.50 ? Shape::kDiurnal
            : r < 0.70 ? Shape::kSpiky
            : r < 0.80 ? Shape::kGrowing
            : r < 0.90 ? Shape::kStep
                       : Shape::kDeclining;
  w.level_gib = 4 + 60 * u(rng);
  w.noise = 0.002 + 0.01 * u(rng);
  switch (w.shape) {
    case Shape::kFlat:
      break;
    case Shape::kDiurnal:
      w.amplitude = 0.05 + 0.25 * u(rng);
      break;
    case Shape::kSpiky:
      w.amplitude = 0.1 + 0.4 * u(rng);
      w.rate = 0.02 + 0.18 * u(rng);
      break;
    case Shape::kGrowing:
      w.rate = 0.02 + 0.13 * u(rng);
      break;
    case Shape::kStep:
      w.step_at_s = (0.5 + 0.5 * u(rng)) * days * kDayS;
      w.step_factor = 0.6 + 0.7 * u(rng);
      break;
    case Shape::kDeclining:
      w.step_at_s = (0.4 + 0.2 * u(rng)) * days * kDayS;
      w.step_factor = 0.5 + 0.4 * u(rng);
      break;
  }
  return w;
}

double Sample(Workload& w, double since_s, double period_s, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  double level = w.level_gib;
  switch (w.shape) {
    case Shape::kFlat:
      break;
    case Shape::kDiurnal:
      level *= 1 + w.amplitude * std::sin(2 * std::numbers::pi * since_s / kDayS);
      break;
    case Shape::kSpiky:
      if (since_s >= w.spike_end_s && u(rng) < w.rate * period_s / 3600)
        w.spike_end_s = since_s + 300;
      if (since_s < w.spike_end_s) level *= 1 + w.amplitude;
      break;
    case Shape::kGrowing:
      level *= 1 + w.rate * since_s / kDayS;
      break;
    case Shape::kStep:
    case Shape::kDeclining:
      if (since_s >= w.step_at_s) level *= w.step_factor;
      break;
  }
  return std::min(79.0, level * (1 + w.noise * (2 * u(rng) - 1)));
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  int workloads = 129;
  double days = 2;
  uint64_t seed = 1;
  double period_s = 60;
  CLI::App app("Write a trace of GPU workloads with known VRAM behaviour (for gpuvpa backtest).");
  app.add_option("--out", out_path, "trace CSV to write")->required();
  app.add_option("--workloads", workloads, "how many")->check(CLI::Range(1, 100000));
  app.add_option("--days", days, "trace length")->check(CLI::Range(0.1, 60.0));
  app.add_option("--seed", seed, "random seed");
  app.add_option("--period-seconds", period_s, "sample period")->check(CLI::Range(1.0, 3600.0));
  CLI11_PARSE(app, argc, argv);
  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::perror(out_path.c_str());
    return 1;
  }
  std::mt19937_64 rng(seed);
  std::vector<Workload> fleet;
  for (int i = 0; i < workloads; ++i) fleet.push_back(Draw(rng, days));
  std::fprintf(out,
               "timestamp,namespace,workload_kind,workload_name,container,pod,device,gpu_model,"
               "allocation,vram_bytes,sm_active\n");
  const auto samples = static_cast<long>(days * kDayS / period_s);
  for (long s = 0; s < samples; ++s) {
    const double since = static_cast<double>(s) * period_s;
    for (int i = 0; i < workloads; ++i) {
      Workload& w = fleet[static_cast<size_t>(i)];
      const double gib = Sample(w, since, period_s, rng);
      std::fprintf(out,
                   "%.0f,ml,Deployment,%s-%d,main,%s-%d-0,0,H100-80GB,nvidia.com/gpu=1,%.0f,0.1\n",
                   kStart + since, kShapeNames[static_cast<int>(w.shape)], i,
                   kShapeNames[static_cast<int>(w.shape)], i, gib * kGiB);
    }
  }
  std::fclose(out);
  std::printf("spike_trace: %d workloads x %ld samples to %s\n", workloads, samples,
              out_path.c_str());
  return 0;
}
