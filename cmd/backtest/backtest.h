// The backtest: replay the first part of a trace, plan, then check the plan against the rest.
// For each workload-container the future VRAM peak either fits what was picked or it does not
// (a miss would have been a CUDA OOM), and the plan costs some share of today's allocation.
// Several sizing strategies go through the same planner side by side:
//   gpuvpa       the recommender's VRAM target
//   max x 1.15   the largest sample of the past part plus 15 %
//   p90 x 1.15   the p90 of the hourly peaks (the recommender's decaying histogram) plus 15 %
//   oracle       the future peak itself (the cheapest plan that never misses)
#pragma once

#include <string>
#include <vector>

#include "core/cost/price_book.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/input/trace_csv.h"
#include "recommender/logic/recommender.h"
#include "updater/plan/planner.h"

namespace gpuvpa::cmd {

struct BacktestOptions {
  double split = 0.5;  // share of the trace's time span used for training
  recommender::FleetStoreOptions store;
  recommender::RecommenderOptions recommender;
  recommender::TraceReplayOptions replay;
  CostCenterRules cost_centers;
};

inline constexpr int kBacktestStrategies = 4;
std::string_view BacktestStrategyName(int strategy);

struct StrategyOutcome {
  double vram_target_bytes = 0;
  std::string to_allocation;
  std::string to_model;
  double capacity_bytes = 0;  // what the pick holds
  bool miss = false;          // future peak above capacity: an OOM
  bool target_miss = false;   // future peak above the target itself
  MicroUsd monthly_after = 0;
};

struct WorkloadBacktest {
  v1::WorkloadIdentity identity;
  double history_peak_bytes = 0;  // of the training part
  double future_peak_bytes = 0;
  double device_memory_bytes = 0;  // of the current allocation (its VRAM limit)
  MicroUsd monthly_before = 0;
  StrategyOutcome outcomes[kBacktestStrategies];
};

struct StrategySummary {
  std::string name;
  size_t misses = 0;         // picks the future peak overflowed
  size_t target_misses = 0;  // targets the future peak passed
  MicroUsd monthly_after = 0;
  double cost_ratio = 0;           // monthly after / monthly before (today's allocation)
  double mean_target_share = 0;    // mean of target / the device's memory
  double mean_target_to_peak = 0;  // mean of target / the training part's peak
};

struct BacktestResult {
  double first_time_s = 0;
  double split_time_s = 0;
  double last_time_s = 0;
  size_t workloads_trained = 0;  // with a recommendation target after the training part
  size_t workloads_skipped = 0;  // no target, no price, or no sample in the future part
  MicroUsd monthly_before = 0;
  std::vector<WorkloadBacktest> workloads;  // evaluated ones
  StrategySummary strategies[kBacktestStrategies];
};

Result<BacktestResult> RunBacktest(const std::string& trace_path, const GpuCatalog& catalog,
                                   const PriceBook& prices, const std::string& region,
                                   const updater::UpdaterPolicy& policy,
                                   const BacktestOptions& options);

// The comparison table (plain text), and the same as an HTML page with bars.
std::string FormatBacktestTable(const BacktestResult& result);
std::string RenderBacktestHtml(const BacktestResult& result, const std::string& trace_path);

}  // namespace gpuvpa::cmd
