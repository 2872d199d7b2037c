// Metering: replica estimates held between reads, priced rows in the ledger.
#include "scaler/service/activity_meter.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "test/support/money_util.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::scaler {
namespace {

ActivityMeterOptions FlushEvery(std::chrono::seconds interval) {
  ActivityMeterOptions o;
  o.flush_interval = interval;
  return o;
}

class ActivityMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(prices_.SetPrice("H100-80GB", "", 2.64, "test").ok());
    ledger_ = std::move(Ledger::Open(tmp_.Path("ledger.db"))).value();
    Result<ScaledObjectConfig> c = ParseScaledObjectConfig("agent", "ai",
                                                           {{"listName", "jobs"},
                                                            {"listLength", "5"},
                                                            {"costCenter", "ai-agents"},
                                                            {"gpuModel", "H100-80GB"},
                                                            {"gpuPerReplica", "2"}});
    ASSERT_TRUE(c.ok()) << c.status().message();
    config_ = *c;
    // The meter logs through spdlog: capture it.
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_)));
  }
  void TearDown() override {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "default", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
  }
  testing::ScopedTempDir tmp_;
  PriceBook prices_;
  std::unique_ptr<Ledger> ledger_;
  ScaledObjectConfig config_;
  double now_ = 1793577600;
  std::ostringstream log_;
};

TEST_F(ActivityMeterTest, MetersHeldReplicaEstimatesAndWritesAPricedRowOnScaleToZero) {
  ActivityMeter meter({}, ledger_.get(), prices_, [&] { return now_; });
  meter.OnDepth(config_, 0);  // t = 0: idle
  now_ += 10;
  meter.OnDepth(config_, 11);  // 3 replicas from t = 10
  now_ += 60;
  meter.OnDepth(config_, 11);
  now_ += 30;
  meter.OnDepth(config_, 0);  // scaled to zero at t = 100: 3 replicas x 90 s x 2 GPUs
  EXPECT_DOUBLE_EQ(meter.metered_gpu_seconds("ai-agents"), 540);
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_EQ(s->groups[0].group, "ai-agents");
  EXPECT_EQ(s->groups[0].metered_gpu_time, 540'000);
  EXPECT_EQ(s->groups[0].metered, gpuvpa::testing::Cost(540'000, 2.64));
  EXPECT_EQ(s->groups[0].reserved, gpuvpa::testing::Cost(100 * 3 * 2 * 1000, 2.64))
      << "peak 3 replicas for 100 s";
}

TEST_F(ActivityMeterTest, WorkedExampleTwoHoursADayForAMonth) {
  ActivityMeter meter(FlushEvery(std::chrono::seconds(86400 * 31)), ledger_.get(), prices_,
                      [&] { return now_; });
  config_.gpu_per_replica = 1;
  for (int day = 0; day < 30; ++day) {
    meter.OnDepth(config_, 1);  // busy: one replica
    for (int minute = 0; minute < 120; ++minute) {
      now_ += 60;
      meter.OnDepth(config_, 1);
    }
    meter.OnDepth(config_, 0);  // idle for the rest of the day
    for (int step = 0; step < 22 * 12; ++step) {
      now_ += 300;
      meter.OnDepth(config_, 0);
    }
  }
  EXPECT_DOUBLE_EQ(meter.metered_gpu_seconds("ai-agents"), 60 * 3600.0);
  Result<Showback> s = ledger_->QueryShowback({});
  EXPECT_EQ(FormatUsd(s->total.metered), "$158.40");
}

TEST_F(ActivityMeterTest, WithoutAPriceGpuTimeIsCountedButNothingIsChargedAtZero) {
  config_.gpu_model.clear();
  ActivityMeter meter({}, ledger_.get(), prices_, [&] { return now_; });
  meter.OnDepth(config_, 5);
  now_ += 60;
  meter.OnDepth(config_, 0);
  EXPECT_DOUBLE_EQ(meter.metered_gpu_seconds("ai-agents"), 120);
  EXPECT_EQ(*ledger_->CountRows(), 0);
  EXPECT_NE(log_.str().find("not charged"), std::string::npos);
}

TEST_F(ActivityMeterTest, SilenceIsNotChargedBeyondTheHoldLimit) {
  ActivityMeter meter(FlushEvery(std::chrono::seconds(3600)), nullptr, prices_,
                      [&] { return now_; });
  meter.OnDepth(config_, 5);  // one replica, two GPUs
  now_ += 7200;               // no reads for two hours
  meter.OnDepth(config_, 5);
  EXPECT_DOUBLE_EQ(meter.metered_gpu_seconds("ai-agents"), 300 * 2);
}

}  // namespace
}  // namespace gpuvpa::scaler
