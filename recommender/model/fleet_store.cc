// Fleet store: dense rows, decay shifts over the whole fleet with Eigen, peak-per-window VRAM.
#include "recommender/model/fleet_store.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "core/base/names.h"
#include "core/base/workload_key.h"

namespace gpuvpa::recommender {

const char* SmBasisName(SmBasis basis) {
  switch (basis) {
    case SmBasis::kMeasured:
      return "";
    case SmBasis::kGrEngineActive:
      return "gr_engine_active";
    case SmBasis::kSmActiveByBusyShare:
      return "sm_active_by_busy_share";
    case SmBasis::kBusyTime:
      return "busy_time";
    case SmBasis::kSmActiveSoloCalibrated:
      return "sm_active_solo_calibrated";
  }
  return "";
}

SmBasis WeakerSmBasis(SmBasis a, SmBasis b) {
  // Rank by value: measured, graphics engine, busy share, busy time, solo-calibrated.
  static constexpr uint8_t kRank[kSmBasisCount] = {0, 1, 3, 4, 2};
  const auto rank = [](SmBasis s) {
    const auto i = static_cast<uint8_t>(s);
    return i < kSmBasisCount ? kRank[i] : uint8_t{255};
  };
  return rank(a) >= rank(b) ? a : b;
}

namespace {

void ScaleAll(std::span<double> v, double scale) {
  Eigen::Map<Eigen::ArrayXd>(v.data(), static_cast<Eigen::Index>(v.size())) *= scale;
}

}  // namespace

bool IsValidSample(const GpuSample& s) {
  // Written so that NaN fails every comparison.
  return s.time_s >= kMinSampleTimeS && s.time_s < kMaxSampleTimeS && s.vram_bytes >= 0 &&
         s.vram_bytes <= kMaxVramBytes && s.sm_ratio >= 0 && s.sm_ratio <= 1;
}

std::string ChargeSeriesKey(const v1::WorkloadIdentity& identity, std::string_view pod,
                            int32_t device) {
  const std::string device_text = device < 0 ? "-" : std::to_string(device);
  return EncodeIdParts({identity.namespace_name(), identity.owner_kind(), identity.owner_name(),
                        identity.container(), pod, device_text});
}

FleetStore::FleetStore(FleetStoreOptions options)
    : options_(options),
      vram_bucketing_(Bucketing::Exponential(
          options.vram_max_bytes, options.vram_first_bucket_bytes, options.vram_bucket_ratio)),
      sm_bucketing_(Bucketing::Linear(1.0, options.sm_bucket_width)),
      clock_(options.half_life_s),
      vram_stride_(static_cast<size_t>(vram_bucketing_.num_buckets())),
      sm_stride_(static_cast<size_t>(sm_bucketing_.num_buckets())),
      inverse_sample_period_(options_.sample_period_s > 0 ? 1.0 / options_.sample_period_s : 1.0) {
  ClearFactorCache();
}

void FleetStore::Reserve(size_t workloads) {
  states_.reserve(workloads);
  vram_weights_.reserve(workloads * vram_stride_);
  sm_weights_.reserve(workloads * sm_stride_);
  vram_totals_.reserve(workloads);
  sm_totals_.reserve(workloads);
  index_.reserve(workloads);
}

uint32_t FleetStore::Track(v1::WorkloadIdentity identity, const AllocationUnit& unit) {
  std::string key = WorkloadKeyOf(identity);
  if (auto it = index_.find(key); it != index_.end()) {
    WorkloadState& st = states_[it->second];
    st.identity = std::move(identity);
    st.unit = unit;
    return it->second;
  }
  const auto row = static_cast<uint32_t>(states_.size());
  WorkloadState st;
  st.identity = std::move(identity);
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
  auto it = index_.find(absl::string_view(key.data(), key.size()));
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
  ClearFactorCache();
}

void FleetStore::ApplyDecayShift(double time_s) {
  const double scale = clock_.ShiftFor(time_s);
  if (scale == 1.0) return;
  // One reference time for the whole fleet: a shift is a single pass over contiguous arrays.
  ScaleAll(vram_weights_, scale);
  ScaleAll(sm_weights_, scale);
  ScaleAll(vram_totals_, scale);
  ScaleAll(sm_totals_, scale);
  ClearFactorCache();
}

void FleetStore::ClearFactorCache() { factor_cache_.assign(kFactorCacheSlots, FactorSlot{}); }

double FleetStore::FactorAt(double time_s) {
  // Times are within [2000, 2100) (IsValidSample); a sample period far below a second could
  // still push the index past an int64, and any slot is as good as another for correctness.
  const double k = time_s * inverse_sample_period_;
  const uint64_t index = k >= 0 && k < 9e18 ? static_cast<uint64_t>(k) : 0;
  FactorSlot& slot = factor_cache_[index % kFactorCacheSlots];
  if (slot.time_s != time_s) {
    slot.factor = clock_.Factor(time_s);
    slot.time_s = time_s;
  }
  return slot.factor;
}

bool DeviceCursor::Busy(double min_active_share, double min_vram_bytes) const {
  return vram_peak_bytes > min_vram_bytes ||
         (samples > 0 &&
          static_cast<double>(active_samples) >= min_active_share * static_cast<double>(samples));
}

void HourlyActivity::AddCounts(int64_t hour, uint32_t count, uint32_t active_count) {
  if (count == 0) return;
  if (latest_hour < 0) latest_hour = hour;
  if (hour > latest_hour) AdvanceTo(hour);
  if (hour <= latest_hour - kActivityHours) return;  // older than the week held
  const size_t slot = static_cast<size_t>(hour % kActivityHours);
  const uint32_t room = UINT16_MAX - samples[slot];  // saturated: the first 65535 stand
  const uint32_t added = std::min(count, room);
  samples[slot] = static_cast<uint16_t>(samples[slot] + added);
  active[slot] = static_cast<uint16_t>(active[slot] + std::min(active_count, added));
}

void HourlyActivity::AdvanceTo(int64_t hour) {
  for (int64_t h = latest_hour + 1; h <= std::min(hour, latest_hour + kActivityHours); ++h) {
    samples[h % kActivityHours] = 0;
    active[h % kActivityHours] = 0;
  }
  latest_hour = hour;
}

int HourlyActivity::ObservedHours() const {
  return static_cast<int>(
      std::count_if(samples.begin(), samples.end(), [](uint16_t n) { return n > 0; }));
}

int HourlyActivity::IdleHours() const {
  int idle = 0;
  for (size_t i = 0; i < samples.size(); ++i) idle += samples[i] > 0 && active[i] == 0;
  return idle;
}

uint32_t FleetStore::TrackDevice(uint32_t row, std::string_view pod, int32_t device) {
  std::vector<DeviceCursor>& devices = states_[row].devices;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].device == device && devices[i].pod == pod) return static_cast<uint32_t>(i);
  DeviceCursor cursor;
  cursor.pod = std::string(pod);
  cursor.device = device;
  if (!ledger_charge_marks_.empty()) {
    if (auto it = ledger_charge_marks_.find(ChargeSeriesKey(states_[row].identity, pod, device));
        it != ledger_charge_marks_.end())
      cursor.charged_through_s = it->second;
  }
  devices.push_back(std::move(cursor));
  return static_cast<uint32_t>(devices.size() - 1);
}

