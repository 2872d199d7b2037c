// Recommender benchmarks: histogram ingest, trace replay, whole-fleet recommendation pass, and
// memory per workload-container.
//
//   build/bin/recommender_bench                       # everything
//   build/bin/recommender_bench --benchmark_filter=Memory   # RSS per workload, in a fresh process
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "recommender/logic/recommender.h"
#include "recommender/model/fleet_store.h"
#include "recommender/model/histogram.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kStart = 1793577600;
constexpr double kGiB = 1024.0 * 1024 * 1024;

std::vector<double> RandomValues(size_t n, bool linear) {
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> vram(std::log(8 * kGiB), 0.8);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> v(n);
  for (double& x : v) x = linear ? unit(rng) : vram(rng);
  return v;
}

// One DecayingHistogram, one sample a second: bucket lookup + decay factor + add.
void BM_HistogramAddSample(benchmark::State& state) {
  const bool linear = state.range(0) == 1;
  const Bucketing layout =
      linear ? Bucketing::Linear(1.0, 0.01) : Bucketing::Exponential(1e12, 1e7, 1.05);
  DecayingHistogram h(layout, 86400);
  const std::vector<double> values = RandomValues(1 << 16, linear);
  double t = kStart;
  size_t i = 0;
  for (auto _ : state) {
    h.AddSample(values[i], 1.0, t);
    i = (i + 1) & (values.size() - 1);
    t += 1;
  }
  benchmark::DoNotOptimize(h.total_weight());
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(linear ? "SM linear buckets" : "VRAM exponential buckets");
}
BENCHMARK(BM_HistogramAddSample)->Arg(0)->Arg(1);

// Tracks `n` workload-containers on whole H100s.
void TrackFleet(FleetStore& store, uint32_t n) {
  const GpuModel& model = **GpuCatalog::BuiltIn().FindModel("H100-80GB");
  const AllocationUnit unit =
      *ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/gpu=1"), model);
  store.Reserve(n);
  for (uint32_t w = 0; w < n; ++w) {
    v1::WorkloadIdentity id;
    id.set_namespace_name("ns");
    id.set_owner_kind("Deployment");
    id.set_owner_name("w" + std::to_string(w));
    id.set_container("c");
    store.Track(id, unit);
  }
}

