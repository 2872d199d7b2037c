// Test shorthands for money literals: the checked conversions of core/cost/money.h, unwrapped
// (a test's literals always fit).
#pragma once

#include "core/cost/money.h"

namespace gpuvpa::testing {

inline MicroUsd Usd(double usd) { return UsdToMicro(usd).value(); }
inline MilliGpuSeconds GpuHours(double gpu_hours) {
  return GpuSecondsToMilli(gpu_hours * 3600).value();
}
inline MicroUsd Cost(MilliGpuSeconds gpu_time, double usd_per_gpu_hour) {
  return PriceGpuTime(gpu_time, usd_per_gpu_hour).value();
}

}  // namespace gpuvpa::testing
