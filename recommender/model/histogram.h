// Decaying histograms as in the Kubernetes VPA recommender: new samples get exponentially
// growing weights (2^((t - reference) / half_life)) instead of old ones being decayed, and the
// reference time moves forward, rescaling every weight, before the exponent can overflow.
//
// The bucket arithmetic works on plain weight rows so that the standalone DecayingHistogram and
// the dense rows of the FleetStore share one implementation.
#pragma once

#include <span>
#include <vector>

#include "recommender/model/bucketing.h"

namespace gpuvpa::recommender {

// Below this a bucket (or a whole histogram) counts as empty; absorbs rounding left behind when
// a sample is subtracted again (VPA: epsilon = 1e-4).
inline constexpr double kEmptyWeightEpsilon = 1e-4;
// Samples never weigh less than this, so a tiny request cannot vanish (VPA: minSampleWeight).
inline constexpr double kMinSampleWeight = 0.1;
// Past 2^100 the reference time is shifted: far from double's 2^1023, with room for the sums
// of many samples (VPA: maxDecayExponent).
inline constexpr double kMaxDecayExponent = 100;

// One histogram's storage: a weight per bucket and the running total.
struct HistogramRow {
  std::span<double> weights;
  double* total_weight;
};

void AddToRow(HistogramRow row, int bucket, double weight);
// Removes weight added earlier; a bucket left below epsilon is cleared.
void SubtractFromRow(HistogramRow row, int bucket, double weight);
// Running sums of a row: cumulative[b] = weights[0] + ... + weights[b]. Computed once per
// histogram, it answers any number of percentiles by binary search.
void CumulativeWeights(std::span<const double> weights, std::span<double> cumulative);
// The first bucket where the cumulative weight reaches p * total; -1 when the row is empty.
int PercentileBucket(std::span<const double> cumulative, double total_weight, double p);
// PercentileBucket of a row's weights, in one pass without a buffer (a single query: the
// daemon's Get): the same bucket as PercentileBucket over CumulativeWeights, bit for bit.
int PercentileBucketOfRow(std::span<const double> weights, double total_weight, double p);
// The conservative p-percentile of a row: the END of the percentile bucket (0 when empty).
// For one-off use; passes over many percentiles compute CumulativeWeights once.
double PercentileValue(const Bucketing& bucketing, std::span<const double> weights,
                       double total_weight, double p);

// The decay clock: reference time and half-life shared by every histogram it stamps.
class DecayClock {
 public:
  explicit DecayClock(double half_life_s, double reference_time_s = 0)
      : half_life_s_(half_life_s), reference_time_s_(reference_time_s) {}

  // The multiplier a sample taken at `time_s` carries relative to one at the reference time.
  double Factor(double time_s) const;
  // When a sample at `time_s` would need an exponent past kMaxDecayExponent, moves the reference
  // to the start of that half-life and returns the factor every stored weight must be
  // multiplied by; returns 1 when no shift is needed.
  double ShiftFor(double time_s);
  // Whether ShiftFor(time_s) would move the reference (and so rescale every stored weight).
  bool WouldShift(double time_s) const {
    return (time_s - reference_time_s_) / half_life_s_ > kMaxDecayExponent;
  }

  double half_life_s() const { return half_life_s_; }
  double reference_time_s() const { return reference_time_s_; }

 private:
  double half_life_s_;
  double reference_time_s_;
};

// A single decaying histogram with its own clock. The FleetStore keeps the same data densely
// for many workloads; this class is the reference form and what tests and benchmarks drive.
class DecayingHistogram {
 public:
  DecayingHistogram(Bucketing bucketing, double half_life_s);

  void AddSample(double value, double weight, double time_s);
  void SubtractSample(double value, double weight, double time_s);
  // Conservative percentile (end of the bucket), 0 when empty.
  double Percentile(double p) const;
  bool IsEmpty() const { return total_weight_ < kEmptyWeightEpsilon; }
  double total_weight() const { return total_weight_; }
  double reference_time_s() const { return clock_.reference_time_s(); }
  const Bucketing& bucketing() const { return bucketing_; }
  std::span<const double> weights() const { return weights_; }

 private:
  HistogramRow Row() { return {weights_, &total_weight_}; }

  Bucketing bucketing_;
  DecayClock clock_;
  std::vector<double> weights_;
  double total_weight_ = 0;
};

}  // namespace gpuvpa::recommender
