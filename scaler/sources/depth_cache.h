// Reads of queue depth, cached per queue for a short TTL and coalesced: any number of concurrent
// callers for the same queue cause one backend read per TTL. The read is started by the first
// caller and completes on the backend's own thread; every caller gets its answer through a
// callback, so no caller's thread ever waits on a backend. Errors reach the callers of that
// read but are never cached, so the next call after a backend returns reads again. A refresher
// may store depths it read ahead of the next ask (Store) for the queues asked for lately
// (Asked). Entries not asked for in a while are evicted (EvictIdle).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa::scaler {

class DepthCache {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Done = std::function<void(const Result<double>&)>;
  // Starts a read; must call `complete` exactly once, on any thread, at any later time.
  using Start = std::function<void(std::function<void(Result<double>)> complete)>;

  explicit DepthCache(std::chrono::milliseconds ttl, Clock clock = std::chrono::steady_clock::now);

  // Calls `done` with the cached depth at once, or when the read in flight (or the one started
  // here with `start`) completes. `done` runs outside the cache's lock.
  void Get(const std::string& key, Done done, const Start& start);
  // Blocking convenience for callers that may wait (tests, tools).
  Result<double> GetBlocking(const std::string& key, const std::function<Result<double>()>& read);

  // Keys asked for (Get) within `window`, without a read in flight, in `phase` of `phases`: a
  // key's phase is fixed (from its hash), so a refresher that visits one phase at a time reads
  // every key once per cycle, evenly spread over the cycle.
  std::vector<std::string> Asked(std::chrono::milliseconds window, size_t phase = 0,
                                 size_t phases = 1) const;
  // Depths read ahead of the asks, by reads that started at `read_at`: an error drops the
  // cached depth (never a stale value across an outage); a depth older than the one cached is
  // ignored, and so is a key evicted meanwhile. Callers waiting on a read in flight still get
  // that read's answer.
  void Store(const std::vector<std::string>& keys, const std::vector<Result<double>>& depths,
             std::chrono::steady_clock::time_point read_at);
  // Drops entries with no read in flight and not asked for in `idle`; returns how many.
  size_t EvictIdle(std::chrono::milliseconds idle);
  // Drops `key` unless a read is in flight.
  void Erase(const std::string& key);
  size_t size() const;
  uint64_t hits() const;
  uint64_t reads() const;

 private:
  struct Entry {
    bool in_flight = false;
    bool has_value = false;
    double value = 0;
    std::chrono::steady_clock::time_point read_at;
    std::chrono::steady_clock::time_point used_at;
    size_t hash = 0;  // of the key, kept for Asked's phases
    std::vector<Done> waiters;
  };
  void Complete(const std::string& key, const Result<double>& depth);

  const std::chrono::milliseconds ttl_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  uint64_t hits_ = 0;
  uint64_t reads_ = 0;
};

}  // namespace gpuvpa::scaler
