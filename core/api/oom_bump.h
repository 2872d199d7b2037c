// The CUDA out-of-memory rule, VPA's OOM bump for GPU memory: after an OOM at `used_bytes` the
// next size is the larger of used + 100 MiB and used x 1.2. The recommender's model raises the
// observed peak by it; the updater's rollback keeps the rolled-back size at least this large.
#pragma once

#include <algorithm>

namespace gpuvpa {

inline constexpr double kCudaOomMinBumpBytes = 100.0 * 1024 * 1024;  // VPA: +100 MiB
inline constexpr double kCudaOomBumpRatio = 1.2;                     // VPA: x1.2

inline double VramAfterCudaOom(double used_bytes) {
  return std::max(used_bytes + kCudaOomMinBumpBytes, used_bytes * kCudaOomBumpRatio);
}

}  // namespace gpuvpa
