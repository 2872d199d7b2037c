// The node agent's cost on a node: one NVML pass over 8 GPUs x 32 processes (the fake
// libnvidia-ml.so.1's synthetic node; what the fake itself spends is inside the figure, so the
// agent's own share is below it), and the same pass with its series published and /metrics
// written, as a scrape every interval costs. CPU time per pass is the figure to read.
#include <benchmark/benchmark.h>

#include <cstdlib>

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

}  // namespace
}  // namespace gpuvpa::agent

BENCHMARK_MAIN();
