// Money and GPU time as integers, so that totals are exact whatever the grouping: costs in
// micro-dollars, GPU time in milli-GPU-seconds. Each ledger row is rounded once, to the nearest
// micro-dollar, when it is priced; sums of rows never round again.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace gpuvpa {

using MicroUsd = int64_t;
using MilliGpuSeconds = int64_t;

inline constexpr double kHoursPerMonth = 730;  // 8760 h / 12, the usual FinOps month

inline MicroUsd UsdToMicro(double usd) { return std::llround(usd * 1e6); }
inline double MicroToUsd(MicroUsd micro) { return static_cast<double>(micro) / 1e6; }

inline MilliGpuSeconds GpuHoursToMilliGpuSeconds(double gpu_hours) {
  return std::llround(gpu_hours * 3600 * 1000);
}
inline double MilliGpuSecondsToGpuHours(MilliGpuSeconds m) {
  return static_cast<double>(m) / 3.6e6;
}

// The cost of `gpu_time` at `usd_per_gpu_hour`, rounded to the nearest micro-dollar.
inline MicroUsd PriceGpuTime(MilliGpuSeconds gpu_time, double usd_per_gpu_hour) {
  return std::llround(static_cast<double>(gpu_time) * usd_per_gpu_hour / 3.6);
}

// "$1,927.20"
std::string FormatUsd(MicroUsd micro);

}  // namespace gpuvpa
