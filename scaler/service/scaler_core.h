// The scaler's typed core, which the gRPC handlers are thin wrappers around: resolves a
// ScaledObject's metadata into its config (parsed once), finds the queue's source (shared by
// every ScaledObject on the same queue) and reads depth through the coalescing cache.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "scaler/metadata/scaled_object_config.h"
#include "scaler/service/scaler_metrics.h"
#include "scaler/sources/depth_cache.h"
#include "scaler/sources/push_source.h"
#include "scaler/sources/queue_depth_source.h"

namespace gpuvpa::scaler {

struct ScalerCoreOptions {
  std::chrono::milliseconds cache_ttl{1000};      // one backend read per queue per TTL
  std::chrono::milliseconds source_timeout{500};  // well inside the HPA path's 3 s deadline
  size_t max_scaled_objects = 100000;             // bound on remembered metadata variants
  // For every Redis source (read from a file by the caller; never logged). KEDA does not forward
  // TriggerAuthentication secrets to external scalers.
  std::string redis_password;
};

// A ScaledObject as the core knows it: its config and its queue's source.
struct ResolvedScaledObject {
  std::shared_ptr<const ScaledObjectConfig> config;
  QueueDepthSource* source = nullptr;  // owned by the core; lives as long as it
};

class ScalerCore {
 public:
  // `metrics` may be null.
  ScalerCore(const ScalerCoreOptions& options, const PushDepthRegistry& push,
             ScalerMetrics* metrics = nullptr);

  // INVALID_ARGUMENT for bad metadata (naming the key).
  Result<ResolvedScaledObject> Resolve(std::string_view name, std::string_view namespace_name,
                                       const TriggerMetadata& metadata);
  // UNAVAILABLE when the source is down or slow; never a fake 0.
  Result<double> ReadDepth(const ResolvedScaledObject& so);

  const DepthCache& cache() const { return cache_; }
  size_t scaled_objects() const;

 private:
  const ScalerCoreOptions options_;
  const PushDepthRegistry& push_;
  ScalerMetrics* metrics_;
  DepthCache cache_;
  mutable std::mutex mu_;
  std::map<std::string, ResolvedScaledObject, std::less<>>
      resolved_;  // by namespace/name + metadata
  std::map<std::string, std::unique_ptr<QueueDepthSource>, std::less<>> sources_;  // by Describe()
};

}  // namespace gpuvpa::scaler
