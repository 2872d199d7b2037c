// Reads of queue depth, cached per queue for a short TTL and coalesced: any number of concurrent
// callers for the same queue cause one backend read per TTL. The read is started by the first
// caller and completes on the backend's own thread; every caller gets its answer through a
// callback, so no caller's thread ever waits on a backend. Errors reach the callers of that
// read but are never cached, so the next call after a backend returns reads again. A refresher
// may store depths it read ahead of the next ask (Store) for the queues asked for lately
// (Asked). Entries not asked for in a while are evicted (EvictIdle). Entries live in shards,
// each with its own lock, so that a refresher walking one shard's asked keys never holds up an
// ask for a key of another.
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

  // `shards`: how many parts the keys are split into (by hash), each with its own lock.
  explicit DepthCache(std::chrono::milliseconds ttl, Clock clock = std::chrono::steady_clock::now,
                      size_t shards = 1);

  // Calls `done` with the cached depth at once, or when the read in flight (or the one started
  // here with `start`) completes. `done` runs outside the cache's lock.
  void Get(const std::string& key, Done done, const Start& start);
  // Blocking convenience for callers that may wait (tests, tools).
  Result<double> GetBlocking(const std::string& key, const std::function<Result<double>()>& read);

  // Keys of `shard` asked for (Get) within `window`, without a read in flight: a key's shard is
  // fixed (from its hash), so a refresher that visits one shard at a time reads every key once
  // per cycle, evenly spread over the cycle, and only ever locks the shard it visits.
  std::vector<std::string> Asked(std::chrono::milliseconds window, size_t shard = 0) const;
  size_t shards() const { return shards_.size(); }
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
    std::vector<Done> waiters;
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Entry> entries;
    uint64_t hits = 0;
    uint64_t reads = 0;
  };
  Shard& ShardOf(const std::string& key) const;
  void Complete(const std::string& key, const Result<double>& depth);
  // Sums `count` over the shards, each read under its own lock.
  template <typename Count>
  uint64_t Sum(Count count) const;

  const std::chrono::milliseconds ttl_;
  const Clock clock_;
  mutable std::vector<Shard> shards_;
};

}  // namespace gpuvpa::scaler