IngestOutcome FleetStore::Ingest(uint32_t row, uint32_t device_index, const GpuSample& sample) {
  DeviceCursor& cursor = states_[row].devices[device_index];
  if (sample.time_s <= cursor.ingested_through_s) return IngestOutcome::kAlreadyIngested;
  // The sample stands for the time since the series' previous sample, at most one period:
  // points closer together than the period are not charged twice (each for a whole period).
  const double previous_s = std::max(cursor.ingested_through_s, cursor.charged_through_s);
  const double period_s = previous_s > 0 && sample.time_s > previous_s
                              ? std::min(options_.sample_period_s, sample.time_s - previous_s)
                              : options_.sample_period_s;
  if (!AddSample(row, sample, sample.time_s > cursor.charged_through_s, period_s))
    return IngestOutcome::kInvalid;
  cursor.ingested_through_s = sample.time_s;
  ++cursor.samples;
  if (sample.sm_ratio > options_.idle_sm_threshold) ++cursor.active_samples;
  cursor.vram_peak_bytes = std::max(cursor.vram_peak_bytes, sample.vram_bytes);
  return IngestOutcome::kAdded;
}

void FleetStore::SetLedgerChargeMarks(std::unordered_map<std::string, double> marks) {
  ledger_charge_marks_ = std::move(marks);
  if (ledger_charge_marks_.empty()) return;
  for (WorkloadState& st : states_)
    for (DeviceCursor& cursor : st.devices)
      if (auto it =
              ledger_charge_marks_.find(ChargeSeriesKey(st.identity, cursor.pod, cursor.device));
          it != ledger_charge_marks_.end())
        cursor.charged_through_s = std::max(cursor.charged_through_s, it->second);
}

