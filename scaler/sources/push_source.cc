// Push registry.
#include "scaler/sources/push_source.h"

#include <cmath>

namespace gpuvpa::scaler {

PushDepthRegistry::PushDepthRegistry(std::chrono::milliseconds staleness, size_t max_queues,
                                     Clock clock)
    : staleness_(staleness), max_queues_(max_queues), clock_(std::move(clock)) {}

Status PushDepthRegistry::Report(const std::string& queue, double depth) {
  if (queue.empty()) return InvalidArgumentError("queue_name is empty");
  if (queue.size() > 253)
    return InvalidArgumentError("queue_name is longer than 253 bytes (" +
                                std::to_string(queue.size()) + ")");
  if (!std::isfinite(depth) || depth < 0)
    return InvalidArgumentError("depth " + std::to_string(depth) + " for queue \"" + queue +
                                "\" is not a count");
  std::vector<std::function<void(const std::string&, double)>> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = latest_.find(queue);
    if (it == latest_.end()) {
      if (latest_.size() >= max_queues_)
        return InvalidArgumentError("queue_name \"" + queue + "\": the scaler already tracks " +
                                    std::to_string(latest_.size()) +
                                    " push queues (limits.max_push_queues)");
      it = latest_.emplace(queue, Sample{}).first;
    }
    it->second = {depth, clock_()};
    listeners = listeners_;
  }
  for (const auto& listener : listeners) listener(queue, depth);
  return OkStatus();
}

Result<double> PushDepthRegistry::Latest(const std::string& queue) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(queue);
  if (it == latest_.end())
    return UnavailableError("push queue \"" + queue + "\" has no report yet");
  if (clock_() - it->second.at > staleness_)
    return UnavailableError("push queue \"" + queue + "\": last report is older than " +
                            std::to_string(staleness_.count()) + " ms");
  return it->second.depth;
}

size_t PushDepthRegistry::EvictIdle(std::chrono::milliseconds idle) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  return std::erase_if(latest_, [&](const auto& kv) { return now - kv.second.at > idle; });
}

size_t PushDepthRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_.size();
}

void PushDepthRegistry::Subscribe(std::function<void(const std::string&, double)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace gpuvpa::scaler
