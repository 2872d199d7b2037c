// Reads of queue depth, cached per source for a short TTL and coalesced: any number of
// concurrent callers for the same queue cause one backend read per TTL. Errors are shared
// with the callers waiting on that read but never cached, so the next call after a backend
// returns reads again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/base/status.h"

namespace gpuvpa::scaler {

class DepthCache {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit DepthCache(std::chrono::milliseconds ttl, Clock clock = std::chrono::steady_clock::now);

  // The depth of `key`: cached if read less than a TTL ago, else read with `read` by exactly
  // one of the concurrent callers while the others wait for its answer.
  Result<double> Get(const std::string& key, const std::function<Result<double>()>& read);

  uint64_t hits() const;
  uint64_t reads() const;

 private:
  struct Entry {
    bool in_flight = false;
    bool has_value = false;
    double value = 0;
    std::chrono::steady_clock::time_point read_at;
    uint64_t generation = 0;  // bumped when a read completes
    Status last_error;        // of the latest completed read, for its waiters
    std::condition_variable done;
  };

  const std::chrono::milliseconds ttl_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> entries_;
  uint64_t hits_ = 0;
  uint64_t reads_ = 0;
};

}  // namespace gpuvpa::scaler
