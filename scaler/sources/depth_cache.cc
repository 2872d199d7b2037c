// Coalescing depth cache.
#include "scaler/sources/depth_cache.h"

#include <algorithm>
#include <future>

namespace gpuvpa::scaler {

DepthCache::DepthCache(std::chrono::milliseconds ttl, Clock clock, size_t shards)
    : ttl_(ttl), clock_(std::move(clock)), shards_(std::max<size_t>(1, shards)) {}

DepthCache::Shard& DepthCache::ShardOf(const std::string& key) const {
  return shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void DepthCache::Get(const std::string& key, Done done, const Start& start) {
  Shard& shard = ShardOf(key);
  std::unique_lock<std::mutex> lock(shard.mu);
  Entry& e = shard.entries[key];
  const auto now = clock_();
  e.used_at = now;
  if (e.has_value && now - e.read_at < ttl_) {
    ++shard.hits;
    const double value = e.value;
    lock.unlock();
    done(value);
    return;
  }
  e.waiters.push_back(std::move(done));
  if (e.in_flight) {
    ++shard.hits;  // shares the read in flight
    return;
  }
  e.in_flight = true;
  ++shard.reads;
  lock.unlock();
  start([this, key](Result<double> depth) { Complete(key, depth); });
}

void DepthCache::Complete(const std::string& key, const Result<double>& depth) {
  std::vector<Done> waiters;
  {
    Shard& shard = ShardOf(key);
    std::lock_guard<std::mutex> lock(shard.mu);
    Entry& e = shard.entries[key];
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

std::vector<std::string> DepthCache::Asked(std::chrono::milliseconds window, size_t shard) const {
  std::vector<std::string> keys;
  if (shard >= shards_.size()) return keys;
  const Shard& s = shards_[shard];
  std::lock_guard<std::mutex> lock(s.mu);
  const auto since = clock_() - window;
  for (const auto& [key, e] : s.entries)
    if (!e.in_flight && e.used_at >= since) keys.push_back(key);
  return keys;
}

void DepthCache::Store(const std::vector<std::string>& keys,
                       const std::vector<Result<double>>& depths,
                       std::chrono::steady_clock::time_point read_at) {
  // A refresher's keys are mostly of one shard: its lock is kept while the next key is too.
  std::unique_lock<std::mutex> lock;
  for (size_t i = 0; i < keys.size() && i < depths.size(); ++i) {
    Shard& shard = ShardOf(keys[i]);
    if (lock.mutex() != &shard.mu) lock = std::unique_lock<std::mutex>(shard.mu);
    auto it = shard.entries.find(keys[i]);
    if (it == shard.entries.end()) continue;  // evicted meanwhile: not asked for any more
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
  size_t evicted = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    const auto now = clock_();
    evicted += std::erase_if(shard.entries, [&](const auto& kv) {
      return !kv.second.in_flight && now - kv.second.used_at > idle;
    });
  }
  return evicted;
}

void DepthCache::Erase(const std::string& key) {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (auto it = shard.entries.find(key); it != shard.entries.end() && !it->second.in_flight)
    shard.entries.erase(it);
}

template <typename Count>
uint64_t DepthCache::Sum(Count count) const {
  uint64_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    total += count(shard);
  }
  return total;
}

size_t DepthCache::size() const {
  return Sum([](const Shard& s) { return s.entries.size(); });
}

uint64_t DepthCache::hits() const {
  return Sum([](const Shard& s) { return s.hits; });
}

uint64_t DepthCache::reads() const {
  return Sum([](const Shard& s) { return s.reads; });
}

}  // namespace gpuvpa::scaler
