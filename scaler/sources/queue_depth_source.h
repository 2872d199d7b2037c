// The one interface every queue-depth source implements (one file per source).
#pragma once

#include <string>

#include "core/base/status.h"

namespace gpuvpa::scaler {

class QueueDepthSource {
 public:
  virtual ~QueueDepthSource() = default;
  // The current depth. A backend that is down or too slow is UNAVAILABLE, never a fake 0:
  // KEDA then applies its fallback instead of scaling to zero.
  virtual Result<double> ReadDepth() = 0;
  // Identifies the backend and queue, e.g. "redis://127.0.0.1:6379/0 list jobs": the cache key.
  virtual std::string Describe() const = 0;
};

}  // namespace gpuvpa::scaler
