// The node agent's cost on a node: one NVML pass over 8 GPUs x 32 processes (the fake
// libnvidia-ml.so.1's synthetic node; what the fake itself spends is inside the figure, so the
// agent's own share is below it), and the same pass with its series published and /metrics
// written, as a scrape every interval costs. CPU time per pass is the figure to read.
#include <benchmark/benchmark.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cstdlib>

#include "core/net/metrics_page.h"
#include "recommender/agent/gpu_sampler.h"
#include "recommender/agent/node_agent.h"
#include "recommender/agent/nvml_library.h"

namespace gpuvpa::agent {
namespace {

void BM_SamplerPass(benchmark::State& state) {
  ::setenv("FAKE_NVML_SYNTHETIC", "8x32", 1);
  Result<std::unique_ptr<nvml::Library>> lib = nvml::Library::Open(GPUVPA_FAKE_NVML);
  if (!lib.ok()) {
    state.SkipWithError(lib.status().message().c_str());
    return;
  }
  GpuSampler sampler(**lib);
  if (!sampler.Init().ok()) {
    state.SkipWithError("init");
    return;
  }
  double t = 0;
  size_t processes = 0;
  for (auto _ : state) {
    const Snapshot snap = sampler.Poll(t += 0.5);
    for (const DeviceReading& d : snap.devices) processes += d.processes.size();
    benchmark::DoNotOptimize(processes);
  }
  state.counters["processes_per_pass"] =
      static_cast<double>(processes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SamplerPass)->Unit(benchmark::kMicrosecond);

// pass 0: NVML pass and series published; 1: that and the /metrics page written.
void BM_AgentPassAndScrape(benchmark::State& state) {
  const bool scrape = state.range(0) == 1;
  ::setenv("FAKE_NVML_SYNTHETIC", "8x32", 1);
  NodeAgentOptions options;
  options.nvml_library = GPUVPA_FAKE_NVML;
  options.label_by = LabelBy::kPid;
  NodeAgent agent(options);
  if (!agent.Start().ok()) {
    state.SkipWithError("start");
    return;
  }
  double t = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    if (!agent.PollOnce(t += 0.5).ok()) state.SkipWithError("poll");
    if (scrape) bytes = agent.HandleHttp("/metrics").body.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["metrics_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_AgentPassAndScrape)->ArgName("scrape")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// One scrape of that node's page (the agent writes its series straight from its table).
void BM_AgentScrape(benchmark::State& state) {
  ::setenv("FAKE_NVML_SYNTHETIC", "8x32", 1);
  NodeAgentOptions options;
  options.nvml_library = GPUVPA_FAKE_NVML;
  options.label_by = LabelBy::kPid;
  NodeAgent agent(options);
  if (!agent.Start().ok() || !agent.PollOnce(0.5).ok() || !agent.PollOnce(1.0).ok()) {
    state.SkipWithError("start");
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = agent.HandleHttp("/metrics").body.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_AgentScrape)->Unit(benchmark::kMicrosecond);

// The same node's series in a prometheus-cpp registry (what the agent published before): 0
// Collect() alone, 1 Collect and core's MetricsText (what every other daemon's /metrics
// serves), 2 Collect and prometheus-cpp's TextSerializer (the same bytes).
void BM_RegistryPage(benchmark::State& state) {
  prometheus::Registry registry;
  const char* names[] = {"gpuvpa_container_gpu_memory_used_bytes",
                         "gpuvpa_container_gpu_busy_ratio", "gpuvpa_container_gpu_sm_active_ratio",
                         "gpuvpa_container_gpu_sm_active_lower_ratio",
                         "gpuvpa_container_gpu_sm_active_upper_ratio"};
  for (const char* name : names) {
    auto& family = prometheus::BuildGauge().Name(name).Help("help").Register(registry);
    for (int gpu = 0; gpu < 8; ++gpu)
      for (int pid = 0; pid < 32; ++pid)
        family
            .Add({{"namespace", ""},
                  {"pod", ""},
                  {"container", ""},
                  {"gpu_uuid", "GPU-fa4e0000-0000-4000-8000-00000000000" + std::to_string(gpu)},
                  {"gpu_instance", ""},
                  {"method", "busy-proportional"},
                  {"pid", std::to_string(1000 + 32 * gpu + pid)}})
            .Set(0.123456 * pid);
  }
  size_t bytes = 0;
  for (auto _ : state) {
    switch (state.range(0)) {
      case 0:
        bytes = registry.Collect().size();
        break;
      case 1:
        bytes = MetricsText(registry.Collect()).size();
        break;
      default:
        bytes = prometheus::TextSerializer().Serialize(registry.Collect()).size();
        break;
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RegistryPage)->ArgName("part")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpuvpa::agent

BENCHMARK_MAIN();
