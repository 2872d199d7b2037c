// Ledger benchmarks: durable appends (batched transactions, synchronous=FULL) and showback over
// a million rows.
//
//   build/bin/ledger_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "core/cost/ledger.h"

namespace gpuvpa {
namespace {

std::string TempLedgerPath(const char* name) {
  const auto path =
      std::filesystem::temp_directory_path() /
      ("gpuvpa-bench-" + std::string(name) + "-" + std::to_string(::getpid()) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  return path.string();
}

void RemoveLedger(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

LedgerAction SampleAction(int64_t n) {
  LedgerAction a;
  a.action_id = "bench-" + std::to_string(n);
  a.time_s = 1793577600 + n;
  a.kind = n % 3 == 0 ? ActionKind::kMeteredPeriod : ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "team-" + std::to_string(n % 200);
  a.workload = "workload-" + std::to_string(n % 5000);
  a.cost_center = "cc-" + std::to_string(n % 40);
  a.gpu_model = n % 2 ? "H100-80GB" : "A100-80GB";
  a.before = a.after = "nvidia.com/gpu=1";
  a.allocated_gpu_time = 3'600'000;
  a.allocated = 6'880'000;
  a.used_vram = 2'000'000;
  a.used_sm = 1'000'000;
  a.metered = n % 3 == 0 ? 500'000 : 0;
  a.reserved = n % 3 == 0 ? 6'880'000 : 0;
  a.evidence_json = R"({"p90_sm":0.31,"history_days":7})";
  return a;
}

void BM_LedgerAppend(benchmark::State& state) {
  const auto batch_size = static_cast<size_t>(state.range(0));
  const std::string path = TempLedgerPath("append");
  auto ledger = std::move(Ledger::Open(path)).value();
  int64_t n = 0;
  std::vector<LedgerAction> batch(batch_size);
  for (auto _ : state) {
    state.PauseTiming();
    for (LedgerAction& a : batch) a = SampleAction(n++);
    state.ResumeTiming();
    if (!ledger->Append(batch).ok()) state.SkipWithError("append failed");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch_size));
  ledger.reset();
  RemoveLedger(path);
}
BENCHMARK(BM_LedgerAppend)->Arg(1)->Arg(100)->Arg(1000)->UseRealTime();

void BM_ShowbackOverAMillionRows(benchmark::State& state) {
  constexpr int64_t kRows = 1'000'000;
  const std::string path = TempLedgerPath("showback");
  auto ledger = std::move(Ledger::Open(path)).value();
  std::vector<LedgerAction> batch;
  for (int64_t n = 0; n < kRows; ++n) {
    batch.push_back(SampleAction(n));
    if (batch.size() == 10000) {
      if (!ledger->Append(batch).ok()) state.SkipWithError("fill failed");
      batch.clear();
    }
  }
  for (auto _ : state) {
    Result<Showback> s = ledger->QueryShowback({});
    if (!s.ok()) state.SkipWithError("showback failed");
    benchmark::DoNotOptimize(s);
  }
  state.counters["rows"] = static_cast<double>(kRows);
  ledger.reset();
  RemoveLedger(path);
}
BENCHMARK(BM_ShowbackOverAMillionRows)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace gpuvpa

BENCHMARK_MAIN();
