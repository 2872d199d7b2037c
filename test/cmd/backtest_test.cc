// The backtest against an independent computation on a generated trace: for the simple rules
// (max x 1.15) and the oracle, the pick is derived here from DESIGN.md's H100 MIG table (usable
// MiB and binding slice fractions), not from the planner.
#include "cmd/backtest/backtest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "test/support/temp_dir.h"

namespace gpuvpa::cmd {
namespace {

using updater::UpdaterPolicy;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;
constexpr double kStart = 1'780'000'000;  // 2026-05-28
constexpr double kPeriod = 300;
constexpr double kDays = 4;

struct Shape {
  const char* name;
  double past_gib;          // steady level before the split
  double past_spike_gib;    // one sample at this level before the split (0: none)
  double future_gib;        // steady level after the split
  double future_spike_gib;  // one sample at this level after the split (0: none)
};

constexpr Shape kShapes[] = {
    {"steady", 10, 0, 10, 11},  // a small rise: fits max x 1.15
    {"grows", 10, 0, 10, 25},   // a spike far above the past: the simple rule misses
    {"spiky", 30, 35, 30, 36},  // the past spike predicts the future one
    {"small", 5, 0, 5, 0},      // fits the smallest profile
    {"large", 45, 50, 45, 52},  // needs the whole GPU
};

// DESIGN.md, "GPU catalog": H100-80GB = A100-80GB layout; usable memory in MiB; price by the
// binding slice fraction max(memory slices / 8, compute slices / 7). SM need here is 1 slice.
struct Pick {
  double usable_bytes;
  double fraction;
};
Pick CheapestH100Pick(double target_bytes) {
  const Pick table[] = {{9856 * kMiB, 1.0 / 7},
                        {19968 * kMiB, 2.0 / 8},
                        {19968 * kMiB, 2.0 / 7},
                        {40192 * kMiB, 4.0 / 8},
                        {40192 * kMiB, 4.0 / 7}};
  Pick best{80 * kGiB, 1.0};  // the whole GPU it has today
  for (const Pick& p : table)
    if (p.usable_bytes >= target_bytes && p.fraction < best.fraction) best = p;
  return best;
}

void WriteTrace(const std::string& path) {
  std::ofstream out(path);
  out << "timestamp,namespace,workload_kind,workload_name,container,pod,device,gpu_model,"
         "allocation,vram_bytes,sm_active\n";
  const double split = kStart + 0.5 * (kDays * 86400 - kPeriod);
  const int samples = static_cast<int>(kDays * 86400 / kPeriod);
  for (int i = 0; i < samples; ++i) {
    const double t = kStart + i * kPeriod;
    for (const Shape& s : kShapes) {
      const bool future = t >= split;
      double gib = future ? s.future_gib : s.past_gib;
      // One spike sample in each part, a day before / after the split.
      if (!future && s.past_spike_gib > 0 && i == samples / 4) gib = s.past_spike_gib;
      if (future && s.future_spike_gib > 0 && i == 3 * samples / 4) gib = s.future_spike_gib;
      char line[512];
      std::snprintf(line, sizeof line,
                    "%.0f,ml,Deployment,%s,main,%s-0,0,H100-80GB,nvidia.com/gpu=1,%.0f,0.1\n", t,
                    s.name, s.name, gib * kGiB);
      out << line;
    }
  }
}

TEST(BacktestTest, SimpleRuleAndOracleMatchAnIndependentComputation) {
  testing::ScopedTempDir dir;
  const std::string trace = dir.Path("trace.csv");
  WriteTrace(trace);
  BacktestOptions options;
  options.store.sample_period_s = kPeriod;
  options.replay.now_s = kStart + 30 * 86400;
  const PriceBook prices = PriceBook::BuiltInDefaults();
  Result<BacktestResult> result =
      RunBacktest(trace, GpuCatalog::BuiltIn(), prices, "", UpdaterPolicy{}, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->workloads.size(), std::size(kShapes));

  const double usd_per_hour = *prices.GpuHourPrice("H100-80GB");
  for (int strategy : {1, 3}) {
    size_t misses = 0;
    MicroUsd before = 0, after = 0;
    for (const Shape& s : kShapes) {
      const double past_max = std::max(s.past_gib, s.past_spike_gib) * kGiB;
      const double future_max = std::max(s.future_gib, s.future_spike_gib) * kGiB;
      const double target = strategy == 1 ? past_max * 1.15 : future_max;
      const Pick pick = CheapestH100Pick(target);
      misses += future_max > pick.usable_bytes;
      before += *UsdToMicro(usd_per_hour * 730);
      after += *UsdToMicro(usd_per_hour * pick.fraction * 730);
      // The same workload in the result.
      for (const WorkloadBacktest& w : result->workloads) {
        if (w.identity.owner_name() != s.name) continue;
        SCOPED_TRACE(std::string(s.name) + " strategy " + std::to_string(strategy));
        EXPECT_NEAR(w.history_peak_bytes, past_max, 1);
        EXPECT_NEAR(w.future_peak_bytes, future_max, 1);
        EXPECT_NEAR(w.outcomes[strategy].vram_target_bytes, target, 1);
        EXPECT_NEAR(w.outcomes[strategy].capacity_bytes, pick.usable_bytes, 1);
      }
    }
    const StrategySummary& sum = result->strategies[strategy];
    EXPECT_EQ(sum.misses, misses) << sum.name;
    EXPECT_EQ(result->monthly_before, before);
    EXPECT_EQ(sum.monthly_after, after) << sum.name;
    EXPECT_NEAR(sum.cost_ratio, static_cast<double>(after) / static_cast<double>(before), 1e-12);
  }
  // The trace was built so that the simple rule misses exactly the workload that grew.
  EXPECT_EQ(result->strategies[1].misses, 1u);
  EXPECT_EQ(result->strategies[3].misses, 0u);
  // gpuvpa's picks always hold its own targets.
  for (const WorkloadBacktest& w : result->workloads)
    EXPECT_GE(w.outcomes[0].capacity_bytes, w.outcomes[0].vram_target_bytes);
  const std::string table = FormatBacktestTable(*result);
  EXPECT_NE(table.find("oracle"), std::string::npos);
  EXPECT_NE(RenderBacktestHtml(*result, trace).find("<svg"), std::string::npos);
}

TEST(BacktestTest, RefusesASplitOutsideTheTraceAndAnEmptyTrace) {
  testing::ScopedTempDir dir;
  const std::string trace = dir.Path("empty.csv");
  std::ofstream(trace) << "timestamp,namespace,workload_kind,workload_name,container,pod,"
                          "gpu_model,allocation,vram_bytes,sm_active\n";
  BacktestOptions options;
  const PriceBook prices = PriceBook::BuiltInDefaults();
  Result<BacktestResult> r =
      RunBacktest(trace, GpuCatalog::BuiltIn(), prices, "", UpdaterPolicy{}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no valid row"), std::string::npos);
  options.split = 1.5;
  r = RunBacktest(trace, GpuCatalog::BuiltIn(), prices, "", UpdaterPolicy{}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--split"), std::string::npos);
}

}  // namespace
}  // namespace gpuvpa::cmd
