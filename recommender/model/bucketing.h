// Bucket layouts for decaying histograms: exponential (VRAM bytes, like VPA's memory histogram)
// and linear (SM duty cycle 0..1).
#pragma once

#include <cstdint>
#include <vector>

namespace gpuvpa::recommender {

class Bucketing {
 public:
  enum class Kind { kExponential = 1, kLinear = 2 };

  // Bucket n has size first * ratio^n and starts at first * (ratio^n - 1) / (ratio - 1); enough
  // buckets to reach max_value. Values past the end fall into the last bucket.
  static Bucketing Exponential(double max_value, double first_bucket_size, double ratio);
  // Buckets of equal size covering [0, max_value]; max_value itself falls into the last bucket.
  static Bucketing Linear(double max_value, double bucket_size);

  int num_buckets() const { return static_cast<int>(starts_.size()) - 1; }
  int FindBucket(double value) const;
  double BucketStart(int bucket) const { return starts_[bucket]; }
  double BucketEnd(int bucket) const { return starts_[bucket + 1]; }

  Kind kind() const { return kind_; }
  double max_value() const { return max_value_; }
  double first_bucket_size() const { return first_bucket_size_; }
  double ratio() const { return ratio_; }
  bool operator==(const Bucketing& other) const;

 private:
  Bucketing(Kind kind, double max_value, double first_bucket_size, double ratio);
  int GuessBucket(double value) const;
  void BuildGuessTable();

  Kind kind_;
  double max_value_;
  double first_bucket_size_;
  double ratio_;
  double inv_log_ratio_ = 0;    // cached for FindBucket on the hot path
  std::vector<double> starts_;  // num_buckets + 1 entries; the last is the end of the last bucket
  // Exponential layouts: the bucket of x = value * scale_ + 1 (so bucket n holds x in
  // [ratio^n, ratio^(n+1))), looked up by x's binary exponent and its top `guess_bits_`
  // mantissa bits instead of computing a logarithm; empty when the slots would be wider than a
  // bucket (a ratio very close to 1), and the logarithm then guesses.
  double scale_ = 0;
  int guess_bits_ = 0;
  std::vector<uint16_t> guess_;
};

}  // namespace gpuvpa::recommender
