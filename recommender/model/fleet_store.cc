// Fleet store: dense rows, decay shifts over the whole fleet with Eigen, peak-per-window VRAM.
#include "recommender/model/fleet_store.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "core/workload_key.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kCudaOomMinBumpBytes = 100.0 * 1024 * 1024;  // VPA: +100 MiB
constexpr double kCudaOomBumpRatio = 1.2;                     // VPA: x1.2

void ScaleAll(std::vector<double>& v, double scale) {
  Eigen::Map<Eigen::ArrayXd>(v.data(), static_cast<Eigen::Index>(v.size())) *= scale;
}

}  // namespace

double VramAfterCudaOom(double used_bytes) {
  return std::max(used_bytes + kCudaOomMinBumpBytes, used_bytes * kCudaOomBumpRatio);
}

std::string KeyOf(const v1::WorkloadIdentity& identity) {
  std::string key;
  AssignWorkloadKey(key, identity.namespace_name(), identity.owner_kind(), identity.owner_name(),
                    identity.container());
  return key;
}

FleetStore::FleetStore(FleetStoreOptions options)
    : options_(options),
      vram_bucketing_(Bucketing::Exponential(
          options.vram_max_bytes, options.vram_first_bucket_bytes, options.vram_bucket_ratio)),
      sm_bucketing_(Bucketing::Linear(1.0, options.sm_bucket_width)),
      clock_(options.half_life_s),
      vram_stride_(static_cast<size_t>(vram_bucketing_.num_buckets())),
      sm_stride_(static_cast<size_t>(sm_bucketing_.num_buckets())) {}

void FleetStore::Reserve(size_t workloads) {
  states_.reserve(workloads);
  vram_weights_.reserve(workloads * vram_stride_);
  sm_weights_.reserve(workloads * sm_stride_);
  vram_totals_.reserve(workloads);
  sm_totals_.reserve(workloads);
  index_.reserve(workloads);
}

uint32_t FleetStore::Track(const v1::WorkloadIdentity& identity, const AllocationUnit& unit) {
  std::string key = KeyOf(identity);
  if (auto it = index_.find(key); it != index_.end()) {
    WorkloadState& st = states_[it->second];
    st.identity = identity;
    st.unit = unit;
    return it->second;
  }
  const auto row = static_cast<uint32_t>(states_.size());
  WorkloadState st;
  st.identity = identity;
  st.unit = unit;
  states_.push_back(std::move(st));
  vram_weights_.resize(vram_weights_.size() + vram_stride_, 0.0);
  sm_weights_.resize(sm_weights_.size() + sm_stride_, 0.0);
  vram_totals_.push_back(0);
  sm_totals_.push_back(0);
  index_.emplace(std::move(key), row);
  return row;
}

