// How many changes the updater may make: per namespace and cluster-wide, per hour (in memory:
// a restarted updater starts with a fresh budget).
#pragma once

#include <deque>
#include <string>
#include <utility>

namespace gpuvpa::updater {

struct ChangeLimits {
  int per_namespace_per_hour = 2;
  int per_cluster_per_hour = 20;
  int max_conflict_retries = 5;
};

class ChangeRateLimiter {
 public:
  explicit ChangeRateLimiter(ChangeLimits limits) : limits_(limits) {}
  // Empty when a change in `ns` may happen now, else why not.
  std::string Check(const std::string& ns, double now_s);
  void Record(const std::string& ns, double now_s);

 private:
  void Expire(double now_s);
  ChangeLimits limits_;
  std::deque<std::pair<double, std::string>> recent_;
};

}  // namespace gpuvpa::updater
