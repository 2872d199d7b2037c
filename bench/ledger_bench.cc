// Ledger benchmarks: durable appends (batched transactions, synchronous=FULL) and showback over
// a million rows.
//
//   build/bin/ledger_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "bench/ledger_rows.h"
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

using bench::SampleAction;

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
