// Decaying histogram: percentiles against exact values from the raw samples, decay, and
// reference-time shifts.
#include "recommender/model/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace gpuvpa::recommender {
namespace {

constexpr double kHalfLife = 86400;

struct Weighted {
  double value;
  double weight;
};

// The exact weighted p-percentile: the smallest sample value whose cumulative weight reaches
// p of the total.
double ExactPercentile(std::vector<Weighted> samples, double p) {
  std::sort(samples.begin(), samples.end(), [](auto& a, auto& b) { return a.value < b.value; });
  double total = 0;
  for (auto& s : samples) total += s.weight;
  double cumulative = 0;
  for (auto& s : samples) {
    cumulative += s.weight;
    if (cumulative >= p * total * (1 - 1e-12)) return s.value;
  }
  return samples.back().value;
}

double BucketWidthAt(const Bucketing& b, double v) {
  const int k = b.FindBucket(v);
  return b.BucketEnd(k) - b.BucketStart(k);
}

class HistogramPercentileTest : public ::testing::TestWithParam<int> {};

TEST_P(HistogramPercentileTest, NeverBelowTrueValueAndAtMostOneBucketAbove) {
  std::mt19937_64 rng(GetParam());
  const std::vector<Bucketing> layouts = {Bucketing::Exponential(1e12, 1e7, 1.05),
                                          Bucketing::Linear(1.0, 0.01)};
  for (const Bucketing& layout : layouts) {
    const bool linear = layout.kind() == Bucketing::Kind::kLinear;
    DecayingHistogram h(layout, kHalfLife);
    std::vector<Weighted> raw;
    std::lognormal_distribution<double> vram(std::log(8e9), 0.8);
    std::uniform_real_distribution<double> unit(0, 1);
    std::uniform_real_distribution<double> when(0, 10 * kHalfLife);
    const int n = 200 + static_cast<int>(rng() % 3000);
    for (int i = 0; i < n; ++i) {
      const double v = linear ? unit(rng) : std::min(vram(rng), 9e11);
      const double t = when(rng);
      h.AddSample(v, 1.0, t);
      raw.push_back({v, std::exp2((t - h.reference_time_s()) / kHalfLife)});
    }
    for (double p : {0.0, 0.1, 0.5, 0.9, 0.95, 0.98, 0.99, 1.0}) {
      const double exact = ExactPercentile(raw, p);
      const double got = h.Percentile(p);
      EXPECT_GE(got, exact) << "p=" << p << " linear=" << linear;
      EXPECT_LE(got - exact, BucketWidthAt(layout, exact) * (1 + 1e-12))
          << "p=" << p << " linear=" << linear;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, HistogramPercentileTest, ::testing::Range(1, 21));

TEST(DecayingHistogramTest, DecayHalvesASamplesRelativeWeightPerHalfLife) {
  const Bucketing layout = Bucketing::Linear(1.0, 0.01);
  for (int half_lives = 1; half_lives <= 5; ++half_lives) {
    DecayingHistogram h(layout, kHalfLife);
    h.AddSample(0.105, 1.0, 1000);                           // old sample, bucket 10
    h.AddSample(0.805, 1.0, 1000 + half_lives * kHalfLife);  // new sample, bucket 80
    const double ratio = h.weights()[10] / h.weights()[80];
    EXPECT_DOUBLE_EQ(ratio, std::exp2(-half_lives)) << half_lives;
  }
}

TEST(DecayingHistogramTest, ReferenceShiftChangesNoPercentile) {
  const Bucketing layout = Bucketing::Exponential(1e12, 1e7, 1.05);
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> vram(std::log(8e9), 0.8);
  // The same sample pattern, once in a window that needs no shift and once crossing the
  // exponent limit (so the reference moves and every weight is rescaled mid-stream).
  DecayingHistogram unshifted(layout, kHalfLife);
  DecayingHistogram shifted(layout, kHalfLife);
  const double offset = 95 * kHalfLife;
  for (int i = 0; i < 2000; ++i) {
    const double v = vram(rng);
    const double t = i * 0.04 * kHalfLife;  // 0 .. 80 half-lives
    unshifted.AddSample(v, 1.0, t);
    shifted.AddSample(v, 1.0, t + offset);
  }
  EXPECT_EQ(unshifted.reference_time_s(), 0);
  EXPECT_GT(shifted.reference_time_s(), 0) << "the test must actually shift";
  for (double p : {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 1.0}) {
    EXPECT_EQ(shifted.Percentile(p), unshifted.Percentile(p)) << "p=" << p;
  }
}

TEST(DecayingHistogramTest, SubtractRemovesExactlyWhatWasAdded) {
  DecayingHistogram h(Bucketing::Exponential(1e12, 1e7, 1.05), kHalfLife);
  h.AddSample(5e9, 1.0, 3600);
  h.AddSample(9e9, 1.0, 3600);
  h.SubtractSample(9e9, 1.0, 3600);
  EXPECT_EQ(h.Percentile(1.0), h.Percentile(0.0));
  h.SubtractSample(5e9, 1.0, 3600);
  EXPECT_TRUE(h.IsEmpty());
  EXPECT_EQ(h.Percentile(0.5), 0);
}

TEST(DecayingHistogramTest, TinyWeightsAreRaisedToTheMinimumSampleWeight) {
  DecayingHistogram h(Bucketing::Linear(1.0, 0.01), kHalfLife);
  h.AddSample(0.5, 0.0, 0);
  EXPECT_DOUBLE_EQ(h.total_weight(), kMinSampleWeight);
}

// The one-pass query picks the very bucket the running-sum search picks, including when the
// stored total is a little above or below the sum of the weights, for tiny weights that do not
// move a large sum, empty rows and p at the ends.
TEST(PercentileBucketTest, OnePassQueryMatchesTheRunningSumSearchBitForBit) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> weights(176), cumulative(176);
  size_t checked = 0;
  for (int round = 0; round < 20000; ++round) {
    std::fill(weights.begin(), weights.end(), 0.0);
    const int filled = static_cast<int>(rng() % 12);
    for (int i = 0; i < filled; ++i) {
      const double w = rng() % 5 == 0 ? 1e-18 : std::exp2(60 * unit(rng) - 20);
      weights[rng() % weights.size()] += w;
    }
    double sum = 0;
    for (double w : weights) sum += w;
    const double totals[] = {sum, sum * (1 + 1e-12), sum * (1 - 1e-12), sum * 1.5, 0, 5e-5};
    const double ps[] = {0, 1e-9, 0.5, 0.9, 0.98, 0.99, 1.0, 1.0 + 1e-9};
    CumulativeWeights(weights, cumulative);
    for (double total : totals)
      for (double p : ps) {
        ASSERT_EQ(PercentileBucketOfRow(weights, total, p), PercentileBucket(cumulative, total, p))
            << "round " << round << " total " << total << " p " << p;
        ++checked;
      }
  }
  EXPECT_EQ(checked, 20000u * 6 * 8);
}

}  // namespace
}  // namespace gpuvpa::recommender
