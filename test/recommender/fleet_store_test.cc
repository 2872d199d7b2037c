// Fleet store: VRAM peaks per window, CUDA OOM bumps, accounting, forgetting, decay shifts.
#include "recommender/model/fleet_store.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

using testing::kDay;
using testing::kGiB;
using testing::kHour;
using testing::TrackTestWorkload;

constexpr double kStart = 1793577600;

double VramP(const FleetStore& s, uint32_t row, double p) {
  return PercentileValue(s.vram_bucketing(), s.vram_weights(row), s.vram_total_weight(row), p);
}

// A week of activity by hour: two series of one workload, one an hour behind the other at the
// boundary, idle hours counted, a day-long gap cleared, a week later the old hours gone.
TEST(FleetStoreTest, KeepsAWeekOfHourlyActivityWhateverTheSeriesOrder) {
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  const double t0 = std::floor(kStart / kHour) * kHour;
  for (int m = 0; m < 60; ++m) {  // hour 0: active in 6 of 120 samples
    store.AddSample(w, {t0 + 60.0 * m, kGiB, m % 10 == 0 ? 0.9 : 0.0, false});
    store.AddSample(w, {t0 + 60.0 * m, kGiB, 0.0, false});
  }
  store.AddSample(w, {t0 + 2 * kHour, kGiB, 0.0, false});    // hour 2: idle
  store.AddSample(w, {t0 + 3600.0 - 60, kGiB, 0.9, false});  // a late sample of hour 0
  store.AddSample(w, {t0 + 5 * kHour, kGiB, 0.5, false});    // hour 5: active
  HourlyActivity a = store.state(w).Activity();
  EXPECT_EQ(a.latest_hour, static_cast<int64_t>(t0 / kHour) + 5);
  EXPECT_EQ(a.ObservedHours(), 3);
  EXPECT_EQ(a.IdleHours(), 1);
  const size_t h0 = static_cast<size_t>(static_cast<int64_t>(t0 / kHour) % kActivityHours);
  EXPECT_EQ(a.samples[h0], 121);
  EXPECT_EQ(a.active[h0], 7);
  // Eight days later only the new hour is in the week.
  store.AddSample(w, {t0 + 8 * 24 * kHour, kGiB, 0.0, false});
  a = store.state(w).Activity();
  EXPECT_EQ(a.ObservedHours(), 1);
  EXPECT_EQ(a.IdleHours(), 1);
}

// A sample stands for the time since its series' previous sample, at most one sample period:
// a source that sends points closer together than its period (a broken or hostile exporter)
// is charged the wall-clock time, not a period per point; two series are timed apart.
TEST(FleetStoreTest, ChargedTimeIsTheGapToTheSeriesPreviousSampleCappedAtThePeriod) {
  FleetStore store;  // sample period 60 s
  const uint32_t w = TrackTestWorkload(store, "w");
  const uint32_t a = store.TrackDevice(w, "pod-a", 0);
  const uint32_t b = store.TrackDevice(w, "pod-a", 1);
  for (int i = 0; i < 60; ++i)  // one minute, one point a second
    ASSERT_EQ(store.Ingest(w, a, {kStart + i, kGiB, 0.5, false}), IngestOutcome::kAdded);
  // The first point stands for the period before it, then 59 one-second gaps.
  EXPECT_DOUBLE_EQ(store.state(w).allocated_gpu_seconds, 60 + 59);
  EXPECT_DOUBLE_EQ(store.state(w).pending_allocated_gpu_seconds, 60 + 59);
  // After a ten-minute hole the next point counts one period, never the hole.
  ASSERT_EQ(store.Ingest(w, a, {kStart + 59 + 600, kGiB, 0.5, false}), IngestOutcome::kAdded);
  EXPECT_DOUBLE_EQ(store.state(w).allocated_gpu_seconds, 60 + 59 + 60);
  // Another device of the pod at the period: its own gaps.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(store.Ingest(w, b, {kStart + 60.0 * i, kGiB, 0.5, false}), IngestOutcome::kAdded);
  EXPECT_DOUBLE_EQ(store.state(w).allocated_gpu_seconds, 60 + 59 + 60 + 3 * 60);
}

TEST(FleetStoreTest, KeepsOnePeakPerVramWindow) {
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  // Sixty samples in one hour, rising then falling: one window, whose peak is the max.
  for (int m = 0; m < 60; ++m) {
    const double v = (10 + (m < 30 ? m : 60 - m) * 0.1) * kGiB;
    store.AddSample(w, {kStart + m * 60, v, 0.5, false});
  }
  EXPECT_NEAR(store.vram_total_weight(w), store.clock().Factor(kStart), 1e-9);
  EXPECT_EQ(VramP(store, w, 0.0), VramP(store, w, 1.0)) << "exactly one bucket holds weight";
  EXPECT_GE(VramP(store, w, 1.0), 13 * kGiB);
  EXPECT_EQ(store.state(w).vram_window_peak_bytes, 13 * kGiB);
  // The next hour opens a new window and remembers the previous peak.
  store.AddSample(w, {kStart + kHour, 5 * kGiB, 0.5, false});
  EXPECT_EQ(store.state(w).vram_previous_window_peak_bytes, 13 * kGiB);
  EXPECT_EQ(store.state(w).vram_window_peak_bytes, 5 * kGiB);
}

TEST(FleetStoreTest, CudaOomBumpsThePeakAsVpaDoes) {
  EXPECT_DOUBLE_EQ(VramAfterCudaOom(10 * kGiB), 12 * kGiB);                // x1.2 wins
  EXPECT_DOUBLE_EQ(VramAfterCudaOom(100e6), 100e6 + 100.0 * 1024 * 1024);  // +100 MiB wins
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  store.AddSample(w, {kStart, 10 * kGiB, 0.9, true});
  EXPECT_EQ(store.state(w).cuda_oom_count, 1u);
  EXPECT_GE(VramP(store, w, 1.0), 12 * kGiB);
}

