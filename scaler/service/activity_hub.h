// Watches the ScaledObjects that have an open StreamIsActive stream: polls their queues once per
// cache TTL and reacts to push reports at once, telling each watcher when its ScaledObject
// becomes active. Polls are asynchronous reads on each backend's own bulkhead: a stalled backend
// delays only the streams on its queues, never the poll of the others. It also ends every open
// stream with OK on shutdown (KEDA resets its reconnect backoff only after a clean end).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "scaler/service/scaler_core.h"

namespace gpuvpa::scaler {

class ActivityWatcher {
 public:
  virtual ~ActivityWatcher() = default;
  // Called on every evaluation with the ScaledObject's current activity.
  virtual void OnActivity(bool active) = 0;
  // The scaler is shutting down: end the stream with OK.
  virtual void OnShutdown() = 0;
};

class ActivityHub {
 public:
  // `housekeeping` runs on the poll thread about every `housekeeping_interval` (evictions).
  ActivityHub(ScalerCore& core, PushDepthRegistry& push, std::chrono::milliseconds poll_interval,
              std::function<void()> housekeeping = nullptr,
              std::chrono::milliseconds housekeeping_interval = std::chrono::seconds(10));
  ~ActivityHub();
  ActivityHub(const ActivityHub&) = delete;
  ActivityHub& operator=(const ActivityHub&) = delete;

  // Evaluates the watcher once right away, then on every poll and push report. A null `so`
  // config registers a stream that is only ended at shutdown (StreamMetricSpec).
  uint64_t Add(const ResolvedScaledObject& so, ActivityWatcher* watcher);
  // After Remove returns, the watcher is never called again.
  void Remove(uint64_t id);
  // Tells every watcher to end its stream (OnShutdown) and stops polling.
  void Shutdown();
  size_t size() const;

 private:
  struct Entry {
    ResolvedScaledObject so;
    ActivityWatcher* watcher;
    bool reading = false;  // a poll read is in flight: the next poll skips this stream
  };
  void Evaluate(uint64_t id, const ResolvedScaledObject& so);
  void Deliver(uint64_t id, const ResolvedScaledObject& so, const Result<double>& depth);
  void PollLoop();

  ScalerCore& core_;
  const std::chrono::milliseconds poll_interval_;
  const std::function<void()> housekeeping_;
  const std::chrono::milliseconds housekeeping_interval_;
  mutable std::mutex mu_;  // guards entries_; held while calling a watcher
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 1;
  bool shut_down_ = false;
  int reads_in_flight_ = 0;  // guarded by mu_; the destructor waits for them
  std::condition_variable reads_done_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace gpuvpa::scaler
