// Recommendation assembly: history gate, observed floor, pool-allocator flag, and the demo
// fleet's headline findings.
#include "recommender/logic/recommender.h"

#include <gtest/gtest.h>

#include <map>

#include "core/gpu/gpu_catalog.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

using testing::kDay;
using testing::kGiB;
using testing::kHour;
using testing::TrackTestWorkload;

constexpr double kStart = 1793577600;

TEST(RecommenderTest, WithholdsTargetsBelowMinimumHistoryButKeepsEvidence) {
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "young");
  for (int m = 0; m < 120; ++m) store.AddSample(w, {kStart + m * 60, 6 * kGiB, 0.4, false});
  const Recommendation r = Recommender().Recommend(store, w);
  EXPECT_FALSE(r.has_target);
  const std::string reason = ToProto(r, store).withheld_reason();
  EXPECT_NE(reason.find("history 2.0 h is below the minimum 24.0 h"), std::string::npos) << reason;
  EXPECT_EQ(r.vram_target_bytes, 0);
  EXPECT_GT(r.allocated_gpu_hours, 1.99);
  EXPECT_GT(r.sm_p90_ratio, 0.39);
}

TEST(RecommenderTest, TargetIsNeverBelowTheLatestWindowPeak) {
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  for (int h = 0; h < 200; ++h) store.AddSample(w, {kStart + h * kHour, 1 * kGiB, 0.3, false});
  store.AddSample(w, {kStart + 200 * kHour, 10 * kGiB, 0.3, false});
  const Recommendation r = Recommender().Recommend(store, w);
  ASSERT_TRUE(r.has_target);
  EXPECT_EQ(r.vram_observed_peak_bytes, 10 * kGiB);
  EXPECT_GE(r.vram_target_bytes, 10 * kGiB) << "p98 of the peaks alone would say ~1.2 GiB";
  EXPECT_LE(r.vram_lower_bytes, r.vram_target_bytes);
  EXPECT_GE(r.vram_upper_bytes, r.vram_target_bytes);
}

TEST(RecommenderTest, TargetIsThePeakPlusMarginForStableUsageWithoutBucketRounding) {
  // p98 falls in the bucket of the one value held: its end (up to 5 % above) is clipped to the
  // value itself, so the margin is not stacked on a rounding.
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  for (int h = 0; h < 72; ++h) store.AddSample(w, {kStart + h * kHour, 8 * kGiB, 0.3, false});
  const Recommendation r = Recommender().Recommend(store, w);
  EXPECT_DOUBLE_EQ(r.vram_target_bytes, 8 * kGiB * 1.15);
}

TEST(RecommenderTest, TargetKeepsTheBucketEndBelowTheLargestPeakAndAfterAnOom) {
  // 99 hours at 8 GiB and one at 20 GiB: p98 is in the 8 GiB bucket, whose end stands.
  FleetStore store;
  const uint32_t w = TrackTestWorkload(store, "w");
  for (int h = 0; h < 100; ++h)
    store.AddSample(w, {kStart + h * kHour, (h == 10 ? 20 : 8) * kGiB, 0.3, false});
  const Bucketing& b = store.vram_bucketing();
  EXPECT_DOUBLE_EQ(Recommender().Recommend(store, w).vram_target_bytes,
                   b.BucketEnd(b.FindBucket(8 * kGiB)) * 1.15);
  // A CUDA OOM puts a bumped peak (above any sample) into the histogram: nothing is clipped.
  FleetStore oom_store;
  const uint32_t o = TrackTestWorkload(oom_store, "o");
  for (int h = 0; h < 72; ++h) oom_store.AddSample(o, {kStart + h * kHour, 8 * kGiB, 0.3, h == 71});
  const double bumped = VramAfterCudaOom(8 * kGiB);
  const Recommendation r = Recommender().Recommend(oom_store, o);
  EXPECT_GE(r.vram_target_bytes, bumped);
}

TEST(RecommenderTest, FlagsFlatHighResidencyWithLowComputeAsPoolAllocator) {
  FleetStore store;
  const uint32_t pool = TrackTestWorkload(store, "pool", "H100-80GB");
  const uint32_t busy = TrackTestWorkload(store, "busy", "H100-80GB");
  const uint32_t varied = TrackTestWorkload(store, "varied", "H100-80GB");
  for (int m = 0; m < 2 * 1440; ++m) {
    const double t = kStart + m * 60;
    store.AddSample(pool, {t, 72 * kGiB, 0.1, false});
    store.AddSample(busy, {t, 72 * kGiB, 0.9, false});
    store.AddSample(varied, {t, (20 + (m / 60) % 40) * kGiB, 0.1, false});
  }
  const Recommender rec;
  EXPECT_TRUE(rec.Recommend(store, pool).vram_set_by_allocator);
  EXPECT_FALSE(rec.Recommend(store, busy).vram_set_by_allocator) << "compute is high";
  EXPECT_FALSE(rec.Recommend(store, varied).vram_set_by_allocator) << "residency moves";
}

TEST(RecommenderTest, DemoFleetHeadlineFindings) {
  DemoFleetOptions options;
  options.days = 3;
  FleetStore store;
  TraceReplayer replayer(store, GpuCatalog::BuiltIn());
  Result<TraceReplayReport> report = replayer.ReplayText(GenerateDemoFleetTrace(options));
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->malformed, 0u);
  std::map<std::string, Recommendation> by_name;
  for (const Recommendation& r : Recommender().RecommendAll(store))
    by_name[store.state(r.row).identity.owner_name()] = r;
  ASSERT_EQ(by_name.size(), 7u);

  EXPECT_TRUE(by_name["vllm-llama"].vram_set_by_allocator);
  for (const char* name :
       {"agent-loop", "embed-server", "nightly-train", "notebook-alice", "fraud-scorer"})
    EXPECT_FALSE(by_name[name].vram_set_by_allocator) << name;
  // The nightly trainer holds 4 GPUs for 3 days and trains 2 h a day: ~92 % of its GPU-hours idle.
  const Recommendation& train = by_name["nightly-train"];
  EXPECT_NEAR(train.allocated_gpu_hours, 4 * 72, 1e-6);
  EXPECT_NEAR(train.idle_tax_gpu_hours_sm / train.allocated_gpu_hours, 1 - 2.0 / 24 * 0.9, 0.02);
  EXPECT_NEAR(train.active_duty_ratio, 2.0 / 24, 1e-9);
  EXPECT_GE(train.longest_idle_gap_s, 22 * kHour);
  // The notebook is idle but for 20 minutes on weekdays.
  EXPECT_LT(by_name["notebook-alice"].active_duty_ratio, 0.02);
  // VRAM recommendations cover what was used: agent loop peaks at 19.5 GiB after its OOM bump.
  EXPECT_EQ(by_name["agent-loop"].cuda_oom_count, 0u) << "the OOM comes on day 4";
  EXPECT_GE(by_name["agent-loop"].vram_target_bytes, 18 * kGiB * 0.95);
  EXPECT_LT(by_name["fraud-scorer"].vram_target_bytes, 10 * kGiB);
  EXPECT_GT(by_name["fraud-scorer"].vram_target_bytes, 7.3 * kGiB);
  // A MIG 3g.40gb instance is half a GPU.
  EXPECT_NEAR(by_name["fraud-scorer"].allocated_gpu_hours, 72 * 0.5, 1e-6);
}

}  // namespace
}  // namespace gpuvpa::recommender