std::optional<uint32_t> FleetStore::Find(std::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::span<const double> FleetStore::vram_weights(uint32_t row) const {
  return {&vram_weights_[row * vram_stride_], vram_stride_};
}

std::span<const double> FleetStore::sm_weights(uint32_t row) const {
  return {&sm_weights_[row * sm_stride_], sm_stride_};
}

HistogramRow FleetStore::mutable_vram_row(uint32_t row) {
  return {std::span<double>(&vram_weights_[row * vram_stride_], vram_stride_), &vram_totals_[row]};
}

HistogramRow FleetStore::mutable_sm_row(uint32_t row) {
  return {std::span<double>(&sm_weights_[row * sm_stride_], sm_stride_), &sm_totals_[row]};
}

void FleetStore::set_reference_time_s(double reference_time_s) {
  clock_ = DecayClock(options_.half_life_s, reference_time_s);
  cached_factor_time_s_ = std::numeric_limits<double>::quiet_NaN();
}

void FleetStore::ApplyDecayShift(double time_s) {
  const double scale = clock_.ShiftFor(time_s);
  if (scale == 1.0) return;
  // One reference time for the whole fleet: a shift is a single pass over contiguous arrays.
  ScaleAll(vram_weights_, scale);
  ScaleAll(sm_weights_, scale);
  ScaleAll(vram_totals_, scale);
  ScaleAll(sm_totals_, scale);
  cached_factor_time_s_ = std::numeric_limits<double>::quiet_NaN();
}

double FleetStore::FactorAt(double time_s) {
  if (time_s != cached_factor_time_s_) {
    cached_factor_ = clock_.Factor(time_s);
    cached_factor_time_s_ = time_s;
  }
  return cached_factor_;
}

void FleetStore::AddSample(uint32_t row, const GpuSample& sample) {
  ApplyDecayShift(sample.time_s);
  WorkloadState& st = states_[row];
  const double t = sample.time_s;
  const bool idle = sample.sm_ratio <= options_.idle_sm_threshold;

  if (st.sample_count == 0) {
    st.first_seen_s = t;
    st.last_seen_s = t;
  }
  st.first_seen_s = std::min(st.first_seen_s, t);
  st.last_seen_s = std::max(st.last_seen_s, t);
  ++st.sample_count;

  // Device-time accounting for duty cycle and idle tax.
  const double dt = options_.sample_period_s;
  const double gpu_seconds = dt * st.unit.device_fraction;
  st.observed_seconds += dt;
  st.allocated_gpu_seconds += gpu_seconds;
  if (st.unit.vram_capacity_bytes > 0)
    st.used_vram_gpu_seconds +=
        gpu_seconds * std::min(1.0, sample.vram_bytes / st.unit.vram_capacity_bytes);
  st.used_sm_gpu_seconds += gpu_seconds * sample.sm_ratio;
  if (!idle) {
    st.active_seconds += dt;
    const double gap_start = std::isnan(st.last_active_s) ? st.first_seen_s : st.last_active_s;
    st.longest_idle_gap_s = std::max(st.longest_idle_gap_s, t - gap_start);
    st.last_active_s = std::isnan(st.last_active_s) ? t : std::max(st.last_active_s, t);
  }

  // SM: every sample counts (as VPA's CPU histogram).
  AddToRow(mutable_sm_row(row), sm_bucketing_.FindBucket(sample.sm_ratio), FactorAt(t));

  double vram = sample.vram_bytes;
  if (sample.cuda_oom) {
    ++st.cuda_oom_count;
    vram = VramAfterCudaOom(vram);
  }
  AddVramPeak(row, st, t, vram);
}

void FleetStore::AddVramPeak(uint32_t row, WorkloadState& st, double time_s, double value_bytes) {
  const double interval = options_.vram_aggregation_interval_s;
  const double window_start = std::floor(time_s / interval) * interval;
  if (st.vram_window_peak_bytes >= 0 && window_start < st.vram_window_start_s) {
    return;  // a window already closed: its peak stands (as VPA drops late memory samples)
  }
  if (st.vram_window_peak_bytes < 0 || window_start > st.vram_window_start_s) {
    if (st.vram_window_peak_bytes >= 0)
      st.vram_previous_window_peak_bytes = st.vram_window_peak_bytes;
    st.vram_window_start_s = window_start;
    st.vram_window_peak_bytes = -1;
  }
  if (value_bytes <= st.vram_window_peak_bytes) return;
  // A higher sample in the same window replaces the window's peak; the peak is stamped at the
  // window start so that replacing it removes exactly what was added.
  const double weight = clock_.Factor(window_start);
  HistogramRow hist = mutable_vram_row(row);
  if (st.vram_window_peak_bytes >= 0)
    SubtractFromRow(hist, vram_bucketing_.FindBucket(st.vram_window_peak_bytes), weight);
  AddToRow(hist, vram_bucketing_.FindBucket(value_bytes), weight);
  st.vram_window_peak_bytes = value_bytes;
}

size_t FleetStore::ForgetStale(double now_s) {
  const double cutoff = now_s - options_.history_s;
  size_t removed = 0;
  for (size_t row = 0; row < states_.size();) {
    if (states_[row].last_seen_s >= cutoff) {
      ++row;
      continue;
    }
    // Swap-remove: the last row moves into this one.
    const size_t last = states_.size() - 1;
    index_.erase(KeyOf(states_[row].identity));
    if (row != last) {
      states_[row] = std::move(states_[last]);
      std::copy_n(&vram_weights_[last * vram_stride_], vram_stride_,
                  &vram_weights_[row * vram_stride_]);
      std::copy_n(&sm_weights_[last * sm_stride_], sm_stride_, &sm_weights_[row * sm_stride_]);
      vram_totals_[row] = vram_totals_[last];
      sm_totals_[row] = sm_totals_[last];
      index_[KeyOf(states_[row].identity)] = static_cast<uint32_t>(row);
    }
    states_.pop_back();
    vram_weights_.resize(last * vram_stride_);
    sm_weights_.resize(last * sm_stride_);
    vram_totals_.pop_back();
    sm_totals_.pop_back();
    ++removed;
  }
  return removed;
}

}  // namespace gpuvpa::recommender
