// Activity hub.
#include "scaler/service/activity_hub.h"

#include <vector>

namespace gpuvpa::scaler {

ActivityHub::ActivityHub(ScalerCore& core, PushDepthRegistry& push,
                         std::chrono::milliseconds poll_interval)
    : core_(core), poll_interval_(poll_interval) {
  push.Subscribe([this](const std::string& queue, double) {
    std::vector<std::pair<uint64_t, ResolvedScaledObject>> hit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, e] : entries_)
        if (e.so.config->source == QueueSourceKind::kPush && e.so.config->push.queue_name == queue)
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
}

uint64_t ActivityHub::Add(const ResolvedScaledObject& so, ActivityWatcher* watcher) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    entries_[id] = {so, watcher};
  }
  Evaluate(id, so);
  return id;
}

void ActivityHub::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(id);
}

size_t ActivityHub::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void ActivityHub::Evaluate(uint64_t id, const ResolvedScaledObject& so) {
  // The read happens outside the lock (it may wait on the backend); the call happens under it,
  // so a removed watcher is never called.
  Result<double> depth = core_.ReadDepth(so);
  if (!depth.ok()) return;  // a source that is down says nothing about activity
  const bool active = so.config->IsActive(*depth);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) it->second.watcher->OnActivity(active);
}

void ActivityHub::PollLoop() {
  std::unique_lock<std::mutex> stop_lock(stop_mu_);
  while (!stop_cv_.wait_for(stop_lock, poll_interval_, [this] { return stopping_; })) {
    stop_lock.unlock();
    std::vector<std::pair<uint64_t, ResolvedScaledObject>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, e] : entries_) all.emplace_back(id, e.so);
    }
    for (const auto& [id, so] : all) Evaluate(id, so);
    stop_lock.lock();
  }
}

}  // namespace gpuvpa::scaler