TEST(FleetStoreTest, AccountsDutyCycleIdleGapsAndIdleTax) {
  FleetStoreOptions options;
  options.sample_period_s = 60;
  FleetStore store(options);
  // A MIG 3g.40gb instance (half a GPU): 100 minutes, active (SM 0.5) only in minutes 0-9 and
  // 70-79, VRAM at a quarter of the instance throughout.
  const uint32_t w = TrackTestWorkload(store, "w", "H100-80GB", "nvidia.com/mig-3g.40gb=1");
  const double capacity = store.state(w).unit.vram_capacity_bytes;
  for (int m = 0; m < 100; ++m) {
    const bool active = m < 10 || (m >= 70 && m < 80);
    store.AddSample(w, {kStart + m * 60, capacity / 4, active ? 0.5 : 0.0, false});
  }
  const WorkloadState& st = store.state(w);
  EXPECT_DOUBLE_EQ(st.active_seconds / st.observed_seconds, 0.2);
  EXPECT_DOUBLE_EQ(st.longest_idle_gap_s, 61 * 60);  // last active minute 9 to next at 70
  EXPECT_DOUBLE_EQ(st.allocated_gpu_seconds, 100 * 60 * 0.5);
  EXPECT_DOUBLE_EQ(st.used_vram_gpu_seconds, 100 * 60 * 0.5 * 0.25);
  EXPECT_DOUBLE_EQ(st.used_sm_gpu_seconds, 20 * 60 * 0.5 * 0.5);
}

TEST(FleetStoreTest, ForgetsWorkloadsSilentForLongerThanTheHistory) {
  FleetStore store;
  const uint32_t stale = TrackTestWorkload(store, "stale");
  const uint32_t fresh = TrackTestWorkload(store, "fresh");
  store.AddSample(stale, {kStart, 1 * kGiB, 0.1, false});
  store.AddSample(fresh, {kStart + 7 * kDay, 3 * kGiB, 0.7, false});
  const std::vector<double> fresh_vram(store.vram_weights(fresh).begin(),
                                       store.vram_weights(fresh).end());
  EXPECT_EQ(store.ForgetStale(kStart + 7 * kDay + 1), 0u)
      << "usage not yet charged keeps its workload";
  store.MarkCharged(stale);
  store.MarkCharged(fresh);
  EXPECT_EQ(store.ForgetStale(kStart + 7 * kDay), 0u) << "exactly at the history edge is kept";
  EXPECT_EQ(store.ForgetStale(kStart + 7 * kDay + 1), 1u);
  ASSERT_EQ(store.size(), 1u);
  EXPECT_FALSE(store.Find(WorkloadKeyOf(testing::TestIdentity("stale"))));
  const uint32_t moved = *store.Find(WorkloadKeyOf(testing::TestIdentity("fresh")));
  EXPECT_EQ(store.state(moved).identity.owner_name(), "fresh");
  EXPECT_EQ(std::vector<double>(store.vram_weights(moved).begin(), store.vram_weights(moved).end()),
            fresh_vram);
}

TEST(FleetStoreTest, DecayShiftRescalesTheWholeFleetWithoutMovingPercentiles) {
  FleetStoreOptions options;
  options.half_life_s = kHour;  // so that 100 half-lives pass within the test's trace
  FleetStore store(options);
  const uint32_t a = TrackTestWorkload(store, "a");
  const uint32_t b = TrackTestWorkload(store, "b");
  const double start = std::floor(kStart / kHour) * kHour;
  for (int m = 0; m < 99 * 6; ++m) {  // every 10 minutes for 99 hours: no shift yet
    store.AddSample(a, {start + m * 600, (4 + m % 5) * kGiB, 0.1 * (m % 10), false});
    store.AddSample(b, {start + m * 600, (20 + m % 7) * kGiB, 0.01 * (m % 50), false});
  }
  const double ref_before = store.clock().reference_time_s();
  std::vector<double> b_before;
  for (double p : {0.1, 0.5, 0.9, 0.99}) {
    b_before.push_back(VramP(store, b, p));
    b_before.push_back(
        PercentileValue(store.sm_bucketing(), store.sm_weights(b), store.sm_total_weight(b), p));
  }
  // Workload a alone moves past the exponent limit; the shift rescales b as well.
  store.AddSample(a, {start + 101 * kHour, 4 * kGiB, 0.1, false});
  EXPECT_GT(store.clock().reference_time_s(), ref_before) << "the test must actually shift";
  std::vector<double> b_after;
  for (double p : {0.1, 0.5, 0.9, 0.99}) {
    b_after.push_back(VramP(store, b, p));
    b_after.push_back(
        PercentileValue(store.sm_bucketing(), store.sm_weights(b), store.sm_total_weight(b), p));
  }
  EXPECT_EQ(b_after, b_before);
  EXPECT_TRUE(std::isfinite(store.vram_total_weight(a)));
}

TEST(FleetStoreTest, TrackUpdatesIdentityInPlace) {
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w", "H100-80GB", "nvidia.com/gpu=1");
  const uint32_t again = TrackTestWorkload(store, "w", "H100-80GB", "nvidia.com/mig-3g.40gb=1");
  EXPECT_EQ(w, again);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.state(w).identity.allocation(), "nvidia.com/mig-3g.40gb=1");
  EXPECT_DOUBLE_EQ(store.state(w).unit.device_fraction, 0.5);
}

}  // namespace
}  // namespace gpuvpa::recommender
