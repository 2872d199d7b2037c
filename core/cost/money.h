// Money and GPU time as integers, so that totals are exact whatever the grouping: costs in
// micro-dollars, GPU time in milli-GPU-seconds. Each ledger row is rounded once, to the nearest
// micro-dollar, when it is priced; sums of rows never round again. Every conversion from a
// double and every sum is checked: a value that does not fit is an error, never a wrapped
// number (a wrapped sum once printed -$9,223,372,036,854 in showback).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

using MicroUsd = int64_t;
using MilliGpuSeconds = int64_t;

inline constexpr double kHoursPerMonth = 730;  // 8760 h / 12, the usual FinOps month

inline double MicroToUsd(MicroUsd micro) { return static_cast<double>(micro) / 1e6; }
inline double MilliGpuSecondsToGpuHours(MilliGpuSeconds m) {
  return static_cast<double>(m) / 3.6e6;
}

// Rounds to the nearest integer; an error naming `what` when `value` is not finite or does not
// fit in an int64.
Result<int64_t> CheckedRound(double value, std::string_view what);
Result<MicroUsd> UsdToMicro(double usd);
Result<MilliGpuSeconds> GpuSecondsToMilli(double gpu_seconds);

// The cost of `gpu_time` at `usd_per_gpu_hour`, rounded to the nearest micro-dollar.
Result<MicroUsd> PriceGpuTime(MilliGpuSeconds gpu_time, double usd_per_gpu_hour);
// The same for GPU time in seconds: rounded to milli-GPU-seconds first, as a ledger row is.
Result<MicroUsd> PriceGpuSeconds(double gpu_seconds, double usd_per_gpu_hour);

// sum += add, or an error naming `what` when the sum would overflow (sum is then unchanged).
Status CheckedAdd(int64_t& sum, int64_t add, std::string_view what);

// "$1,927.20"
std::string FormatUsd(MicroUsd micro);
// Dollars with six places, exact ("1927.203456", "-0.000001"): what files for machines carry.
std::string MicroUsdDecimal(MicroUsd micro);

}  // namespace gpuvpa
