// Watches the ScaledObjects that have an open StreamIsActive stream: polls their queues once per
// cache TTL and reacts to push reports at once, telling each watcher when its ScaledObject
// becomes active.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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
};

class ActivityHub {
 public:
  ActivityHub(ScalerCore& core, PushDepthRegistry& push, std::chrono::milliseconds poll_interval);
  ~ActivityHub();
  ActivityHub(const ActivityHub&) = delete;
  ActivityHub& operator=(const ActivityHub&) = delete;

  // Evaluates the watcher once right away, then on every poll and push report.
  uint64_t Add(const ResolvedScaledObject& so, ActivityWatcher* watcher);
  // After Remove returns, the watcher is never called again.
  void Remove(uint64_t id);
  size_t size() const;

 private:
  struct Entry {
    ResolvedScaledObject so;
    ActivityWatcher* watcher;
  };
  void Evaluate(uint64_t id, const ResolvedScaledObject& so);
  void PollLoop();

  ScalerCore& core_;
  const std::chrono::milliseconds poll_interval_;
  mutable std::mutex mu_;  // guards entries_; held while calling a watcher
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 1;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace gpuvpa::scaler
