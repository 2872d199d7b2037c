// The backtest: three replays of the trace (its span, the past part, the future part), one
// planner, four sizing strategies.
#include "cmd/backtest/backtest.h"

#include <algorithm>

#include "recommender/model/histogram.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::cmd {

// The planner and its policy are the updater's; the backtest runs them on replayed history.
using namespace updater;  // NOLINT(build/namespaces)

namespace {

using recommender::FleetStore;

constexpr double kSimpleRuleMargin = 0.15;

Result<recommender::TraceReplayReport> Replay(const std::string& path, FleetStore& store,
                                              const GpuCatalog& catalog,
                                              const BacktestOptions& options, double from_s,
                                              double until_s) {
  recommender::TraceReplayOptions replay = options.replay;
  replay.window_from_s = from_s;
  replay.window_until_s = until_s;
  recommender::TraceReplayer replayer(store, catalog, options.cost_centers, replay);
  return replayer.ReplayFile(path);
}

// The p90 of the hourly VRAM peaks, as the decaying histogram holds them.
double HourlyPeakP90(const FleetStore& store, uint32_t row) {
  return recommender::PercentileValue(store.vram_bucketing(), store.vram_weights(row),
                                      store.vram_total_weight(row), 0.9);
}

// The planner as the backtest uses it: sizing only (no scale-to-zero), every namespace
// planned, any saving taken.
UpdaterPolicy SizingPolicy(UpdaterPolicy policy) {
  policy.default_mode = UpdateMode::kReport;
  policy.namespace_modes.clear();
  policy.workload_annotations.clear();
  policy.min_change_ratio = 0;
  policy.scale_to_zero.max_active_duty = -1;
  return policy;
}

}  // namespace

std::string_view BacktestStrategyName(int strategy) {
  static constexpr std::string_view kNames[kBacktestStrategies] = {
      "gpuvpa", "max x 1.15", "p90 hourly peaks x 1.15", "oracle (future peak)"};
  return kNames[strategy];
}

Result<BacktestResult> RunBacktest(const std::string& trace_path, const GpuCatalog& catalog,
                                   const PriceBook& prices, const std::string& region,
                                   const UpdaterPolicy& policy, const BacktestOptions& options) {
  if (!(options.split > 0 && options.split < 1))
    return InvalidArgumentError("--split " + std::to_string(options.split) +
                                " is not between 0 and 1");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  BacktestResult result;
  {
    FleetStore span_store(options.store);
    Result<recommender::TraceReplayReport> all =
        Replay(trace_path, span_store, catalog, options, -kInf, kInf);
    if (!all.ok()) return all.status();
    if (all->accepted == 0)
      return InvalidArgumentError("trace " + trace_path + " has no valid row");
    result.first_time_s = all->first_time_s;
    result.last_time_s = all->last_time_s;
  }
  result.split_time_s =
      result.first_time_s + options.split * (result.last_time_s - result.first_time_s);
  FleetStore past(options.store);
  FleetStore future(options.store);
  for (auto [store, from, until] : {std::tuple{&past, -kInf, result.split_time_s},
                                    std::tuple{&future, result.split_time_s, kInf}}) {
    Result<recommender::TraceReplayReport> r =
        Replay(trace_path, *store, catalog, options, from, until);
    if (!r.ok()) return r.status();
  }

  const recommender::Recommender recommender(options.recommender);
  const Planner planner(catalog, prices, region, SizingPolicy(policy));
  for (uint32_t row = 0; row < past.size(); ++row) {
    const recommender::Recommendation rec = recommender.Recommend(past, row);
    const v1::Recommendation wire = recommender::PricedRecommendation(rec, past, &prices, region);
    const std::optional<uint32_t> future_row = future.Find(WorkloadKeyOf(past.state(row).identity));
    if (!rec.has_target || !future_row || future.state(*future_row).sample_count == 0) {
      ++result.workloads_skipped;
      continue;
    }
    WorkloadBacktest w;
    w.identity = wire.identity();
    w.history_peak_bytes = rec.vram_history_peak_bytes;
    w.future_peak_bytes = future.state(*future_row).vram_history_peak_bytes;
    w.device_memory_bytes = rec.vram_limit_bytes;
    const double limit = rec.vram_limit_bytes > 0 ? rec.vram_limit_bytes : HUGE_VAL;
    const double targets[kBacktestStrategies] = {
        rec.vram_target_bytes,
        std::min(limit, rec.vram_history_peak_bytes * (1 + kSimpleRuleMargin)),
        std::min(limit, HourlyPeakP90(past, row) * (1 + kSimpleRuleMargin)),
        std::min(limit, w.future_peak_bytes)};
    bool priced = true;
    for (int s = 0; s < kBacktestStrategies && priced; ++s) {
      v1::Recommendation sized = wire;
      sized.set_vram_target_bytes(targets[s]);
      sized.set_vram_lower_bytes(targets[s]);
      sized.set_vram_upper_bytes(targets[s]);
      sized.set_needs_larger_gpu(targets[s] > limit);
      const PlannedAction a = planner.Plan(sized);
      priced = a.priced;
      w.monthly_before = a.monthly_before;
      StrategyOutcome& o = w.outcomes[s];
      o.vram_target_bytes = targets[s];
      o.to_allocation = a.to_allocation;
      o.to_model = a.to_model;
      o.capacity_bytes = a.to_vram_capacity_bytes;
      o.miss = w.future_peak_bytes > o.capacity_bytes;
      o.target_miss = w.future_peak_bytes > targets[s];
      o.monthly_after = a.monthly_after;
    }
    if (!priced) {
      ++result.workloads_skipped;
      continue;
    }
    result.workloads.push_back(std::move(w));
  }
  result.workloads_trained = result.workloads.size();

  for (const WorkloadBacktest& w : result.workloads)
    if (Status s = CheckedAdd(result.monthly_before, w.monthly_before, "monthly cost"); !s.ok())
      return s;
  for (int s = 0; s < kBacktestStrategies; ++s) {
    StrategySummary& sum = result.strategies[s];
    sum.name = std::string(BacktestStrategyName(s));
    double share = 0, to_peak = 0;
    for (const WorkloadBacktest& w : result.workloads) {
      const StrategyOutcome& o = w.outcomes[s];
      sum.misses += o.miss;
      sum.target_misses += o.target_miss;
      if (Status st = CheckedAdd(sum.monthly_after, o.monthly_after, "monthly cost"); !st.ok())
        return st;
      share += w.device_memory_bytes > 0 ? o.vram_target_bytes / w.device_memory_bytes : 0;
      to_peak += w.history_peak_bytes > 0 ? o.vram_target_bytes / w.history_peak_bytes : 0;
    }
    const double n = static_cast<double>(std::max<size_t>(1, result.workloads.size()));
    sum.mean_target_share = share / n;
    sum.mean_target_to_peak = to_peak / n;
    sum.cost_ratio = result.monthly_before > 0 ? static_cast<double>(sum.monthly_after) /
                                                     static_cast<double>(result.monthly_before)
                                               : 0;
  }
  return result;
}

}  // namespace gpuvpa::cmd
