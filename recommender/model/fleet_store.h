// The fleet store: every tracked workload-container's decaying histograms and running
// evidence, kept densely (one row of bucket weights per workload in a contiguous array) so that
// whole-fleet passes (decay shifts, percentiles) walk memory in order.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/api/oom_bump.h"
#include "core/api/recommendation_contract.h"
#include "core/base/huge_page_allocator.h"
#include "core/base/status.h"
#include "core/gpu/gpu_allocation.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/model/bucketing.h"
#include "recommender/model/histogram.h"

namespace gpuvpa::recommender {

struct FleetStoreOptions {
  // VRAM: exponential buckets as VPA's memory histogram (10 MB first, 5 % growth, up to 1 TB):
  // a percentile is at most 5 % above the truth.
  double vram_first_bucket_bytes = 1e7;
  double vram_bucket_ratio = 1.05;
  double vram_max_bytes = 1e12;
  // SM duty cycle: linear buckets 1 % wide over 0..1.
  double sm_bucket_width = 0.01;
  // Weight halves per day of age, as VPA.
  double half_life_s = 24 * 3600.0;
  // One VRAM peak per hour: VRAM is a hard limit, so the peaks, not the average, matter.
  double vram_aggregation_interval_s = 3600;
  // Workloads with no sample for longer than this are forgotten.
  double history_s = 7 * 24 * 3600.0;
  // Each sample stands for this much device time (the scrape / query step).
  double sample_period_s = 60;
  // SM duty cycle at or below this counts as idle.
  double idle_sm_threshold = 0.05;
};

// One observation of one device (or MIG instance, or shared replica) of a workload-container.
struct GpuSample {
  double time_s = 0;
  double vram_bytes = 0;
  double sm_ratio = 0;
  bool cuda_oom = false;
};

// True when the sample can enter the store: finite, time in range, VRAM in [0, kMaxVramBytes],
// SM ratio in [0, 1]. NaN and infinities never reach a histogram or a checkpoint.
bool IsValidSample(const GpuSample& sample);

// One series of samples of a workload-container: a device (GPU index, MIG instance or shared
// replica) of one pod. Its high-water marks make ingest idempotent: a sample at or before
// `ingested_through_s` is already in the histograms; one at or before `charged_through_s` is
// already in the ledger (from this store or from the ledger's own marks).
struct DeviceCursor {
  std::string pod;
  int32_t device = -1;            // -1: the source named no device index
  double ingested_through_s = 0;  // 0: nothing ingested yet
  double charged_through_s = 0;   // 0: nothing charged yet
  // What this device did: a pod holding several GPUs of which some never work is planned down
  // to the GPUs it uses (updater), and one whose GPUs all work is multi-GPU (never MIG).
  uint64_t samples = 0;
  uint64_t active_samples = 0;  // SM above the idle threshold
  double vram_peak_bytes = 0;

  // Busy: active in at least `min_active_share` of its samples, or holding more than
  // `min_vram_bytes` (data resident on a device is in use even between kernels).
  bool Busy(double min_active_share, double min_vram_bytes) const;
};

// The latest week of activity, hour by hour: how many samples fell in each hour and how many
// were active. Owner reports draw the idle gaps over time from it, and the share of wholly idle
// hours is the scale-to-zero evidence (a workload idle for whole hours can wait for a cold start).
inline constexpr int kActivityHours = 168;
struct HourlyActivity {
  int64_t latest_hour = -1;  // floor(time / 1 h) of the newest hour held; -1: none
  std::array<uint16_t, kActivityHours> samples{};
  std::array<uint16_t, kActivityHours> active{};

