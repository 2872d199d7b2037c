// Estimators: small values composed by decoration, as VPA's
// WithConfidenceMultiplier(WithMargin(NewPercentileEstimator(0.9))). Each does one
// transformation of the value its base produces and is tested alone.
#pragma once

#include <memory>
#include <span>

#include "recommender/model/bucketing.h"

namespace gpuvpa::recommender {

// How much history backs a histogram.
struct HistoryEvidence {
  double history_s = 0;
  double sample_count = 0;
  double samples_per_day = 1440;  // one sample a minute

  // VPA's confidence: days of history, but no more than the samples could cover.
  double Confidence() const;
};

// What an estimator reads: one histogram (as running sums, see CumulativeWeights) and its
// evidence.
struct EstimatorInput {
  const Bucketing& bucketing;
  std::span<const double> cumulative_weights;
  double total_weight = 0;
  HistoryEvidence history;
  double observed_floor = 0;  // e.g. the latest VRAM window's peak
  // The largest value the histogram holds, exactly (0: unknown). Percentiles return a bucket's
  // end, up to one bucket width (5 % for VRAM) above every value in it; no value is above this.
  double exact_max = 0;
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual double Estimate(const EstimatorInput& input) const = 0;
};

// The p-percentile of the histogram (end of its bucket: never below the true value).
std::unique_ptr<Estimator> NewPercentileEstimator(double p);
// The p-percentile, but never above input.exact_max: when p falls in the top bucket its end
// overshoots the largest value held, and no true percentile is above that value.
std::unique_ptr<Estimator> NewTightPercentileEstimator(double p);
// base * (1 + margin), where the margin follows how much the values vary: margin = min_margin +
// gain * (high - mid) / high, at most max_margin (`high` and `mid` are estimators over the same
// input, e.g. p98 and p50 of hourly VRAM peaks). A flat series (a model server) gets min_margin;
// one whose peaks swing gets more, since its next peak is less predictable.
std::unique_ptr<Estimator> WithVariationMargin(double min_margin, double gain, double max_margin,
                                               std::unique_ptr<Estimator> high,
                                               std::unique_ptr<Estimator> mid,
                                               std::unique_ptr<Estimator> base);
// base * (1 + margin_fraction).
std::unique_ptr<Estimator> WithMargin(double margin_fraction, std::unique_ptr<Estimator> base);
// base * (1 + multiplier / confidence)^exponent: wide bounds while history is short.
std::unique_ptr<Estimator> WithConfidenceMultiplier(double multiplier, double exponent,
                                                    std::unique_ptr<Estimator> base);
// max(base, minimum).
std::unique_ptr<Estimator> WithMinimum(double minimum, std::unique_ptr<Estimator> base);
// max(base, input.observed_floor): VRAM is a hard limit, never recommend below what was just used.
std::unique_ptr<Estimator> WithObservedFloor(std::unique_ptr<Estimator> base);

}  // namespace gpuvpa::recommender
