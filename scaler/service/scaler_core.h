// The scaler's typed core, which the gRPC handlers are thin wrappers around: resolves a
// ScaledObject's metadata into its config (parsed once), checks that it names only backends of
// the scaler's config, finds the queue's source (shared by every ScaledObject on the same
// queue) and reads depth through the coalescing cache on the backend's own bulkhead: no caller
// thread ever does backend I/O. Queues on backends that read many queues in one round trip
// (Redis) are refreshed ahead of the asks while KEDA keeps asking for them, so their depths are
// answered from memory. State keyed by caller strings (parsed metadata, queues, cache entries)
// is bounded and evicted when idle.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scaler/config/scaler_config.h"
#include "scaler/metadata/scaled_object_config.h"
#include "scaler/service/scaler_metrics.h"
#include "scaler/sources/backends.h"
#include "scaler/sources/depth_cache.h"
#include "scaler/sources/push_source.h"
#include "scaler/sources/queue_depth_source.h"

namespace gpuvpa::scaler {

struct ScalerCoreOptions {
  std::chrono::milliseconds cache_ttl{1000};      // one backend read per queue per TTL
  std::chrono::milliseconds source_timeout{500};  // well inside the HPA path's 3 s deadline
  ScalerLimits limits;
  std::chrono::seconds error_log_interval{
      60};  // per queue: source errors logged at most this often
  // Queues asked for within this window are read again every 3/4 of the TTL, those of one
  // backend together in pipelined round trips, so an ask finds a depth younger than the TTL
  // instead of waiting on a read. Longer than the HPA's 15 s sync period, so that a ScaledObject
  // KEDA keeps polling stays refreshed between its asks. 0: off (every ask after the TTL reads).
  std::chrono::milliseconds refresh_window{30000};
  // Each cycle is spread over this many steps, each reading the queues of one fixed phase (one
  // shard of the depth cache): a burst of every queue at once would hold both cores of a small
  // node (and Redis) for a few milliseconds per cycle, which is where a p99 lives.
  size_t refresh_phases = 64;
  size_t refresh_batch_queues = 1000;  // queues per pipelined round trip (bounds one reply)
};

// A ScaledObject as the core knows it: its config and its queue's source.
struct ResolvedScaledObject {
  std::shared_ptr<const ScaledObjectConfig> config;
  std::shared_ptr<QueueDepthSource> source;
};

class ScalerCore {
 public:
  using DepthCallback = std::function<void(const Result<double>&)>;
  // `metrics` may be null.
  ScalerCore(const ScalerCoreOptions& options, const Backends& backends,
             const PushDepthRegistry& push, ScalerMetrics* metrics = nullptr);
  // Stops refreshing and waits for the refresh reads in flight (they end by the source timeout).
  ~ScalerCore();
  ScalerCore(const ScalerCore&) = delete;
  ScalerCore& operator=(const ScalerCore&) = delete;

  // INVALID_ARGUMENT for bad metadata or a backend the config does not list (naming the key).
  Result<ResolvedScaledObject> Resolve(std::string_view name, std::string_view namespace_name,
                                       const TriggerMetadata& metadata);
  // Calls `done` with the depth, at once (cached, push) or from the backend's worker; by
  // `deadline` or the source timeout, whichever is first. UNAVAILABLE when the source is down,
  // slow or busy; never a fake 0.
  void ReadDepthAsync(const ResolvedScaledObject& so, Deadline deadline, DepthCallback done);
  // Waits for ReadDepthAsync (tests and tools; never on a gRPC thread).
  Result<double> ReadDepth(const ResolvedScaledObject& so);

  // Forgets parsed metadata, queues and cache entries not asked for in limits.idle.
  void EvictIdle();
  const DepthCache& cache() const { return cache_; }
  uint64_t refresh_round_trips() const { return refresh_round_trips_; }
  uint64_t refreshed_queues() const { return refreshed_queues_; }
  size_t scaled_objects() const;
  size_t queues() const;

 private:
  struct ResolvedEntry {
    ResolvedScaledObject so;
    std::chrono::steady_clock::time_point used_at;
  };
  struct QueueEntry {
    std::shared_ptr<QueueDepthSource> source;
    std::chrono::steady_clock::time_point error_logged_at;
    uint64_t errors_not_logged = 0;
  };
  Result<std::shared_ptr<QueueDepthSource>> MakeSource(const ScaledObjectConfig& c,
                                                       const TriggerMetadata& metadata) const;
  void LogSourceError(const std::string& key, const Status& status);
  // Reads the batch-readable queues of `phase` asked for within the refresh window, grouped by
  // backend in round trips of at most refresh_batch_queues, on the backends' bulkheads; returns
  // at once. A backend still reading an earlier step's queues is skipped (its asks read).
  void RefreshAsked(size_t phase);
  // One round trip's queues: read on a worker of their bulkhead, stored into the cache.
  void SubmitRefresh(BatchDepthReader* reader, std::vector<std::weak_ptr<QueueDepthSource>> sources,
                     std::vector<std::string> keys);
  void RefreshLoop();

  const ScalerCoreOptions options_;
  const Backends& backends_;
  const PushDepthRegistry& push_;
  ScalerMetrics* metrics_;
  DepthCache cache_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, ResolvedEntry> resolved_;  // by namespace/name + metadata
  std::unordered_map<std::string, QueueEntry> queues_;       // by Describe()
  std::atomic<uint64_t> refresh_round_trips_{0};
  std::atomic<uint64_t> refreshed_queues_{0};
  std::mutex refresh_mu_;
  int refreshes_in_flight_ = 0;                  // guarded by refresh_mu_
  std::map<BatchDepthReader*, int> refreshing_;  // round trips in flight per backend; ditto
  std::condition_variable refresh_cv_;           // a refresh ended, or the core is stopping
  bool stopping_ = false;                        // guarded by refresh_mu_
  std::thread refresher_;                        // last: started once everything above exists
};

}  // namespace gpuvpa::scaler
