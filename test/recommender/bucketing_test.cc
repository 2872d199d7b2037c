// Bucket layouts: every value lands in the bucket that holds it.
#include "recommender/model/bucketing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace gpuvpa::recommender {
namespace {

TEST(BucketingTest, VpaMemoryLayoutHas176Buckets) {
  Bucketing b = Bucketing::Exponential(1e12, 1e7, 1.05);
  EXPECT_EQ(b.num_buckets(), 176);
  EXPECT_EQ(b.BucketStart(0), 0);
  EXPECT_DOUBLE_EQ(b.BucketEnd(0), 1e7);
  EXPECT_NEAR(b.BucketEnd(1) - b.BucketStart(1), 1e7 * 1.05, 1e-3);
  EXPECT_GE(b.BucketEnd(b.num_buckets() - 1), 1e12);
}

TEST(BucketingTest, LinearDutyCycleLayoutHas100BucketsAndHoldsOne) {
  Bucketing b = Bucketing::Linear(1.0, 0.01);
  EXPECT_EQ(b.num_buckets(), 100);
  EXPECT_EQ(b.FindBucket(1.0), 99);
  EXPECT_EQ(b.FindBucket(0.0), 0);
  EXPECT_EQ(b.FindBucket(0.5), 50);
  EXPECT_EQ(b.BucketEnd(99), 1.0);
}

TEST(BucketingTest, EveryValueLandsInsideItsBucket) {
  std::mt19937_64 rng(7);
  for (const Bucketing& b :
       {Bucketing::Exponential(1e12, 1e7, 1.05), Bucketing::Linear(1.0, 0.01)}) {
    // Exponential layouts are drawn log-uniformly so that every decade is exercised.
    std::uniform_real_distribution<double> unit(0, 1);
    const bool linear = b.kind() == Bucketing::Kind::kLinear;
    for (int i = 0; i < 100000; ++i) {
      const double v = linear ? unit(rng) : std::exp(unit(rng) * std::log(b.max_value()));
      const int k = b.FindBucket(v);
      ASSERT_LE(b.BucketStart(k), v);
      ASSERT_LT(v, b.BucketEnd(k) + (k == b.num_buckets() - 1 ? 1e-12 : 0));
    }
    for (int k = 0; k < b.num_buckets(); ++k) EXPECT_EQ(b.FindBucket(b.BucketStart(k)), k) << k;
  }
}

// FindBucket guesses from a table for exponential layouts (from a logarithm where the ratio is
// too close to 1 for one): whatever the guess, the bucket is the one whose [start, end) holds
// the value, here against a binary search of the starts, at each start and the doubles beside
// it, and at random values over every decade.
TEST(BucketingTest, ExponentialGuessesNeverChangeTheBucket) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  for (const Bucketing& b :
       {Bucketing::Exponential(1e12, 1e7, 1.05), Bucketing::Exponential(1.5e11, 1 << 20, 1.05),
        Bucketing::Exponential(1e15, 1, 2.0), Bucketing::Exponential(1e9, 1e3, 1.001),
        Bucketing::Exponential(1e6, 10, 1.00001)}) {
    std::vector<double> starts;
    for (int k = 0; k <= b.num_buckets(); ++k)
      starts.push_back(k < b.num_buckets() ? b.BucketStart(k) : b.BucketEnd(k - 1));
    const auto expected = [&](double v) {
      if (!(v > 0)) return 0;
      const auto it = std::upper_bound(starts.begin(), starts.end() - 1, v);
      return std::min(static_cast<int>(it - starts.begin()) - 1, b.num_buckets() - 1);
    };
    std::vector<double> values;
    for (double s : starts)
      values.insert(values.end(), {s, std::nextafter(s, 0.0), std::nextafter(s, 1e300)});
    for (int i = 0; i < 200000; ++i)
      values.push_back(std::exp(unit(rng) * std::log(b.max_value() * 1.1)));
    for (double v : values) ASSERT_EQ(b.FindBucket(v), expected(v)) << v << " of " << b.max_value();
  }
}

TEST(BucketingTest, ValuesPastTheEndClampToTheLastBucket) {
  Bucketing b = Bucketing::Exponential(1e12, 1e7, 1.05);
  EXPECT_EQ(b.FindBucket(1e15), b.num_buckets() - 1);
  EXPECT_EQ(b.FindBucket(-5), 0);
}

}  // namespace
}  // namespace gpuvpa::recommender