void FleetStore::MarkCharged(uint32_t row) {
  WorkloadState& st = states_[row];
  st.pending_samples = 0;
  st.pending_from_s = st.pending_through_s = 0;
  st.pending_allocated_gpu_seconds = 0;
  st.pending_used_vram_gpu_seconds = 0;
  st.pending_used_sm_gpu_seconds = 0;
  for (DeviceCursor& cursor : st.devices)
    cursor.charged_through_s = std::max(cursor.charged_through_s, cursor.ingested_through_s);
}

bool FleetStore::AddSample(uint32_t row, const GpuSample& sample, bool chargeable,
                           double period_s) {
  if (!IsValidSample(sample)) return false;
  ApplyDecayShift(sample.time_s);
  newest_sample_s_ = std::max(newest_sample_s_, sample.time_s);
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
  const double dt = period_s >= 0 ? period_s : options_.sample_period_s;
  const double gpu_seconds = dt * st.unit.device_fraction;
  st.observed_seconds += dt;
  const double used_vram_gpu_seconds =
      st.unit.vram_capacity_bytes > 0
          ? gpu_seconds * std::min(1.0, sample.vram_bytes / st.unit.vram_capacity_bytes)
          : 0;
  const double used_sm_gpu_seconds = gpu_seconds * sample.sm_ratio;
  st.allocated_gpu_seconds += gpu_seconds;
  st.used_vram_gpu_seconds += used_vram_gpu_seconds;
  st.used_sm_gpu_seconds += used_sm_gpu_seconds;
  if (chargeable) {
    if (st.pending_samples == 0) st.pending_from_s = st.pending_through_s = t;
    ++st.pending_samples;
    st.pending_from_s = std::min(st.pending_from_s, t);
    st.pending_through_s = std::max(st.pending_through_s, t);
    st.pending_allocated_gpu_seconds += gpu_seconds;
    st.pending_used_vram_gpu_seconds += used_vram_gpu_seconds;
    st.pending_used_sm_gpu_seconds += used_sm_gpu_seconds;
  }
  st.vram_history_peak_bytes = std::max(st.vram_history_peak_bytes, sample.vram_bytes);
  st.AddActivity(t, !idle);
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
  return true;
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
  const double weight = FactorAt(window_start);
  HistogramRow hist = mutable_vram_row(row);
  if (st.vram_window_peak_bytes >= 0)
    SubtractFromRow(hist, vram_bucketing_.FindBucket(st.vram_window_peak_bytes), weight);
  AddToRow(hist, vram_bucketing_.FindBucket(value_bytes), weight);
  st.vram_window_peak_bytes = value_bytes;
}

size_t FleetStore::ForgetStale(double now_s) {
  ++layout_version_;
  const double cutoff = now_s - options_.history_s;
  size_t removed = 0;
  for (size_t row = 0; row < states_.size();) {
    // Usage not yet charged (no price yet, or no ledger given) keeps its workload and its
    // series: charging advances their marks.
    if (states_[row].pending_samples > 0) {
      ++row;
      continue;
    }
    std::erase_if(states_[row].devices,
                  [&](const DeviceCursor& c) { return c.ingested_through_s < cutoff; });
    if (states_[row].last_seen_s >= cutoff) {
      ++row;
      continue;
    }
    // Swap-remove: the last row moves into this one.
    const size_t last = states_.size() - 1;
    index_.erase(WorkloadKeyOf(states_[row].identity));
    if (row != last) {
      states_[row] = std::move(states_[last]);
      std::copy_n(&vram_weights_[last * vram_stride_], vram_stride_,
                  &vram_weights_[row * vram_stride_]);
      std::copy_n(&sm_weights_[last * sm_stride_], sm_stride_, &sm_weights_[row * sm_stride_]);
      vram_totals_[row] = vram_totals_[last];
      sm_totals_[row] = sm_totals_[last];
      index_[WorkloadKeyOf(states_[row].identity)] = static_cast<uint32_t>(row);
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
