// The one interface every queue-depth source implements (one file per source).
#pragma once

#include <string>

#include "core/base/status.h"
#include "scaler/sources/bulkhead.h"

namespace gpuvpa::scaler {

class QueueDepthSource {
 public:
  virtual ~QueueDepthSource() = default;
  // The current depth, read on `worker` of the source's bulkhead (0 for in-memory sources) and
  // given up at `deadline`. A backend that is down or too slow is UNAVAILABLE, never a fake 0:
  // KEDA then applies its fallback instead of scaling to zero.
  virtual Result<double> ReadDepth(int worker, Deadline deadline) = 0;
  // Identifies the backend and queue, e.g. "redis://127.0.0.1:6379/0 list jobs": the cache key.
  virtual std::string Describe() const = 0;
  // Where reads run; null for in-memory sources, which are read on the caller's thread.
  virtual Bulkhead* bulkhead() { return nullptr; }
};

}  // namespace gpuvpa::scaler
