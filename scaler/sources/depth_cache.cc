// Coalescing depth cache.
#include "scaler/sources/depth_cache.h"

namespace gpuvpa::scaler {

DepthCache::DepthCache(std::chrono::milliseconds ttl, Clock clock)
    : ttl_(ttl), clock_(std::move(clock)) {}

Result<double> DepthCache::Get(const std::string& key,
                               const std::function<Result<double>()>& read) {
  std::unique_lock<std::mutex> lock(mu_);
  std::unique_ptr<Entry>& slot = entries_[key];
  if (!slot) slot = std::make_unique<Entry>();
  Entry& e = *slot;
  for (;;) {
    if (e.has_value && clock_() - e.read_at < ttl_) {
      ++hits_;
      return e.value;
    }
    if (!e.in_flight) break;
    // Someone is reading: wait for that read and share its answer, value or error.
    const uint64_t generation = e.generation;
    e.done.wait(lock, [&] { return e.generation != generation; });
    if (!e.last_error.ok()) return e.last_error;
    if (e.has_value) {
      ++hits_;
      return e.value;
    }
  }
  e.in_flight = true;
  ++reads_;
  lock.unlock();
  Result<double> depth = read();
  lock.lock();
  e.in_flight = false;
  ++e.generation;
  if (depth.ok()) {
    e.has_value = true;
    e.value = *depth;
    e.read_at = clock_();
    e.last_error = OkStatus();
  } else {
    e.has_value = false;  // never serve a stale value across an outage
    e.last_error = depth.status();
  }
  e.done.notify_all();
  return depth;
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
