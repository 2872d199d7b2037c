// Decaying histogram arithmetic shared by DecayingHistogram and FleetStore.
#include "recommender/model/histogram.h"

#include <algorithm>
#include <cmath>

namespace gpuvpa::recommender {
namespace {
// Relative slack for comparing a running sum with a threshold computed from the total.
constexpr double kPercentileRoundingTolerance = 1e-9;
}  // namespace

void AddToRow(HistogramRow row, int bucket, double weight) {
  row.weights[bucket] += weight;
  *row.total_weight += weight;
}

void SubtractFromRow(HistogramRow row, int bucket, double weight) {
  double& w = row.weights[bucket];
  const double removed = std::min(w, weight);
  w -= removed;
  *row.total_weight -= removed;
  if (w < kEmptyWeightEpsilon) {
    *row.total_weight -= w;
    w = 0;
  }
  if (*row.total_weight < kEmptyWeightEpsilon) *row.total_weight = 0;
}

void CumulativeWeights(std::span<const double> weights, std::span<double> cumulative) {
  double sum = 0;
  for (size_t b = 0; b < weights.size(); ++b) cumulative[b] = sum += weights[b];
}

int PercentileBucket(std::span<const double> cumulative, double total_weight, double p) {
  if (total_weight < kEmptyWeightEpsilon || cumulative.empty() || cumulative.back() <= 0) return -1;
  // The running sums are added in a different order than the total was, so allow for rounding:
  // without it a cumulative weight of 89.999999 against a threshold of 90 would skip a bucket.
  // Never look past the last running sum, and never stop in an empty bucket (threshold 0).
  const double threshold =
      std::min(p * total_weight * (1 - kPercentileRoundingTolerance), cumulative.back());
  const auto it = threshold > 0 ? std::lower_bound(cumulative.begin(), cumulative.end(), threshold)
                                : std::upper_bound(cumulative.begin(), cumulative.end(), 0.0);
  return static_cast<int>(it - cumulative.begin());
}

double PercentileValue(const Bucketing& bucketing, std::span<const double> weights,
                       double total_weight, double p) {
  std::vector<double> cumulative(weights.size());
  CumulativeWeights(weights, cumulative);
  const int b = PercentileBucket(cumulative, total_weight, p);
  return b < 0 ? 0.0 : bucketing.BucketEnd(b);
}

double DecayClock::Factor(double time_s) const {
  return std::exp2((time_s - reference_time_s_) / half_life_s_);
}

double DecayClock::ShiftFor(double time_s) {
  if ((time_s - reference_time_s_) / half_life_s_ <= kMaxDecayExponent) return 1.0;
  const double new_reference = std::floor(time_s / half_life_s_) * half_life_s_;
  const double scale = std::exp2((reference_time_s_ - new_reference) / half_life_s_);
  reference_time_s_ = new_reference;
  return scale;
}

DecayingHistogram::DecayingHistogram(Bucketing bucketing, double half_life_s)
    : bucketing_(std::move(bucketing)),
      clock_(half_life_s),
      weights_(static_cast<size_t>(bucketing_.num_buckets()), 0.0) {}

void DecayingHistogram::AddSample(double value, double weight, double time_s) {
  const double scale = clock_.ShiftFor(time_s);
  if (scale != 1.0) {
    for (double& w : weights_) w *= scale;
    total_weight_ *= scale;
  }
  AddToRow(Row(), bucketing_.FindBucket(value),
           std::max(weight, kMinSampleWeight) * clock_.Factor(time_s));
}

void DecayingHistogram::SubtractSample(double value, double weight, double time_s) {
  SubtractFromRow(Row(), bucketing_.FindBucket(value),
                  std::max(weight, kMinSampleWeight) * clock_.Factor(time_s));
}

double DecayingHistogram::Percentile(double p) const {
  return PercentileValue(bucketing_, weights_, total_weight_, p);
}

}  // namespace gpuvpa::recommender
