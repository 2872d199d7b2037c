// Push: producers report their queue's depth to gpuvpa-scaler (QueueDepthPush), so a queue
// with no pollable API can still drive scale-to-zero. The registry keeps the latest report per
// queue and tells subscribers at once, which is what lets StreamIsActive react within 100 ms.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "scaler/sources/queue_depth_source.h"

namespace gpuvpa::scaler {

class PushDepthRegistry {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // A queue with no report for longer than `staleness` reads as UNAVAILABLE: its producer may
  // be gone, and a silent queue must not read as empty.
  // At most `max_queues` queues are remembered; a report for a new queue beyond that is
  // refused (INVALID_ARGUMENT naming the bound) until idle queues are evicted.
  explicit PushDepthRegistry(std::chrono::milliseconds staleness, size_t max_queues = 10000,
                             Clock clock = std::chrono::steady_clock::now);

  Status Report(const std::string& queue, double depth);
  // Forgets queues with no report for `idle`; returns how many.
  size_t EvictIdle(std::chrono::milliseconds idle);
  size_t size() const;
  Result<double> Latest(const std::string& queue) const;
  // Called (outside the registry's lock) after every report, with the queue and its depth.
  void Subscribe(std::function<void(const std::string&, double)> listener);

 private:
  struct Sample {
    double depth;
    std::chrono::steady_clock::time_point at;
  };
  const std::chrono::milliseconds staleness_;
  const size_t max_queues_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::map<std::string, Sample, std::less<>> latest_;
  std::vector<std::function<void(const std::string&, double)>> listeners_;
};

class PushQueueSource final : public QueueDepthSource {
 public:
  PushQueueSource(const PushDepthRegistry& registry, std::string queue)
      : registry_(registry), queue_(std::move(queue)) {}
  Result<double> ReadDepth(int, Deadline) override { return registry_.Latest(queue_); }
  std::string Describe() const override { return "push " + queue_; }

 private:
  const PushDepthRegistry& registry_;
  const std::string queue_;
};

}  // namespace gpuvpa::scaler
