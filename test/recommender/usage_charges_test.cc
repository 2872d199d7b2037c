// Usage charges: priced deltas into the ledger, idempotent across crashes and restarts.
#include "recommender/logic/usage_charges.h"

#include <gtest/gtest.h>

#include "recommender/checkpoint/checkpoint.h"
#include "recommender/logic/recommender.h"
#include "test/recommender/test_util.h"
#include "test/support/money_util.h"

namespace gpuvpa::recommender {
namespace {

using testing::kGiB;
using testing::ScopedTempDir;
using testing::TrackTestWorkload;

constexpr double kStart = 1793577600;
constexpr double kPrice = 2.0;

class UsageChargesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(prices_.SetPrice("H100-80GB", "", kPrice, "test").ok());
    ledger_ = std::move(Ledger::Open(tmp_.Path("ledger.db"))).value();
    row_ = TrackTestWorkload(store_, "w", "H100-80GB", "nvidia.com/mig-3g.40gb=1");
  }
  // `minutes` samples at SM 0.5 and a quarter of the instance's VRAM.
  void Feed(int from_minute, int minutes) {
    const double vram = store_.state(row_).unit.vram_capacity_bytes / 4;
    for (int m = from_minute; m < from_minute + minutes; ++m)
      store_.AddSample(row_, {kStart + m * 60, vram, 0.5, false});
  }
  UsageCharges Charge() {
    return ChargePendingUsage(store_, Recommender().RecommendAll(store_), prices_, "").value();
  }
  ScopedTempDir tmp_;
  PriceBook prices_;
  FleetStore store_;
  uint32_t row_ = 0;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(UsageChargesTest, ChargesAllocatedAndUsedGpuTimeAtTheModelPrice) {
  Feed(0, 120);  // two hours of half a GPU
  const UsageCharges c = Charge();
  ASSERT_EQ(c.actions.size(), 1u);
  const LedgerAction& a = c.actions[0];
  EXPECT_EQ(a.allocated_gpu_time, gpuvpa::testing::GpuHours(1.0));
  EXPECT_EQ(a.allocated, gpuvpa::testing::Usd(2.0));
  EXPECT_EQ(a.used_vram, gpuvpa::testing::Usd(0.5));  // a quarter of the instance's memory
  EXPECT_EQ(a.used_sm, gpuvpa::testing::Usd(1.0));    // SM 0.5
  EXPECT_EQ(a.cost_center, "cc-a");
  EXPECT_EQ(a.period_end_s - a.period_start_s, 120 * 60);
  EXPECT_NE(a.evidence_json.find("\"sm_p90_ratio\""), std::string::npos);
}

TEST_F(UsageChargesTest, LaterChargesAreDeltasWithTheirOwnPeriod) {
  Feed(0, 60);
  UsageCharges first = Charge();
  ASSERT_EQ(*ledger_->Append(first.actions), 1u);
  MarkCharged(store_, first);
  EXPECT_TRUE(Charge().actions.empty()) << "nothing new, nothing charged";
  Feed(60, 30);
  UsageCharges second = Charge();
  ASSERT_EQ(second.actions.size(), 1u);
  EXPECT_EQ(second.actions[0].allocated_gpu_time, gpuvpa::testing::GpuHours(0.25));
  EXPECT_EQ(second.actions[0].period_start_s, first.actions[0].period_end_s);
  ASSERT_EQ(*ledger_->Append(second.actions), 1u);
  Result<Showback> s = ledger_->QueryShowback({});
  EXPECT_EQ(s->total.allocated_gpu_time, gpuvpa::testing::GpuHours(0.75));
}

TEST_F(UsageChargesTest, ACrashBeforeTheCheckpointRechargesTheSameIdsWhichTheLedgerIgnores) {
  const std::string ckpt = tmp_.Path("ckpt");
  Feed(0, 60);
  ASSERT_TRUE(SaveCheckpoint(store_, ckpt, 0).ok());
  // Run 1 writes the ledger, then "crashes" before saving its checkpoint.
  ASSERT_EQ(*ledger_->Append(Charge().actions), 1u);
  // Run 2 restarts from the checkpoint and charges again.
  FleetStore restarted;
  ASSERT_TRUE(LoadCheckpoint(ckpt, restarted).ok());
  const UsageCharges again =
      ChargePendingUsage(restarted, Recommender().RecommendAll(restarted), prices_, "").value();
  ASSERT_EQ(again.actions.size(), 1u);
  EXPECT_EQ(*ledger_->Append(again.actions), 0u);
  EXPECT_EQ(*ledger_->CountRows(), 1);
}

TEST_F(UsageChargesTest, AnUnpricedModelIsReportedAndChargedLater) {
  const uint32_t t4 = TrackTestWorkload(store_, "t4", "T4-16GB");
  store_.AddSample(t4, {kStart, 1 * kGiB, 0.1, false});
  Feed(0, 10);
  UsageCharges c = Charge();
  ASSERT_EQ(c.unpriced.size(), 1u);
  EXPECT_NE(c.unpriced[0].message().find("T4-16GB"), std::string::npos);
  MarkCharged(store_, c);
  ASSERT_TRUE(prices_.SetPrice("T4-16GB", "", 0.5, "test").ok());
  c = Charge();
  ASSERT_EQ(c.actions.size(), 1u) << "the T4 workload's markers did not move";
  EXPECT_EQ(c.actions[0].gpu_model, "T4-16GB");
}

}  // namespace
}  // namespace gpuvpa::recommender
