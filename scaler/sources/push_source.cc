// Push registry.
#include "scaler/sources/push_source.h"

#include <cmath>

namespace gpuvpa::scaler {

PushDepthRegistry::PushDepthRegistry(std::chrono::milliseconds staleness, Clock clock)
    : staleness_(staleness), clock_(std::move(clock)) {}

Status PushDepthRegistry::Report(const std::string& queue, double depth) {
  if (queue.empty()) return InvalidArgumentError("queue_name is empty");
  if (!std::isfinite(depth) || depth < 0)
    return InvalidArgumentError("depth " + std::to_string(depth) + " for queue \"" + queue +
                                "\" is not a count");
  std::vector<std::function<void(const std::string&, double)>> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_[queue] = {depth, clock_()};
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

void PushDepthRegistry::Subscribe(std::function<void(const std::string&, double)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace gpuvpa::scaler
