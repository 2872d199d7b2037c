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

namespace {

// The exact one-pass walk: PercentileBucket over running sums added in the same order, so every
// comparison sees the same doubles. An empty bucket leaves the sum as it is (x + 0 == x), so only
// the filled ones are added. The threshold's cap (the last running sum) only binds when the walk
// ends below it; lower_bound of the last sum is then the bucket where the running sum last grew.
int ForwardPercentileBucket(std::span<const double> weights, double threshold) {
  double sum = 0;
  int last_growth = -1;
  for (size_t b = 0; b < weights.size(); ++b) {
    if (weights[b] == 0) continue;
    const double next = sum + weights[b];
    if (next != sum) last_growth = static_cast<int>(b);
    sum = next;
    if (threshold > 0 ? sum >= threshold : sum > 0) return static_cast<int>(b);
  }
  return sum > 0 ? last_growth : -1;
}

// Rounding of a sum of at most a few hundred non-negative doubles, in any order, stays below
// n * 2^-53 of the sum (about 3e-14 for 512 buckets): a decision with more room than this is the
// same whatever the order of the additions.
constexpr double kOrderIndependentMargin = 1e-12;

}  // namespace

int PercentileBucketOfRow(std::span<const double> weights, double total_weight, double p) {
  if (total_weight < kEmptyWeightEpsilon || weights.empty()) return -1;
  const double threshold = p * total_weight * (1 - kPercentileRoundingTolerance);
  if (!(threshold > 0) || weights.size() > 512) return ForwardPercentileBucket(weights, threshold);
  // High percentiles sit near the top: sum the row four lanes at a time (no dependency chain),
  // then walk down from the top. The prefix through bucket b is the sum less what lies above b.
  // Where a comparison is closer than the rounding of either order could move it, the exact
  // forward walk decides, so the answer is always the forward walk's.
  double lanes[4] = {0, 0, 0, 0};
  const size_t n = weights.size();
  size_t b = 0;
  for (; b + 4 <= n; b += 4)
    for (size_t l = 0; l < 4; ++l) lanes[l] += weights[b + l];
  for (; b < n; ++b) lanes[0] += weights[b];
  const double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  if (!(sum > 0)) return -1;
  const double margin = kOrderIndependentMargin * sum;
  if (std::abs(threshold - sum) <= margin) return ForwardPercentileBucket(weights, threshold);
  if (threshold > sum) return ForwardPercentileBucket(weights, threshold);  // capped: rare
  double above = 0;
  for (size_t i = n; i-- > 0;) {
    if (weights[i] == 0) continue;
    const double through = sum - above;  // the prefix sum through bucket i
    above += weights[i];
    const double before = sum - above;  // the prefix sum before bucket i
    if (before < threshold) {
      if (through - threshold <= margin || threshold - before <= margin)
        return ForwardPercentileBucket(weights, threshold);
      return static_cast<int>(i);
    }
  }
  return ForwardPercentileBucket(weights, threshold);
}

double PercentileValue(const Bucketing& bucketing, std::span<const double> weights,
                       double total_weight, double p) {
  const int b = PercentileBucketOfRow(weights, total_weight, p);
  return b < 0 ? 0.0 : bucketing.BucketEnd(b);
}

double DecayClock::Factor(double time_s) const {
  return std::exp2((time_s - reference_time_s_) / half_life_s_);
}

double DecayClock::ShiftFor(double time_s) {
  if (!WouldShift(time_s)) return 1.0;
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
