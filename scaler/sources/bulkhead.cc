// Bulkhead workers.
#include "scaler/sources/bulkhead.h"

namespace gpuvpa::scaler {

Bulkhead::Bulkhead(std::string name, int workers, size_t max_pending)
    : name_(std::move(name)), max_pending_(max_pending) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { Work(i); });
}

Bulkhead::~Bulkhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  for (Item& item : queue_) item.task(0, /*expired=*/true);
}

Status Bulkhead::Submit(Deadline deadline, Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return UnavailableError(name_ + ": shutting down");
    if (queue_.size() >= max_pending_)
      return UnavailableError(name_ + ": " + std::to_string(queue_.size()) +
                              " reads already wait for this backend (it is slow or down)");
    queue_.push_back({deadline, std::move(task)});
  }
  cv_.notify_one();
  return OkStatus();
}

size_t Bulkhead::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void Bulkhead::Work(int worker) {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item.task(worker, std::chrono::steady_clock::now() >= item.deadline);
  }
}

}  // namespace gpuvpa::scaler
