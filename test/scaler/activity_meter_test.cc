// Metering: replica estimates held between reads, priced rows in the ledger.
#include "scaler/service/activity_meter.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/net/metrics_page.h"
#include "scaler/service/scaler_metrics.h"
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
  auto registry = std::make_shared<prometheus::Registry>();
  ScalerMetrics metrics(registry, {"ai-agents"});
  ActivityMeter meter(
      {}, ledger_.get(), prices_, [&] { return now_; }, &metrics);
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
  // /metrics accrues what the row charged: gpuvpa_cost_usd_total{kind="metered"}.
  const std::string text = MetricsPage(*registry).body;
  const std::string series = "gpuvpa_cost_usd_total{cost_center=\"ai-agents\",kind=\"metered\"} ";
  const size_t at = text.find(series);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NEAR(std::stod(text.substr(at + series.size())), MicroToUsd(s->groups[0].metered), 1e-9);
}

// A scaler killed with a period open: the next start writes the period as saved (every 10 s
// by the housekeeping), so at most the time since the last save is lost; a period whose row
// the killed run wrote after its save is not charged twice; a clean stop leaves nothing to
// recover.
TEST_F(ActivityMeterTest, AKilledRunsOpenPeriodsAreWrittenByTheNextStartOnce) {
  ActivityMeterOptions o = FlushEvery(std::chrono::seconds(3600));
  o.open_periods_path = tmp_.Path("metered.open");
  o.open_periods_interval = std::chrono::seconds(10);
  {
    ActivityMeter killed(o, ledger_.get(), prices_, [&] { return now_; });
    killed.OnDepth(config_, 11);  // 3 replicas x 2 GPUs from now on
    for (int i = 0; i < 10; ++i) {
      now_ += 10;
      killed.OnDepth(config_, 11);
      killed.EvictIdle();  // the housekeeping: saves at t = 10, 20, ..., 100
    }
    now_ += 7;  // 7 s more, then SIGKILL: the meter is gone without FlushAll
    killed.OnDepth(config_, 11);
  }
  EXPECT_EQ(*ledger_->CountRows(), 0);
  ActivityMeter next(o, ledger_.get(), prices_, [&] { return now_; });
  Result<size_t> recovered = next.RecoverOpenPeriods();
  ASSERT_TRUE(recovered.ok()) << recovered.status().message();
  EXPECT_EQ(*recovered, 1u);
  EXPECT_FALSE(std::filesystem::exists(o.open_periods_path));
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok());
  // 100 s of 3 replicas x 2 GPUs were saved; the last 7 s were lost (at most the interval).
  EXPECT_EQ(s->total.metered_gpu_time, 100 * 3 * 2 * 1000);
  EXPECT_EQ(s->total.metered, testing::Cost(600'000, 2.64));
  EXPECT_EQ(*next.RecoverOpenPeriods(), 0u) << "nothing left";

  // The killed run wrote its row (scale to zero) after its last save, then died.
  config_.name = "second";
  {
    ActivityMeter killed(o, ledger_.get(), prices_, [&] { return now_; });
    killed.OnDepth(config_, 6);  // 2 replicas
    now_ += 10;
    killed.EvictIdle();  // saved: its first 10 s
    now_ += 5;
    killed.OnDepth(config_, 0);  // scaled to zero: the row of all 15 s is written
  }
  EXPECT_EQ(*ledger_->CountRows(), 2);
  ActivityMeter again(o, ledger_.get(), prices_, [&] { return now_; });
  EXPECT_EQ(*again.RecoverOpenPeriods(), 0u) << "the saved period's row exists: not twice";
  EXPECT_EQ(*ledger_->CountRows(), 2);
  EXPECT_EQ(ledger_->QueryShowback({})->total.metered_gpu_time, (100 * 3 * 2 + 15 * 2 * 2) * 1000);
  EXPECT_NE(log_.str().find("closed by the earlier run already"), std::string::npos) << log_.str();
  // A clean stop: FlushAll closes everything and leaves no file.
  {
    ActivityMeter clean(o, ledger_.get(), prices_, [&] { return now_; });
    clean.OnDepth(config_, 6);
    now_ += 10;
    clean.EvictIdle();
    EXPECT_TRUE(std::filesystem::exists(o.open_periods_path));
    now_ += 1;
    ASSERT_TRUE(clean.FlushAll().ok());
  }
  EXPECT_FALSE(std::filesystem::exists(o.open_periods_path));
  // A corrupt file is moved aside and said so.
  std::ofstream(o.open_periods_path) << "{\"version\": 1, \"periods\": [{\"namespace\": 3}]}";
  ActivityMeter after(o, ledger_.get(), prices_, [&] { return now_; });
  Result<size_t> refused = after.RecoverOpenPeriods();
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(std::filesystem::exists(o.open_periods_path + ".corrupt"));
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
