// Each estimator alone, over a fixed base.
#include "recommender/logic/estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "recommender/model/histogram.h"

namespace gpuvpa::recommender {
namespace {

class ConstantEstimator final : public Estimator {
 public:
  explicit ConstantEstimator(double v) : v_(v) {}
  double Estimate(const EstimatorInput&) const override { return v_; }

 private:
  double v_;
};

std::unique_ptr<Estimator> Constant(double v) { return std::make_unique<ConstantEstimator>(v); }

class EstimatorTest : public ::testing::Test {
 protected:
  EstimatorInput Input(HistoryEvidence history = {2 * 86400.0, 2880, 1440}, double floor = 0) {
    CumulativeWeights(weights_, cumulative_);
    return EstimatorInput{layout_, cumulative_, total_, history, floor, 0};
  }
  Bucketing layout_ = Bucketing::Linear(1.0, 0.01);
  std::vector<double> weights_ = std::vector<double>(100, 0.0);
  std::vector<double> cumulative_ = std::vector<double>(100, 0.0);
  double total_ = 0;
};

TEST_F(EstimatorTest, PercentileReadsTheHistogramBucketEnd) {
  for (int b = 0; b < 10; ++b) AddToRow({weights_, &total_}, b * 10, 1.0);  // 0.00, 0.10, .. 0.90
  EXPECT_DOUBLE_EQ(NewPercentileEstimator(0.5)->Estimate(Input()), 0.41);
  EXPECT_DOUBLE_EQ(NewPercentileEstimator(0.9)->Estimate(Input()), 0.81);
  EXPECT_DOUBLE_EQ(NewPercentileEstimator(1.0)->Estimate(Input()), 0.91);
}

TEST_F(EstimatorTest, TightPercentileNeverPassesTheLargestValueHeld) {
  for (int b = 0; b < 10; ++b) AddToRow({weights_, &total_}, b * 10, 1.0);  // 0.00, 0.10, .. 0.90
  EstimatorInput in = Input();
  in.exact_max = 0.905;  // inside the top bucket [0.90, 0.91)
  EXPECT_DOUBLE_EQ(NewTightPercentileEstimator(1.0)->Estimate(in), 0.905);
  EXPECT_DOUBLE_EQ(NewTightPercentileEstimator(0.5)->Estimate(in), 0.41);  // below: unchanged
  in.exact_max = 0;  // unknown: the bucket end
  EXPECT_DOUBLE_EQ(NewTightPercentileEstimator(1.0)->Estimate(in), 0.91);
}

TEST_F(EstimatorTest, VariationMarginGrowsWithTheSpreadBetweenHighAndMid) {
  // high 100, mid 60: variation 0.4; margin 0.05 + 0.5 x 0.4 = 0.25.
  EXPECT_DOUBLE_EQ(WithVariationMargin(0.05, 0.5, 0.3, Constant(100), Constant(60), Constant(100))
                       ->Estimate(Input()),
                   125);
  // Capped at the maximum, and a flat series gets the minimum.
  EXPECT_DOUBLE_EQ(WithVariationMargin(0.05, 2, 0.3, Constant(100), Constant(60), Constant(100))
                       ->Estimate(Input()),
                   130);
  EXPECT_DOUBLE_EQ(WithVariationMargin(0.05, 2, 0.3, Constant(100), Constant(100), Constant(100))
                       ->Estimate(Input()),
                   105);
}

TEST_F(EstimatorTest, MarginScalesTheBase) {
  EXPECT_DOUBLE_EQ(WithMargin(0.15, Constant(100))->Estimate(Input()), 115);
}

TEST_F(EstimatorTest, ConfidenceMultiplierFollowsVpaFormula) {
  // Confidence 2 (two days, enough samples): upper (1 + 1/2)^1, lower (1 + 0.001/2)^-2.
  EXPECT_DOUBLE_EQ(WithConfidenceMultiplier(1.0, 1.0, Constant(100))->Estimate(Input()), 150);
  EXPECT_DOUBLE_EQ(WithConfidenceMultiplier(0.001, -2.0, Constant(100))->Estimate(Input()),
                   100 * std::pow(1.0005, -2));
  // Few samples bound confidence even with long history: 720 samples = half a day.
  EXPECT_DOUBLE_EQ(
      WithConfidenceMultiplier(1.0, 1.0, Constant(100))->Estimate(Input({5 * 86400.0, 720, 1440})),
      300);
  // No history at all stays finite.
  EXPECT_TRUE(std::isfinite(
      WithConfidenceMultiplier(1.0, 1.0, Constant(100))->Estimate(Input({0, 0, 1440}))));
}

TEST_F(EstimatorTest, MinimumRaisesButNeverLowers) {
  EXPECT_EQ(WithMinimum(50, Constant(10))->Estimate(Input()), 50);
  EXPECT_EQ(WithMinimum(50, Constant(70))->Estimate(Input()), 70);
}

TEST_F(EstimatorTest, ObservedFloorRaisesToTheLatestPeak) {
  EXPECT_EQ(WithObservedFloor(Constant(10))->Estimate(Input({}, 25)), 25);
  EXPECT_EQ(WithObservedFloor(Constant(30))->Estimate(Input({}, 25)), 30);
}

TEST(HistoryEvidenceTest, ConfidenceIsDaysBoundedBySamples) {
  EXPECT_DOUBLE_EQ((HistoryEvidence{3 * 86400.0, 10 * 1440, 1440}).Confidence(), 3);
  EXPECT_DOUBLE_EQ((HistoryEvidence{3 * 86400.0, 1440, 1440}).Confidence(), 1);
}

}  // namespace
}  // namespace gpuvpa::recommender
