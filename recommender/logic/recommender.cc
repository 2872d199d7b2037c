// Recommendation assembly.
#include "recommender/logic/recommender.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace gpuvpa::recommender {
namespace {
constexpr double kSecondsPerHour = 3600;
}  // namespace

Recommender::PodDevices Recommender::MostDevicesPerPod(const WorkloadState& st) const {
  std::unordered_map<std::string_view, PodDevices> per_pod;
  PodDevices most;
  for (const DeviceCursor& c : st.devices) {
    PodDevices& pod = per_pod[c.pod];
    most.devices = std::max(most.devices, ++pod.devices);
    if (c.Busy(options_.busy_device_min_active_share, options_.busy_device_min_vram_bytes))
      most.busy = std::max(most.busy, ++pod.busy);
  }
  return most;
}

Recommender::Recommender(RecommenderOptions o) : options_(o) {
  // The target: the tight p98 (never above the largest peak held) plus a margin that grows with
  // the peaks' variation, never below the latest windows' peak.
  vram_target_ = WithMinimum(
      o.min_vram_bytes,
      WithObservedFloor(WithVariationMargin(
          o.target_margin_min, o.target_margin_gain, o.target_margin_max,
          NewTightPercentileEstimator(o.vram_target_percentile), NewPercentileEstimator(0.5),
          NewTightPercentileEstimator(o.vram_target_percentile))));
  vram_lower_ = WithMinimum(
      o.min_vram_bytes,
      WithConfidenceMultiplier(
          o.lower_confidence_multiplier, o.lower_confidence_exponent,
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

Recommendation Recommender::Recommend(const FleetStore& store, uint32_t row) const {
  Scratch scratch;
  return Recommend(store, row, scratch);
}

Recommendation Recommender::Recommend(const FleetStore& store, uint32_t row,
                                      Scratch& scratch) const {
  const WorkloadState& st = store.state(row);
  Recommendation rec;
  rec.row = row;
  rec.min_history_s = options_.min_history_s;

  const HistoryEvidence history{st.last_seen_s - st.first_seen_s + store.options().sample_period_s,
                                static_cast<double>(st.sample_count),
                                24 * kSecondsPerHour / store.options().sample_period_s};
  const double observed_peak =
      std::max({0.0, st.vram_window_peak_bytes, st.vram_previous_window_peak_bytes});
  scratch.vram_cumulative.resize(store.vram_weights(row).size());
  scratch.sm_cumulative.resize(store.sm_weights(row).size());
  CumulativeWeights(store.vram_weights(row), scratch.vram_cumulative);
  CumulativeWeights(store.sm_weights(row), scratch.sm_cumulative);
  // The raw largest sample bounds every percentile, unless a CUDA OOM put a bumped peak (above
  // any sample) into the histogram.
  const double exact_max = st.cuda_oom_count == 0 ? st.vram_history_peak_bytes : 0;
  const EstimatorInput vram{store.vram_bucketing(),
                            scratch.vram_cumulative,
                            store.vram_total_weight(row),
                            history,
                            observed_peak,
                            exact_max};
  const EstimatorInput sm{
      store.sm_bucketing(), scratch.sm_cumulative, store.sm_total_weight(row), history, 0, 0};

  rec.history_s = history.history_s;
  rec.sample_count = st.sample_count;
  rec.confidence = history.Confidence();
  rec.cuda_oom_count = st.cuda_oom_count;
  rec.shared_device_estimate = st.shared_device_estimate;
  rec.per_process_usage = st.per_process_usage;
  rec.sm_basis = st.sm_basis;
  // No number above what the allocation can physically hold: a workload that needs more is
  // flagged (needs_larger_gpu) instead. A unit without a limit (0) bounds nothing.
  const double limit = st.unit.vram_limit_bytes > 0 ? st.unit.vram_limit_bytes : HUGE_VAL;
  rec.vram_observed_peak_bytes = std::min(observed_peak, limit);
  rec.vram_history_peak_bytes = st.vram_history_peak_bytes;
  rec.vram_limit_bytes = st.unit.vram_limit_bytes;
  rec.sm_p90_ratio = sm_p90_->Estimate(sm);
  rec.sm_p99_ratio = sm_p99_->Estimate(sm);
  rec.active_duty_ratio = st.observed_seconds > 0 ? st.active_seconds / st.observed_seconds : 0;
  // The gap still open at the last sample counts too: an idle tail is a scale-to-zero signal.
  const double open_gap_start = std::isnan(st.last_active_s) ? st.first_seen_s : st.last_active_s;
  rec.longest_idle_gap_s = std::max(st.longest_idle_gap_s, st.last_seen_s - open_gap_start);
  rec.allocated_gpu_hours = st.allocated_gpu_seconds / kSecondsPerHour;
  rec.used_gpu_hours_vram = st.used_vram_gpu_seconds / kSecondsPerHour;
  rec.used_gpu_hours_sm = st.used_sm_gpu_seconds / kSecondsPerHour;
  rec.idle_tax_gpu_hours_vram = rec.allocated_gpu_hours - rec.used_gpu_hours_vram;
  rec.idle_tax_gpu_hours_sm = rec.allocated_gpu_hours - rec.used_gpu_hours_sm;
  const PodDevices pods = MostDevicesPerPod(st);
  rec.busy_devices = pods.busy;
  // Each pod adds `count` series of `device_fraction` each per sample period.
  const double pod_gpu_seconds = st.unit.device_fraction *
                                 static_cast<double>(std::max<size_t>(1, pods.devices)) *
                                 history.history_s;
  rec.average_pods = pod_gpu_seconds > 0 ? st.allocated_gpu_seconds / pod_gpu_seconds : 0;
  const HourlyActivity activity = st.Activity();
  const int observed_hours = activity.ObservedHours();
  rec.idle_hours_ratio =
      observed_hours > 0 ? static_cast<double>(activity.IdleHours()) / observed_hours : 0;

  const double p98 = vram_p98_->Estimate(vram);
  // Percentiles return a bucket's end, which may pass the device's memory; only a p98 whose
  // bucket starts above it means the workload does not fit.
  rec.needs_larger_gpu = std::min(p98 / store.options().vram_bucket_ratio, p98) > limit;
  const bool flat =
      p98 > 0 && (p98 - vram_p10_->Estimate(vram)) <= options_.pool_flat_spread_ratio * p98;
  const bool high =
      st.unit.vram_capacity_bytes > 0 &&
      vram_p50_->Estimate(vram) >= options_.pool_high_vram_ratio * st.unit.vram_capacity_bytes;
  rec.vram_set_by_allocator = flat && high && rec.sm_p90_ratio <= options_.pool_low_sm_p90;

  if (history.history_s < options_.min_history_s) return rec;  // evidence only
  rec.has_target = true;
  rec.vram_target_bytes = std::min(vram_target_->Estimate(vram), limit);
  rec.vram_lower_bytes = std::min(vram_lower_->Estimate(vram), rec.vram_target_bytes);
  rec.vram_upper_bytes =
      std::min(std::max(vram_upper_->Estimate(vram), rec.vram_target_bytes), limit);
  return rec;
}

std::vector<Recommendation> Recommender::RecommendAll(const FleetStore& store) const {
  std::vector<Recommendation> out;
  out.reserve(store.size());
  Scratch scratch;
  for (uint32_t row = 0; row < store.size(); ++row) out.push_back(Recommend(store, row, scratch));
  return out;
}

}  // namespace gpuvpa::recommender
