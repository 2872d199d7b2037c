// The one interface every queue-depth source implements (one file per source), and the one a
// backend implements when it can answer many queues in one round trip.
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "scaler/sources/bulkhead.h"

namespace gpuvpa::scaler {

class BatchDepthReader;

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
  // The backend that reads this source together with others in one round trip (its queues are
  // refreshed ahead of the next ask); null when the source is read one queue at a time.
  virtual BatchDepthReader* batch_reader() { return nullptr; }
};

class BatchDepthReader {
 public:
  virtual ~BatchDepthReader() = default;
  // One depth per source, in order, each as its ReadDepth would answer it (same errors), read
  // on `worker` of the sources' bulkhead in pipelined round trips. Every source given returned
  // this reader from batch_reader().
  virtual std::vector<Result<double>> ReadBatch(int worker,
                                                const std::vector<const QueueDepthSource*>& sources,
                                                Deadline deadline) = 0;
};

}  // namespace gpuvpa::scaler
