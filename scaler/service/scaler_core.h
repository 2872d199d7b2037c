// The scaler's typed core, which the gRPC handlers are thin wrappers around: resolves a
// ScaledObject's metadata into its config (parsed once), checks that it names only backends of
// the scaler's config, finds the queue's source (shared by every ScaledObject on the same
// queue) and reads depth through the coalescing cache on the backend's own bulkhead: no caller
// thread ever does backend I/O. State keyed by caller strings (parsed metadata, queues, cache
// entries) is bounded and evicted when idle.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

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

  const ScalerCoreOptions options_;
  const Backends& backends_;
  const PushDepthRegistry& push_;
  ScalerMetrics* metrics_;
  DepthCache cache_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, ResolvedEntry> resolved_;  // by namespace/name + metadata
  std::unordered_map<std::string, QueueEntry> queues_;       // by Describe()
};

}  // namespace gpuvpa::scaler