  // Adds `count` samples of one hour, `active_count` of them active (slots saturate at 65535
  // samples, active never above samples).
  void AddCounts(int64_t hour, uint32_t count, uint32_t active_count);
  // Hours between the newest held and `hour` had no sample: clears their slots (a week at
  // most, so a long gap costs no more than one lap).
  void AdvanceTo(int64_t hour);
  // Hours with at least one sample, and those of them without an active sample.
  int ObservedHours() const;
  int IdleHours() const;
};

// What Ingest did with a sample.
enum class IngestOutcome {
  kAdded,            // new: in the histograms (and pending charge unless charged already)
  kAlreadyIngested,  // at or before the series' high-water mark: skipped, counted
  kInvalid,          // refused at the boundary (see IsValidSample)
};

// What a workload's SM figures stand on, from the strongest to the weakest; a workload keeps
// the weakest any of its samples had (reports name it).
// The values are checkpointed: new ones are added at the end, and WeakerSmBasis orders them.
enum class SmBasis : uint8_t {
  kMeasured = 0,        // SM activity as measured (DCGM PROF_SM_ACTIVE, GPM, a trace's column)
  kGrEngineActive = 1,  // DCGM PROF_GR_ENGINE_ACTIVE: the graphics engine's active time
  // A shared device's SM activity attributed to its pods in proportion to their busy time
  // (per-process smUtil): a floor-quality estimate (a busy one-thread job takes credit).
  kSmActiveByBusyShare = 2,
  kBusyTime = 3,  // DCGM_FI_DEV_GPU_UTIL / smUtil only: busy time, not SM coverage
  // The node agent's "solo-calibrated" split: busy time x each process's SM coverage, learned
  // from passes in which it ran alone (better than the busy share, still an estimate).
  kSmActiveSoloCalibrated = 4,
};
inline constexpr uint8_t kSmBasisCount = 5;
// "" for kMeasured, else "gr_engine_active", "sm_active_solo_calibrated",
// "sm_active_by_busy_share", "busy_time".
const char* SmBasisName(SmBasis basis);
// The weaker of two bases (measured < graphics engine < solo-calibrated < busy share < busy
// time): a workload carries the weakest basis of its samples.
SmBasis WeakerSmBasis(SmBasis a, SmBasis b);

// Everything but the histograms that the store keeps per workload-container.
struct WorkloadState {
  // Written by every sample: kept together at the front (two cache lines), so that ingest over
  // a large fleet touches as few lines per sample as possible.
  AllocationUnit unit;
  double first_seen_s = 0;
  double last_seen_s = 0;
  double vram_window_start_s = 0;
  double vram_window_peak_bytes = -1;  // < 0: no sample in the current window yet
  double last_active_s = std::numeric_limits<double>::quiet_NaN();  // NaN: never active
  double longest_idle_gap_s = 0;  // closed gaps only; the open one is added when reported
  uint64_t sample_count = 0;
  // Device-time accounting, in seconds of one device (fraction-weighted for the GPU-seconds).
  double observed_seconds = 0;
  double active_seconds = 0;
  double allocated_gpu_seconds = 0;
  double used_vram_gpu_seconds = 0;
  double used_sm_gpu_seconds = 0;
  // The hour being filled (see HourlyActivity): counted here, next to what every sample writes
  // anyway, and moved into the week's ring once per hour, so a sample touches no ring line.
  int32_t open_hour = -1;  // Unix hours (fits until the year 2245); -1: none
  uint16_t open_hour_samples = 0;
  uint16_t open_hour_active = 0;
  double vram_previous_window_peak_bytes = -1;
  double vram_history_peak_bytes = 0;  // the largest VRAM sample since tracking began
  // Device time ingested but not yet charged to the ledger, and the span of its samples; the
  // next charge is exactly this (see logic/usage_charges.h).
  uint64_t pending_samples = 0;
  double pending_from_s = 0;
  double pending_through_s = 0;
  double pending_allocated_gpu_seconds = 0;
  double pending_used_vram_gpu_seconds = 0;
  double pending_used_sm_gpu_seconds = 0;
  uint32_t cuda_oom_count = 0;
  bool shared_device_estimate = false;    // usage split between the pods of one device
  bool per_process_usage = false;         // a shared device's per-pod (per-process) readings
  SmBasis sm_basis = SmBasis::kMeasured;  // the weakest basis of any sample's SM figure
  v1::WorkloadIdentity identity;
  std::vector<DeviceCursor> devices;
  HourlyActivity activity;  // closed hours; read through Activity()

  // One sample's activity: into the open hour, or the ring for an hour behind it.
  void AddActivity(double time_s, bool is_active) {
    const auto hour = static_cast<int32_t>(time_s / 3600);  // times are positive: floor
    if (hour == open_hour && open_hour_samples < UINT16_MAX) {
      ++open_hour_samples;
      open_hour_active += is_active;
    } else if (hour > open_hour) {
      if (open_hour >= 0) activity.AddCounts(open_hour, open_hour_samples, open_hour_active);
      open_hour = hour;
      open_hour_samples = 1;
      open_hour_active = is_active;
    } else {
      activity.AddCounts(hour, 1, is_active);
    }
  }
  // The week of activity with the open hour included.
  HourlyActivity Activity() const {
    HourlyActivity a = activity;
    if (open_hour >= 0) a.AddCounts(open_hour, open_hour_samples, open_hour_active);
    return a;
  }
};

// The ledger's name of one series: workload-container, pod and device, each part escaped
// (core/base/names.h), so two series never share a name.
std::string ChargeSeriesKey(const v1::WorkloadIdentity& identity, std::string_view pod,
                            int32_t device);

class FleetStore {
 public:
  explicit FleetStore(FleetStoreOptions options = {});

  // Starts tracking a workload-container, or updates its identity (allocation, model, cost
  // center) if it is tracked already. Returns its row index.
  uint32_t Track(v1::WorkloadIdentity identity, const AllocationUnit& unit);
  // Row index of a key built by AssignWorkloadKey.
  std::optional<uint32_t> Find(std::string_view key) const;

