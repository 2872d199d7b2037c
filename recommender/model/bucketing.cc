// Bucket arithmetic. FindBucket computes a guess in closed form and then corrects it against
// the stored bucket starts, so a value always lands in the bucket whose [start, end) holds it
// whatever the floating-point rounding of the closed form.
#include "recommender/model/bucketing.h"

#include <algorithm>
#include <cmath>

namespace gpuvpa::recommender {

Bucketing Bucketing::Exponential(double max_value, double first_bucket_size, double ratio) {
  return {Kind::kExponential, max_value, first_bucket_size, ratio};
}

Bucketing Bucketing::Linear(double max_value, double bucket_size) {
  return {Kind::kLinear, max_value, bucket_size, 1.0};
}

Bucketing::Bucketing(Kind kind, double max_value, double first_bucket_size, double ratio)
    : kind_(kind), max_value_(max_value), first_bucket_size_(first_bucket_size), ratio_(ratio) {
  if (kind_ == Kind::kExponential) {
    inv_log_ratio_ = 1.0 / std::log(ratio_);
    const int n =
        static_cast<int>(std::ceil(std::log(max_value_ * (ratio_ - 1) / first_bucket_size_ + 1) *
                                   inv_log_ratio_)) +
        1;
    starts_.resize(n + 1);
    for (int i = 0; i < n; ++i)
      starts_[i] = first_bucket_size_ * (std::pow(ratio_, i) - 1) / (ratio_ - 1);
    starts_[n] = starts_[n - 1] + first_bucket_size_ * std::pow(ratio_, n - 1);
  } else {
    // The small tolerance keeps 1.0 / 0.01 (= 100.00000000000001) at 100 buckets.
    const int n = static_cast<int>(std::ceil(max_value_ / first_bucket_size_ - 1e-9));
    starts_.resize(n + 1);
    for (int i = 0; i < n; ++i) starts_[i] = i * first_bucket_size_;
    starts_[n] = max_value_;
  }
}

int Bucketing::GuessBucket(double value) const {
  if (kind_ == Kind::kLinear) return static_cast<int>(value / first_bucket_size_);
  if (value < first_bucket_size_) return 0;
  return static_cast<int>(std::log(value * (ratio_ - 1) / first_bucket_size_ + 1) * inv_log_ratio_);
}

int Bucketing::FindBucket(double value) const {
  const int last = num_buckets() - 1;
  if (!(value > 0)) return 0;  // also maps NaN to bucket 0
  if (value >= starts_[last]) return last;
  int b = std::clamp(GuessBucket(value), 0, last);
  while (b > 0 && value < starts_[b]) --b;
  while (b < last && value >= starts_[b + 1]) ++b;
  return b;
}

bool Bucketing::operator==(const Bucketing& other) const {
  return kind_ == other.kind_ && max_value_ == other.max_value_ &&
         first_bucket_size_ == other.first_bucket_size_ && ratio_ == other.ratio_ &&
         num_buckets() == other.num_buckets();
}

}  // namespace gpuvpa::recommender
