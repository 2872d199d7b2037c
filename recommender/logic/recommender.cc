// Recommendation assembly.
#include "recommender/logic/recommender.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuvpa::recommender {
namespace {

constexpr double kSecondsPerHour = 3600;

std::string Hours(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f h", seconds / kSecondsPerHour);
  return buf;
}

}  // namespace

Recommender::Recommender(RecommenderOptions o) : options_(o) {
  vram_target_ = WithMinimum(
      o.min_vram_bytes,
      WithObservedFloor(WithMargin(o.safety_margin, NewPercentileEstimator(o.vram_target_percentile))));
  vram_lower_ = WithMinimum(
      o.min_vram_bytes,
      WithConfidenceMultiplier(o.lower_confidence_multiplier, o.lower_confidence_exponent,
                               WithMargin(o.safety_margin, NewPercentileEstimator(o.vram_lower_percentile))));
  vram_upper_ = WithMinimum(
      o.min_vram_bytes,
      WithObservedFloor(WithConfidenceMultiplier(
          o.upper_confidence_multiplier, o.upper_confidence_exponent,
          WithMargin(o.safety_margin, NewPercentileEstimator(o.vram_upper_percentile)))));
  vram_p10_ = NewPercentileEstimator(0.10);
  vram_p50_ = NewPercentileEstimator(0.50);
  vram_p98_ = NewPercentileEstimator(0.98);
  sm_p90_ = NewPercentileEstimator(0.90);
  sm_p99_ = NewPercentileEstimator(0.99);
}

v1::Recommendation Recommender::Recommend(const FleetStore& store, uint32_t row) const {
  const WorkloadState& st = store.state(row);
  v1::Recommendation rec;
  *rec.mutable_identity() = st.identity;

  const HistoryEvidence history{st.last_seen_s - st.first_seen_s + store.options().sample_period_s,
                                static_cast<double>(st.sample_count),
                                24 * kSecondsPerHour / store.options().sample_period_s};
  const double observed_peak =
      std::max({0.0, st.vram_window_peak_bytes, st.vram_previous_window_peak_bytes});
  const EstimatorInput vram{store.vram_bucketing(), store.vram_weights(row),
                            store.vram_total_weight(row), history, observed_peak};
  const EstimatorInput sm{store.sm_bucketing(), store.sm_weights(row), store.sm_total_weight(row),
                          history, 0};

  rec.set_history_s(history.history_s);
  rec.set_sample_count(st.sample_count);
  rec.set_confidence(history.Confidence());
  rec.set_cuda_oom_count(st.cuda_oom_count);
  rec.set_vram_observed_peak_bytes(observed_peak);
  rec.set_sm_p90_ratio(sm_p90_->Estimate(sm));
  rec.set_sm_p99_ratio(sm_p99_->Estimate(sm));
  rec.set_active_duty_ratio(st.observed_seconds > 0 ? st.active_seconds / st.observed_seconds : 0);
  // The gap still open at the last sample counts too: an idle tail is a scale-to-zero signal.
  const double open_gap_start = std::isnan(st.last_active_s) ? st.first_seen_s : st.last_active_s;
  rec.set_longest_idle_gap_s(std::max(st.longest_idle_gap_s, st.last_seen_s - open_gap_start));
  rec.set_allocated_gpu_hours(st.allocated_gpu_seconds / kSecondsPerHour);
  rec.set_used_gpu_hours_vram(st.used_vram_gpu_seconds / kSecondsPerHour);
  rec.set_used_gpu_hours_sm(st.used_sm_gpu_seconds / kSecondsPerHour);
  rec.set_idle_tax_gpu_hours_vram(rec.allocated_gpu_hours() - rec.used_gpu_hours_vram());
  rec.set_idle_tax_gpu_hours_sm(rec.allocated_gpu_hours() - rec.used_gpu_hours_sm());

  const double p98 = vram_p98_->Estimate(vram);
  const bool flat = p98 > 0 && (p98 - vram_p10_->Estimate(vram)) <= options_.pool_flat_spread_ratio * p98;
  const bool high = st.unit.vram_capacity_bytes > 0 &&
                    vram_p50_->Estimate(vram) >= options_.pool_high_vram_ratio * st.unit.vram_capacity_bytes;
  rec.set_vram_set_by_allocator(flat && high && rec.sm_p90_ratio() <= options_.pool_low_sm_p90);

  if (history.history_s < options_.min_history_s) {
    rec.set_has_target(false);
    rec.set_withheld_reason("history " + Hours(history.history_s) + " is below the minimum " +
                            Hours(options_.min_history_s));
    return rec;
  }
  const double target = vram_target_->Estimate(vram);
  rec.set_has_target(true);
  rec.set_vram_target_bytes(target);
  rec.set_vram_lower_bytes(std::min(vram_lower_->Estimate(vram), target));
  rec.set_vram_upper_bytes(std::max(vram_upper_->Estimate(vram), target));
  return rec;
}

std::vector<v1::Recommendation> Recommender::RecommendAll(const FleetStore& store) const {
  std::vector<v1::Recommendation> out;
  out.reserve(store.size());
  for (uint32_t row = 0; row < store.size(); ++row) out.push_back(Recommend(store, row));
  return out;
}

}  // namespace gpuvpa::recommender