  // Finds or creates the series of `row` for a pod's device; returns its index in
  // state(row).devices. A new series takes its charge mark from the ledger marks, if any.
  uint32_t TrackDevice(uint32_t row, std::string_view pod, int32_t device);
  // Adds a sample of one series unless the series has ingested it already (idempotent ingest).
  IngestOutcome Ingest(uint32_t row, uint32_t device_index, const GpuSample& sample);
  // Adds a sample with no series bookkeeping (benchmarks, tests); `chargeable` adds its device
  // time to the pending charge. The sample stands for `period_s` seconds of device time
  // (negative: the sample period; Ingest passes the gap to the series' previous sample, capped
  // at the period). False (nothing added) when the sample is invalid.
  bool AddSample(uint32_t row, const GpuSample& sample, bool chargeable = true,
                 double period_s = -1);

  // The ledger's charge marks by ChargeSeriesKey: every series, present or future, counts
  // samples at or before its mark as charged already.
  void SetLedgerChargeMarks(std::unordered_map<std::string, double> marks);
  // The pending charge of `row` was written to the ledger: clear it and advance the series'
  // charge marks to their ingest marks.
  void MarkCharged(uint32_t row);

  // Drops workloads whose last sample is older than now - history and that have nothing
  // pending charge, and series older than that; returns how many workloads.
  size_t ForgetStale(double now_s);
  // The newest sample time in the store (0 when empty): the clock that staleness is measured
  // against, so that an old trace still replays and no single row can move it past the data.
  double newest_sample_s() const { return newest_sample_s_; }

  size_t size() const { return states_.size(); }
  void Reserve(size_t workloads);
  const FleetStoreOptions& options() const { return options_; }
  const Bucketing& vram_bucketing() const { return vram_bucketing_; }
  const Bucketing& sm_bucketing() const { return sm_bucketing_; }
  const DecayClock& clock() const { return clock_; }

  const WorkloadState& state(uint32_t row) const { return states_[row]; }
  std::span<const double> vram_weights(uint32_t row) const;
  std::span<const double> sm_weights(uint32_t row) const;
  double vram_total_weight(uint32_t row) const { return vram_totals_[row]; }
  double sm_total_weight(uint32_t row) const { return sm_totals_[row]; }

  // Bumped whenever rows or series may have moved (ForgetStale, raw access): indices a caller
  // kept are valid only under the version they were taken at.
  uint64_t layout_version() const { return layout_version_; }

  // For checkpoint restore: raw access to a row and the clock.
  WorkloadState& mutable_state(uint32_t row) {
    ++layout_version_;
    return states_[row];
  }
  HistogramRow mutable_vram_row(uint32_t row);
  HistogramRow mutable_sm_row(uint32_t row);
  void set_reference_time_s(double reference_time_s);
  // How far a live source (Prometheus) has been read: the next poll starts after it. Kept in
  // the checkpoint; 0 when nothing was read from a live source.
  double source_through_s() const { return source_through_s_; }
  void set_source_through_s(double time_s) { source_through_s_ = time_s; }
  void NoteRestoredSampleTime(double time_s) {
    newest_sample_s_ = std::max(newest_sample_s_, time_s);
  }

 private:
  void ApplyDecayShift(double time_s);
  double FactorAt(double time_s);
  void AddVramPeak(uint32_t row, WorkloadState& st, double time_s, double value_bytes);

  double source_through_s_ = 0;
  FleetStoreOptions options_;
  Bucketing vram_bucketing_;
  Bucketing sm_bucketing_;
  DecayClock clock_;
  size_t vram_stride_;
  size_t sm_stride_;
  // By row; the large arrays on huge pages where the kernel offers them (a fleet's samples land
  // on random rows: with 4 KiB pages nearly every sample of a large fleet is a TLB miss).
  template <typename T>
  using RowArray = std::vector<T, HugePageAllocator<T>>;
  RowArray<WorkloadState> states_;
  RowArray<double> vram_weights_;  // size() x vram_stride_, row-major
  RowArray<double> sm_weights_;    // size() x sm_stride_, row-major
  RowArray<double> vram_totals_;
  RowArray<double> sm_totals_;
  // Row by WorkloadKeyOf(identity); absl's string hash takes absl::string_view lookups.
  absl::flat_hash_map<std::string, uint32_t> index_;
  // Decay factors by time, direct-mapped on the sample-period index: a trace interleaves every
  // series at each timestamp and Prometheus sends one series after another over the same scrape
  // times, so in both orders nearly every sample finds its factor here instead of calling exp2.
  // The same function of the same time: cached or not, the factor is the same double. Cleared
  // when the reference time moves.
  struct FactorSlot {
    double time_s = std::numeric_limits<double>::quiet_NaN();
    double factor = 1;
  };
  static constexpr size_t kFactorCacheSlots = 2048;  // 34 h of one-minute samples
  void ClearFactorCache();
  std::vector<FactorSlot> factor_cache_;
  double inverse_sample_period_ = 1;
  double newest_sample_s_ = 0;
  uint64_t layout_version_ = 0;
  std::unordered_map<std::string, double> ledger_charge_marks_;
};

}  // namespace gpuvpa::recommender
