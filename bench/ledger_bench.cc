// Ledger benchmarks: durable appends (batched transactions, synchronous=FULL), showback over
// a million rows, and the cost API's allocation query over 1 and 10 million rows.
//
//   build/bin/ledger_bench
//   GPUVPA_BENCH_KEEP=/var/tmp build/bin/ledger_bench
//   --benchmark_filter='Allocation.*rows:10000000'

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "bench/ledger_rows.h"
#include "core/cost/allocation.h"
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

// The cost API's query: a ledger of N rows spread over 30 days (SampleAction's shape: 200
// namespaces, 5,000 workloads, an hour's period each), `/allocation?window=<the 30
// days>&aggregate=namespace&step=1d`: the daily totals of the 30 days and the rows that cross
// midnight read, 30 daily maps, the JSON written.
void BM_AllocationQuery30DaysByNamespace(benchmark::State& state) {
  const int64_t rows = state.range(0);
  constexpr int64_t kStart = 1793577600;
  constexpr int64_t kDays = 30;
  // GPUVPA_BENCH_KEEP=DIR keeps the filled ledger there for the next run (filling 10 million
  // rows takes minutes; profile the query alone).
  const char* keep = std::getenv("GPUVPA_BENCH_KEEP");
  const std::string path = keep != nullptr
                               ? std::string(keep) + "/allocation-" + std::to_string(rows) + ".db"
                               : TempLedgerPath("allocation");
  auto ledger = std::move(Ledger::Open(path)).value();
  std::vector<LedgerAction> batch;
  for (int64_t n = *ledger->CountRows(); n < rows; ++n) {
    LedgerAction a = SampleAction(n);
    a.time_s = kStart + n * (kDays * 86400 - 3600) / rows;
    a.period_start_s = a.time_s;
    a.period_end_s = a.time_s + 3600;
    batch.push_back(std::move(a));
    if (batch.size() == 10000 || n + 1 == rows) {
      if (!ledger->Append(batch).ok()) state.SkipWithError("fill failed");
      batch.clear();
    }
  }
  Result<AllocationRequest> request = ParseAllocationRequest(
      "window=" + std::to_string(kStart) + "," + std::to_string(kStart + kDays * 86400) +
          "&aggregate=namespace&step=1d",
      kStart + kDays * 86400);
  if (!request.ok()) state.SkipWithError("request");
  // Arg 1: 0 the whole answer; 1 the ledger's part alone (QueryShowbackSteps); 2 the same,
  // reading every row instead of the daily totals.
  const int64_t part = state.range(1);
  ShowbackQuery query = AllocationShowbackQuery(*request);
  query.use_daily_totals = part != 2;
  size_t bytes = 0;
  for (auto _ : state) {
    if (part == 0) {
      Result<std::string> body = AllocationResponse(*ledger, *request);
      if (!body.ok()) state.SkipWithError("allocation failed");
      bytes = body->size();
      benchmark::DoNotOptimize(body);
    } else {
      Result<std::vector<Showback>> steps = ledger->QueryShowbackSteps(query);
      if (!steps.ok()) state.SkipWithError("showback failed");
      benchmark::DoNotOptimize(steps);
    }
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["response_bytes"] = static_cast<double>(bytes);
  ledger.reset();
  if (keep == nullptr) RemoveLedger(path);
}
BENCHMARK(BM_AllocationQuery30DaysByNamespace)
    ->ArgNames({"rows", "part"})
    ->Args({1'000'000, 0})
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 2})
    ->Args({10'000'000, 0})
    ->Args({10'000'000, 1})
    ->Args({10'000'000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace gpuvpa

BENCHMARK_MAIN();
