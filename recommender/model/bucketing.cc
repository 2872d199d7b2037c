// Bucket arithmetic. FindBucket guesses (in closed form, or for exponential layouts from a table
// indexed by the bits of a double) and then corrects the guess against the stored bucket starts,
// so a value always lands in the bucket whose [start, end) holds it whatever the guess.
#include "recommender/model/bucketing.h"

#include <algorithm>
#include <bit>
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
    BuildGuessTable();
  } else {
    // The small tolerance keeps 1.0 / 0.01 (= 100.00000000000001) at 100 buckets.
    const int n = static_cast<int>(std::ceil(max_value_ / first_bucket_size_ - 1e-9));
    starts_.resize(n + 1);
    for (int i = 0; i < n; ++i) starts_[i] = i * first_bucket_size_;
    starts_[n] = max_value_;
  }
}

namespace {
// The slot of x >= 1 among `bits` mantissa bits per binary exponent: (exponent << bits) | the
// top mantissa bits, read off the double's representation (its biased exponent and mantissa
// are contiguous, so one shift gives both).
size_t GuessSlot(double x, int bits) {
  return static_cast<size_t>((std::bit_cast<uint64_t>(x) >> (52 - bits)) -
                             (uint64_t{1023} << bits));
}
}  // namespace

void Bucketing::BuildGuessTable() {
  scale_ = (ratio_ - 1) / first_bucket_size_;
  // A slot spans at most log2(1 + 2^-bits) < 1.45 * 2^-bits in log2(x), a bucket log2(ratio):
  // two bits more than that needs leaves about one slot in six holding a bucket boundary.
  const double bucket_log2 = std::log2(ratio_);
  if (!(bucket_log2 > 0) || num_buckets() > UINT16_MAX) return;
  const int bits = static_cast<int>(std::ceil(std::log2(1.45 / bucket_log2))) + 2;
  const double x_max = starts_.back() * scale_ + 1;
  if (bits < 1 || bits > 14 || !(x_max < 0x1p60)) return;
  // Filled through FindBucket itself, which guesses by the logarithm while guess_ is empty.
  std::vector<uint16_t> table(GuessSlot(x_max, bits) + 1);
  const double slot_width = std::ldexp(1.0, -bits);
  for (size_t slot = 0; slot < table.size(); ++slot) {
    // The slot's lowest x, and the bucket of the value it stands for: a guess at most a bucket
    // or two low for the rest of the slot, which FindBucket's walk against starts_ corrects.
    const int exponent = static_cast<int>(slot >> bits);
    const double x = std::ldexp(
        1.0 + static_cast<double>(slot & ((size_t{1} << bits) - 1)) * slot_width, exponent);
    table[slot] = static_cast<uint16_t>(FindBucket((x - 1) / scale_));
  }
  guess_bits_ = bits;
  guess_ = std::move(table);
}

int Bucketing::GuessBucket(double value) const {
  if (kind_ == Kind::kLinear) return static_cast<int>(value / first_bucket_size_);
  if (value < first_bucket_size_) return 0;
  if (!guess_.empty())
    return guess_[std::min(GuessSlot(value * scale_ + 1, guess_bits_), guess_.size() - 1)];
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
