// Estimator implementations.
#include "recommender/logic/estimator.h"

#include <algorithm>
#include <cmath>

#include "recommender/model/histogram.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kSecondsPerDay = 24 * 3600.0;
// Keeps (1 + m / confidence) finite when there is no history at all.
constexpr double kMinConfidence = 1e-3;

class PercentileEstimator final : public Estimator {
 public:
  explicit PercentileEstimator(double p) : p_(p) {}
  double Estimate(const EstimatorInput& in) const override {
    const int b = PercentileBucket(in.cumulative_weights, in.total_weight, p_);
    return b < 0 ? 0.0 : in.bucketing.BucketEnd(b);
  }

 private:
  double p_;
};

class TightPercentileEstimator final : public Estimator {
 public:
  explicit TightPercentileEstimator(double p) : percentile_(p) {}
  double Estimate(const EstimatorInput& in) const override {
    const double v = percentile_.Estimate(in);
    return in.exact_max > 0 ? std::min(v, in.exact_max) : v;
  }

 private:
  PercentileEstimator percentile_;
};

class VariationMarginEstimator final : public Estimator {
 public:
  VariationMarginEstimator(double min_margin, double gain, double max_margin,
                           std::unique_ptr<Estimator> high, std::unique_ptr<Estimator> mid,
                           std::unique_ptr<Estimator> base)
      : min_margin_(min_margin),
        gain_(gain),
        max_margin_(max_margin),
        high_(std::move(high)),
        mid_(std::move(mid)),
        base_(std::move(base)) {}
  double Estimate(const EstimatorInput& in) const override {
    const double high = high_->Estimate(in);
    const double variation = high > 0 ? std::max(0.0, high - mid_->Estimate(in)) / high : 0;
    const double margin = std::min(max_margin_, min_margin_ + gain_ * variation);
    return base_->Estimate(in) * (1 + std::max(min_margin_, margin));
  }

 private:
  double min_margin_;
  double gain_;
  double max_margin_;
  std::unique_ptr<Estimator> high_;
  std::unique_ptr<Estimator> mid_;
  std::unique_ptr<Estimator> base_;
};

class MarginEstimator final : public Estimator {
 public:
  MarginEstimator(double margin, std::unique_ptr<Estimator> base)
      : margin_(margin), base_(std::move(base)) {}
  double Estimate(const EstimatorInput& in) const override {
    return base_->Estimate(in) * (1 + margin_);
  }

 private:
  double margin_;
  std::unique_ptr<Estimator> base_;
};

class ConfidenceMultiplierEstimator final : public Estimator {
 public:
  ConfidenceMultiplierEstimator(double multiplier, double exponent, std::unique_ptr<Estimator> base)
      : multiplier_(multiplier), exponent_(exponent), base_(std::move(base)) {}
  double Estimate(const EstimatorInput& in) const override {
    const double confidence = std::max(in.history.Confidence(), kMinConfidence);
    return base_->Estimate(in) * std::pow(1 + multiplier_ / confidence, exponent_);
  }

 private:
  double multiplier_;
  double exponent_;
  std::unique_ptr<Estimator> base_;
};

class MinimumEstimator final : public Estimator {
 public:
  MinimumEstimator(double minimum, std::unique_ptr<Estimator> base)
      : minimum_(minimum), base_(std::move(base)) {}
  double Estimate(const EstimatorInput& in) const override {
    return std::max(base_->Estimate(in), minimum_);
  }

 private:
  double minimum_;
  std::unique_ptr<Estimator> base_;
};

class ObservedFloorEstimator final : public Estimator {
 public:
  explicit ObservedFloorEstimator(std::unique_ptr<Estimator> base) : base_(std::move(base)) {}
  double Estimate(const EstimatorInput& in) const override {
    return std::max(base_->Estimate(in), in.observed_floor);
  }

 private:
  std::unique_ptr<Estimator> base_;
};

}  // namespace

double HistoryEvidence::Confidence() const {
  return std::min(history_s / kSecondsPerDay, sample_count / samples_per_day);
}

std::unique_ptr<Estimator> NewPercentileEstimator(double p) {
  return std::make_unique<PercentileEstimator>(p);
}

std::unique_ptr<Estimator> NewTightPercentileEstimator(double p) {
  return std::make_unique<TightPercentileEstimator>(p);
}

std::unique_ptr<Estimator> WithVariationMargin(double min_margin, double gain, double max_margin,
                                               std::unique_ptr<Estimator> high,
                                               std::unique_ptr<Estimator> mid,
                                               std::unique_ptr<Estimator> base) {
  return std::make_unique<VariationMarginEstimator>(min_margin, gain, max_margin, std::move(high),
                                                    std::move(mid), std::move(base));
}

std::unique_ptr<Estimator> WithMargin(double margin_fraction, std::unique_ptr<Estimator> base) {
  return std::make_unique<MarginEstimator>(margin_fraction, std::move(base));
}

std::unique_ptr<Estimator> WithConfidenceMultiplier(double multiplier, double exponent,
                                                    std::unique_ptr<Estimator> base) {
  return std::make_unique<ConfidenceMultiplierEstimator>(multiplier, exponent, std::move(base));
}

std::unique_ptr<Estimator> WithMinimum(double minimum, std::unique_ptr<Estimator> base) {
  return std::make_unique<MinimumEstimator>(minimum, std::move(base));
}

std::unique_ptr<Estimator> WithObservedFloor(std::unique_ptr<Estimator> base) {
  return std::make_unique<ObservedFloorEstimator>(std::move(base));
}

}  // namespace gpuvpa::recommender
