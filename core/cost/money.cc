// Checked money arithmetic and formatting.
#include "core/cost/money.h"

#include <cstdio>
#include <cstdlib>

namespace gpuvpa {
namespace {
// 2^63 as a double: the first value that does not fit in an int64.
constexpr double kInt64Limit = 9223372036854775808.0;
}  // namespace

Result<int64_t> CheckedRound(double value, std::string_view what) {
  const double r = std::round(value);
  if (!std::isfinite(r) || r >= kInt64Limit || r < -kInt64Limit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", value);
    return InvalidArgumentError(std::string(what) + " " + buf + " is out of range");
  }
  return static_cast<int64_t>(r);
}

Result<MicroUsd> UsdToMicro(double usd) { return CheckedRound(usd * 1e6, "amount in USD"); }

Result<MilliGpuSeconds> GpuSecondsToMilli(double gpu_seconds) {
  return CheckedRound(gpu_seconds * 1000, "GPU time in seconds");
}

Result<MicroUsd> PriceGpuTime(MilliGpuSeconds gpu_time, double usd_per_gpu_hour) {
  // milli-GPU-s x USD/GPU-h: / 3.6e6 for GPU-hours, x 1e6 for micro-dollars.
  return CheckedRound(static_cast<double>(gpu_time) * usd_per_gpu_hour / 3.6, "cost in micro-USD");
}

Result<MicroUsd> PriceGpuSeconds(double gpu_seconds, double usd_per_gpu_hour) {
  Result<MilliGpuSeconds> time = GpuSecondsToMilli(gpu_seconds);
  if (!time.ok()) return time.status();
  return PriceGpuTime(*time, usd_per_gpu_hour);
}

Status CheckedAdd(int64_t& sum, int64_t add, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(sum, add, &out))
    return InvalidArgumentError(std::string(what) + ": sum overflows (" + std::to_string(sum) +
                                " + " + std::to_string(add) + ")");
  sum = out;
  return OkStatus();
}

std::string MicroUsdDecimal(MicroUsd micro) {
  const bool negative = micro < 0;
  const uint64_t magnitude =
      negative ? static_cast<uint64_t>(-(micro + 1)) + 1 : static_cast<uint64_t>(micro);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%06llu", negative ? "-" : "",
                static_cast<unsigned long long>(magnitude / 1'000'000),
                static_cast<unsigned long long>(magnitude % 1'000'000));
  return buf;
}

std::string FormatUsd(MicroUsd micro) {
  const bool negative = micro < 0;
  // |INT64_MIN| does not fit: work on the unsigned magnitude.
  const uint64_t magnitude =
      negative ? 0 - static_cast<uint64_t>(micro) : static_cast<uint64_t>(micro);
  const uint64_t cents = (magnitude + 5000) / 10000;
  std::string whole = std::to_string(cents / 100);
  for (int i = static_cast<int>(whole.size()) - 3; i > 0; i -= 3)
    whole.insert(static_cast<size_t>(i), ",");
  const uint64_t c = cents % 100;
  return std::string(negative ? "-$" : "$") + whole + "." + (c < 10 ? "0" : "") + std::to_string(c);
}

}  // namespace gpuvpa
