// Price book: defaults, derived prices, the worked metering example, bad input.
#include "core/cost/price_book.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config.h"
#include "core/cost/money.h"
#include "test/support/money_util.h"

namespace gpuvpa {
namespace {

TEST(MoneyTest, WorkedExampleMeteredVersusReserved) {
  // Busy 2 h a day for a 30-day month: 60 GPU-hours metered against a 730-hour reservation.
  const double price = 2.64;
  const MilliGpuSeconds metered = testing::GpuHours(2 * 30);
  const MilliGpuSeconds reserved = testing::GpuHours(kHoursPerMonth);
  EXPECT_EQ(testing::Cost(metered, price), testing::Usd(158.40));
  EXPECT_EQ(testing::Cost(reserved, price), testing::Usd(1927.20));
  EXPECT_EQ(FormatUsd(testing::Cost(metered, price)), "$158.40");
  EXPECT_EQ(FormatUsd(testing::Cost(reserved, price)), "$1,927.20");
}

TEST(MoneyTest, FormatsCentsThousandsAndSigns) {
  EXPECT_EQ(FormatUsd(0), "$0.00");
  EXPECT_EQ(FormatUsd(testing::Usd(1234567.891)), "$1,234,567.89");
  EXPECT_EQ(FormatUsd(testing::Usd(-0.05)), "-$0.05");
}

class PriceBookTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(book_.SetPrice("H100-80GB", "", kP, "test").ok()); }
  static constexpr double kP = 4.20;
  PriceBook book_;
};

TEST_F(PriceBookTest, MigProfilesArePricedByTheirBindingSliceFraction) {
  auto price = [&](const char* alloc) {
    return *book_.AllocationHourPrice(*ParseGpuAllocation(alloc), "H100-80GB");
  };
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-3g.40gb=1"), 4.0 / 8 * kP);  // memory binds: 4/8 > 3/7
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-1g.10gb=1"), 1.0 / 7 * kP);  // compute binds: 1/7 > 1/8
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-1g.20gb=1"), 2.0 / 8 * kP);
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-2g.20gb=1"), 2.0 / 7 * kP);
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-4g.40gb=1"), 4.0 / 7 * kP);
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-7g.80gb=1"), kP);
  EXPECT_DOUBLE_EQ(price("nvidia.com/mig-1g.10gb=3"), 3.0 / 7 * kP);
}

TEST_F(PriceBookTest, SharesAndFractionsArePricedByTheirFraction) {
  auto price = [&](const char* alloc) {
    return *book_.AllocationHourPrice(*ParseGpuAllocation(alloc), "H100-80GB");
  };
  EXPECT_DOUBLE_EQ(price("nvidia.com/gpu.shared=1/4"), kP / 4);
  EXPECT_DOUBLE_EQ(price("gpu-milli=460"), 0.46 * kP);
  EXPECT_DOUBLE_EQ(price("nvidia.com/gpu=8"), 8 * kP);
}

TEST_F(PriceBookTest, RegionalPriceWinsAndFallsBackToTheModelDefault) {
  ASSERT_TRUE(book_.SetPrice("NVIDIA H100 80GB HBM3", "eu-west-1", 5.0, "test").ok());
  EXPECT_EQ(*book_.GpuHourPrice("H100-80GB", "eu-west-1"), 5.0);
  EXPECT_EQ(*book_.GpuHourPrice("H100-80GB", "us-east-1"), kP);
  EXPECT_EQ(*book_.GpuHourPrice("H100-80GB"), kP);
}

TEST_F(PriceBookTest, BadInputIsAnErrorNamingTheValueNeverAZeroPrice) {
  Result<double> unknown = book_.GpuHourPrice("NVIDIA B999");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("B999"), std::string::npos);
  Result<double> unpriced = book_.GpuHourPrice("A30-24GB");
  ASSERT_FALSE(unpriced.ok()) << "a catalog model without a price is not free";
  Status negative = book_.SetPrice("H100-80GB", "", -1.5, "test");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.message().find("-1.5"), std::string::npos) << negative.message();
  EXPECT_FALSE(book_.SetPrice("H100-80GB", "", std::nan(""), "test").ok());
  Result<double> mig =
      book_.AllocationHourPrice(*ParseGpuAllocation("nvidia.com/mig-3g.20gb=1"), "H100-80GB");
  ASSERT_FALSE(mig.ok());
  EXPECT_NE(mig.status().message().find("3g.20gb"), std::string::npos);
}

TEST(PriceBookDefaultsTest, EveryDefaultNamesItsSource) {
  const PriceBook book = PriceBook::BuiltInDefaults();
  ASSERT_FALSE(book.prices().empty());
  for (const GpuPrice& p : book.prices()) {
    EXPECT_GT(p.usd_per_gpu_hour, 0) << p.gpu_model;
    EXPECT_FALSE(p.source.empty()) << p.gpu_model;
  }
  EXPECT_TRUE(book.GpuHourPrice("NVIDIA H100 80GB HBM3").ok());
}

TEST(ConfigTest, ParsesPricesCostCentersAndLedger) {
  Result<GpuvpaConfig> c = ParseConfig(R"(
region: eu-west-1
prices:
  - {gpu_model: H100-80GB, usd_per_gpu_hour: 3.10, region: eu-west-1, source: contract}
  - {gpu_model: G2, in_house: true, usd_per_gpu_hour: 1.0}
cost_centers:
  namespace_label_key: team
  namespaces: {ml: research}
ledger: {path: /tmp/x.db}
)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c->prices.GpuHourPrice("H100-80GB", c->region), 3.10);
  EXPECT_EQ(*c->prices.GpuHourPrice("G2"), 1.0);
  EXPECT_EQ(c->cost_centers.namespace_label_key, "team");
  EXPECT_EQ(c->cost_centers.namespace_cost_centers.at("ml"), "research");
  EXPECT_EQ(c->ledger_path, "/tmp/x.db");
}

TEST(ConfigTest, ErrorsNameTheKeyAndValue) {
  struct Case {
    const char* yaml;
    const char* expected;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"pricez: []", "pricez"},
           {"prices: [{gpu_model: H100-80GB, usd_per_gpu_hour: -2}]", "-2"},
           {"prices: [{gpu_model: H100-80GB, usd_per_gpu_hour: cheap}]", "cheap"},
           {"prices: [{gpu_model: H100-80GB, usd_per_gpu_hour: 1, colour: red}]", "colour"},
           {"prices: [{usd_per_gpu_hour: 1}]", "gpu_model"},
           {"cost_centers: {namespace: {a: b}}", "namespace"},
           // A misspelt model, and one priced twice (the last one no longer silently wins).
           {"prices:\n  - {gpu_model: H10O-80GB, usd_per_gpu_hour: 1}",
            "prices[0] (line 2).gpu_model: \"H10O-80GB\" is not a GPU model of the catalog"},
           {"prices:\n  - {gpu_model: H100-80GB, usd_per_gpu_hour: 1}\n"
            "  - {gpu_model: H100-80GB, region: eu, usd_per_gpu_hour: 2}\n"
            "  - {gpu_model: H100 80GB HBM3, usd_per_gpu_hour: 3}",
            "prices[2] (line 4): gpu_model \"H100 80GB HBM3\" is already priced by prices[0] "
            "(line 2)"},
           {"prices: [{gpu_model: G9, in_house: maybe, usd_per_gpu_hour: 1}]", "in_house"},
       }) {
    Result<GpuvpaConfig> r = ParseConfig(c.yaml);
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace gpuvpa
