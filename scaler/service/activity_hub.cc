// Activity hub.
#include "scaler/service/activity_hub.h"

#include <vector>

namespace gpuvpa::scaler {

ActivityHub::ActivityHub(ScalerCore& core, PushDepthRegistry& push,
                         std::chrono::milliseconds poll_interval,
                         std::function<void()> housekeeping,
                         std::chrono::milliseconds housekeeping_interval)
    : core_(core),
      poll_interval_(poll_interval),
      housekeeping_(std::move(housekeeping)),
      housekeeping_interval_(housekeeping_interval) {
  push.Subscribe([this](const std::string& queue, double) {
    std::vector<std::pair<uint64_t, ResolvedScaledObject>> hit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, e] : entries_)
        if (e.so.config && e.so.config->source == QueueSourceKind::kPush &&
            e.so.config->push.queue_name == queue)
          hit.emplace_back(id, e.so);
    }
    for (const auto& [id, so] : hit) Evaluate(id, so);
  });
  poller_ = std::thread([this] { PollLoop(); });
}

ActivityHub::~ActivityHub() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  poller_.join();
  // Reads complete within their deadline; their callbacks touch this hub.
  std::unique_lock<std::mutex> lock(mu_);
  reads_done_.wait(lock, [this] { return reads_in_flight_ == 0; });
}

uint64_t ActivityHub::Add(const ResolvedScaledObject& so, ActivityWatcher* watcher) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    entries_[id] = {so, watcher};
    if (shut_down_) watcher->OnShutdown();
  }
  if (so.config) Evaluate(id, so);
  return id;
}

void ActivityHub::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(id);
}

void ActivityHub::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    for (auto& [id, e] : entries_) e.watcher->OnShutdown();
  }
  std::lock_guard<std::mutex> lock(stop_mu_);
  stopping_ = true;
  stop_cv_.notify_all();
}

size_t ActivityHub::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void ActivityHub::Deliver(uint64_t id, const ResolvedScaledObject& so,
                          const Result<double>& depth) {
  // Called under the lock, so a removed watcher is never called.
  std::lock_guard<std::mutex> lock(mu_);
  if (--reads_in_flight_ == 0) reads_done_.notify_all();
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.reading = false;
  if (!depth.ok()) return;  // a source that is down says nothing about activity
  it->second.watcher->OnActivity(so.config->IsActive(*depth));
}

void ActivityHub::Evaluate(uint64_t id, const ResolvedScaledObject& so) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    it->second.reading = true;
    ++reads_in_flight_;
  }
  core_.ReadDepthAsync(so, std::chrono::steady_clock::now() + poll_interval_,
                       [this, id, so](const Result<double>& depth) { Deliver(id, so, depth); });
}

void ActivityHub::PollLoop() {
  auto last_housekeeping = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> stop_lock(stop_mu_);
  while (!stop_cv_.wait_for(stop_lock, poll_interval_, [this] { return stopping_; })) {
    stop_lock.unlock();
    std::vector<std::pair<uint64_t, ResolvedScaledObject>> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, e] : entries_)
        if (e.so.config && !e.reading) due.emplace_back(id, e.so);
    }
    // Each read completes on its backend's worker; none is awaited here.
    for (const auto& [id, so] : due) Evaluate(id, so);
    if (housekeeping_ &&
        std::chrono::steady_clock::now() - last_housekeeping >= housekeeping_interval_) {
      housekeeping_();
      last_housekeeping = std::chrono::steady_clock::now();
    }
    stop_lock.lock();
  }
}

}  // namespace gpuvpa::scaler
