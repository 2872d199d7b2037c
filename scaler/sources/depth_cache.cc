// Coalescing depth cache.
#include "scaler/sources/depth_cache.h"

#include <future>

namespace gpuvpa::scaler {

DepthCache::DepthCache(std::chrono::milliseconds ttl, Clock clock)
    : ttl_(ttl), clock_(std::move(clock)) {}

void DepthCache::Get(const std::string& key, Done done, const Start& start) {
  std::unique_lock<std::mutex> lock(mu_);
  auto [it, created] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (created) e.hash = std::hash<std::string>{}(key);
  const auto now = clock_();
  e.used_at = now;
  if (e.has_value && now - e.read_at < ttl_) {
    ++hits_;
    const double value = e.value;
    lock.unlock();
    done(value);
    return;
  }
  e.waiters.push_back(std::move(done));
  if (e.in_flight) {
    ++hits_;  // shares the read in flight
    return;
  }
  e.in_flight = true;
  ++reads_;
  lock.unlock();
  start([this, key](Result<double> depth) { Complete(key, depth); });
}

void DepthCache::Complete(const std::string& key, const Result<double>& depth) {
  std::vector<Done> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[key];
    e.in_flight = false;
    if (depth.ok()) {
      e.has_value = true;
      e.value = *depth;
      e.read_at = clock_();
    } else {
      e.has_value = false;  // never serve a stale value across an outage
    }
    waiters.swap(e.waiters);
  }
  for (const Done& w : waiters) w(depth);
}

Result<double> DepthCache::GetBlocking(const std::string& key,
                                       const std::function<Result<double>()>& read) {
  auto answer = std::make_shared<std::promise<Result<double>>>();
  std::future<Result<double>> future = answer->get_future();
  Get(
      key, [answer](const Result<double>& depth) { answer->set_value(depth); },
      [&read](std::function<void(Result<double>)> complete) { complete(read()); });
  return future.get();
}

std::vector<std::string> DepthCache::Asked(std::chrono::milliseconds window, size_t phase,
                                           size_t phases) const {
  std::vector<std::string> keys;
  std::lock_guard<std::mutex> lock(mu_);
  const auto since = clock_() - window;
  for (const auto& [key, e] : entries_)
    if (!e.in_flight && e.used_at >= since && e.hash % phases == phase) keys.push_back(key);
  return keys;
}

void DepthCache::Store(const std::vector<std::string>& keys,
                       const std::vector<Result<double>>& depths,
                       std::chrono::steady_clock::time_point read_at) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < keys.size() && i < depths.size(); ++i) {
    auto it = entries_.find(keys[i]);
    if (it == entries_.end()) continue;  // evicted meanwhile: not asked for any more
    Entry& e = it->second;
    if (!depths[i].ok()) {
      e.has_value = false;
    } else if (!e.has_value || e.read_at <= read_at) {
      e.has_value = true;
      e.value = *depths[i];
      e.read_at = read_at;
    }
  }
}

size_t DepthCache::EvictIdle(std::chrono::milliseconds idle) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  return std::erase_if(entries_, [&](const auto& kv) {
    return !kv.second.in_flight && now - kv.second.used_at > idle;
  });
}

void DepthCache::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end() && !it->second.in_flight)
    entries_.erase(it);
}

size_t DepthCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t DepthCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t DepthCache::reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reads_;
}

}  // namespace gpuvpa::scaler
