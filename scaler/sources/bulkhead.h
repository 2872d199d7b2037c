// A bulkhead per backend: at most `workers` reads run at once (each worker owns one connection)
// and at most `max_pending` wait; a full queue is refused at once rather than queued without
// bound. Callers never run backend I/O themselves, so a slow backend holds only its own workers
// and its own callers; gRPC threads and other backends' callers never wait on it. A task whose
// deadline passed while it waited is run with `expired` set, without touching the backend.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa::scaler {

using Deadline = std::chrono::steady_clock::time_point;

class Bulkhead {
 public:
  using Task = std::function<void(int worker, bool expired)>;
  Bulkhead(std::string name, int workers, size_t max_pending);
  // Pending tasks run with `expired` set; then the workers stop.
  ~Bulkhead();
  Bulkhead(const Bulkhead&) = delete;
  Bulkhead& operator=(const Bulkhead&) = delete;

  // UNAVAILABLE (naming the backend) when `max_pending` tasks already wait.
  Status Submit(Deadline deadline, Task task);
  int workers() const { return static_cast<int>(threads_.size()); }
  size_t pending() const;

 private:
  struct Item {
    Deadline deadline;
    Task task;
  };
  void Work(int worker);

  const std::string name_;
  const size_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuvpa::scaler