// The store's full per-sample path (SM histogram, VRAM window peak, accounting) over 10,000
// workloads sampled at the same scrape timestamps.
void BM_FleetStoreAddSample(benchmark::State& state) {
  FleetStore store;
  constexpr uint32_t kWorkloads = 10000;
  TrackFleet(store, kWorkloads);
  const std::vector<double> vram = RandomValues(1 << 16, false);
  const std::vector<double> sm = RandomValues(1 << 16, true);
  uint32_t w = 0;
  size_t i = 0;
  double t = kStart;
  for (auto _ : state) {
    store.AddSample(w, {t, vram[i], sm[i], false});
    i = (i + 1) & 0xFFFF;
    if (++w == kWorkloads) {
      w = 0;
      t += 60;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FleetStoreAddSample);

// The same path at fleet scale in the two orders samples arrive in: a trace interleaves rows
// of every workload at each timestamp (arg 1 = 0); Prometheus returns one series at a time, a
// day of samples each (arg 1 = 1). Arg 0: workloads.
void BM_FleetStoreAddSampleOrder(benchmark::State& state) {
  FleetStore store;
  const auto workloads = static_cast<uint32_t>(state.range(0));
  const bool grouped = state.range(1) == 1;
  TrackFleet(store, workloads);
  const std::vector<double> vram = RandomValues(1 << 16, false);
  const std::vector<double> sm = RandomValues(1 << 16, true);
  constexpr uint32_t kSamplesPerSeries = 1440;
  uint32_t w = 0, k = 0;
  size_t i = 0;
  double day = 0;
  for (auto _ : state) {
    store.AddSample(w, {kStart + day + 60.0 * k, vram[i], sm[i], false});
    i = (i + 1) & 0xFFFF;
    if (grouped) {
      if (++k == kSamplesPerSeries) {
        k = 0;
        if (++w == workloads) w = 0, day += 86400;
      }
    } else if (++w == workloads) {
      w = 0;
      if (++k == kSamplesPerSeries) k = 0, day += 86400;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FleetStoreAddSampleOrder)->Args({100000, 0})->Args({100000, 1})->MinTime(2);

// End to end: mmap the CSV, parse, resolve identities, ingest. 30 days of the demo fleet.
// One percentile query on a filled VRAM histogram (176 buckets, a week of lognormal hourly
// peaks): what the daemon's Get answers, and what VPA's histogram.Percentile does.
void BM_SinglePercentile(benchmark::State& state) {
  const Bucketing layout = Bucketing::Exponential(1e12, 1e7, 1.05);
  DecayingHistogram h(layout, 86400);
  const std::vector<double> values = RandomValues(7 * 24, false);
  for (size_t i = 0; i < values.size(); ++i) h.AddSample(values[i], 1, kStart + 3600.0 * i);
  double p = 0.98;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    benchmark::DoNotOptimize(h.Percentile(p));
  }
}
BENCHMARK(BM_SinglePercentile);

void BM_TraceReplay(benchmark::State& state) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gpuvpa-bench-trace-" + std::to_string(::getpid()) + ".csv"))
                               .string();
  DemoFleetOptions options;
  options.days = 30;
  if (!WriteDemoFleetTrace(options, path).ok()) {
    state.SkipWithError("cannot write the trace");
    return;
  }
  size_t rows = 0;
  for (auto _ : state) {
    FleetStore store;
    TraceReplayer replayer(store, GpuCatalog::BuiltIn());
    Result<TraceReplayReport> report = replayer.ReplayFile(path);
    if (!report.ok() || report->malformed != 0) {
      state.SkipWithError("replay failed");
      break;
    }
    rows = report->accepted;
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_TraceReplay)->Unit(benchmark::kMillisecond);

// Trace replay at fleet scale: `n` workloads, rows interleaved by time as an exporter writes
// them (every workload at each timestamp, in the same order), about 1.2 M rows whatever `n`.
// Items are rows; the goal is >= 5 M rows/s at 10,000 and >= 3 M at 100,000.
void BM_TraceReplayFleet(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const uint32_t timestamps = std::max<uint32_t>(2, 1'200'000 / n);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> gib(1, 60), sm(0, 1);
  std::string csv =
      "timestamp,namespace,workload_kind,workload_name,container,pod,device,"
      "gpu_model,allocation,vram_bytes,sm_active\n";
  char line[256];
  for (uint32_t t = 0; t < timestamps; ++t)
    for (uint32_t w = 0; w < n; ++w) {
      std::snprintf(line, sizeof line,
                    "%.0f,team-%u,Deployment,server-%u,main,server-%u-7f9c,0,H100-80GB,"
                    "nvidia.com/gpu=1,%.0f,%.3f\n",
                    kStart + 60.0 * t, w % 50, w, w, gib(rng) * 1073741824.0, sm(rng));
      csv += line;
    }
  size_t rows = 0;
  for (auto _ : state) {
    FleetStore store;
    store.Reserve(n);
    TraceReplayOptions options;
    options.now_s = kStart + 60.0 * timestamps;
    TraceReplayer replayer(store, GpuCatalog::BuiltIn(), {}, options);
    Result<TraceReplayReport> report = replayer.ReplayText(csv);
    if (!report.ok() || report->malformed != 0) {
      state.SkipWithError("replay failed");
      break;
    }
    rows = report->accepted;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_TraceReplayFleet)->Arg(700)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// A fleet of `n` workload-containers with a day of hourly VRAM peaks and SM samples each.
FleetStore SyntheticFleet(uint32_t n) {
  FleetStore store;
  store.Reserve(n);
  const GpuModel& model = **GpuCatalog::BuiltIn().FindModel("A100-80GB");
  const AllocationUnit unit =
      *ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/gpu=1"), model);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> vram(std::log(8 * kGiB), 0.8);
  std::uniform_real_distribution<double> unit_dist(0, 1);
  for (uint32_t w = 0; w < n; ++w) {
    v1::WorkloadIdentity id;
    id.set_namespace_name("team-" + std::to_string(w % 500));
    id.set_owner_kind("Deployment");
    id.set_owner_name("workload-" + std::to_string(w));
    id.set_container("main");
    id.set_gpu_model(model.name);
    id.set_allocation("nvidia.com/gpu=1");
    id.set_cost_center("cc-" + std::to_string(w % 40));
    const uint32_t row = store.Track(id, unit);
    for (int h = 0; h < 48; ++h)
      store.AddSample(row, {kStart + h * 1800.0, vram(rng), unit_dist(rng), false});
  }
  return store;
}

void BM_RecommendAll(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const FleetStore store = SyntheticFleet(n);
  RecommenderOptions options;
  options.min_history_s = 0;  // every workload gets the full computation
  const Recommender recommender(options);
  for (auto _ : state) {
    std::vector<Recommendation> recs = recommender.RecommendAll(store);
    benchmark::DoNotOptimize(recs.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RecommendAll)->Arg(100000)->Unit(benchmark::kMillisecond);

// The owner-report charts of every workload (what the daemon adds to each poll's snapshot
// while a reader wants them), and their wire size.
void BM_ChartsOfFleet(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const FleetStore store = SyntheticFleet(n);
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (uint32_t row = 0; row < n; ++row) bytes += ChartsOf(store, row).ByteSizeLong();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["wire_bytes_per_workload"] = static_cast<double>(bytes) / n;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ChartsOfFleet)->Arg(100000)->Unit(benchmark::kMillisecond);

long ResidentBytes() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * ::sysconf(_SC_PAGESIZE);
}

// RSS growth per workload-container while a 100,000-workload store is built (run it alone:
// memory freed by earlier benchmarks would be reused and hide growth).
void BM_MemoryPerWorkload(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  double per_workload = 0;
  for (auto _ : state) {
    const long before = ResidentBytes();
    FleetStore store = SyntheticFleet(n);
    per_workload = static_cast<double>(ResidentBytes() - before) / n;
    benchmark::DoNotOptimize(store.size());
  }
  state.counters["rss_bytes_per_workload"] = per_workload;
}
BENCHMARK(BM_MemoryPerWorkload)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuvpa::recommender

BENCHMARK_MAIN();
