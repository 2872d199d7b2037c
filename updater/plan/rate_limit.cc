// The change budget (rate_limit.h).
#include "updater/plan/rate_limit.h"

#include <algorithm>

namespace gpuvpa::updater {

std::string ChangeRateLimiter::Check(const std::string& ns, double now_s) {
  Expire(now_s);
  if (static_cast<int>(recent_.size()) >= limits_.per_cluster_per_hour)
    return "rate limit: " + std::to_string(limits_.per_cluster_per_hour) +
           " changes in the cluster in the last hour";
  const auto in_ns =
      std::count_if(recent_.begin(), recent_.end(), [&](const auto& r) { return r.second == ns; });
  if (in_ns >= limits_.per_namespace_per_hour)
    return "rate limit: " + std::to_string(limits_.per_namespace_per_hour) +
           " changes in namespace " + ns + " in the last hour";
  return "";
}

void ChangeRateLimiter::Record(const std::string& ns, double now_s) {
  recent_.emplace_back(now_s, ns);
}

void ChangeRateLimiter::Expire(double now_s) {
  while (!recent_.empty() && recent_.front().first <= now_s - 3600) recent_.pop_front();
}

}  // namespace gpuvpa::updater
