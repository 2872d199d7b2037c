// Scaler core.
#include "scaler/service/scaler_core.h"

#include "scaler/sources/prometheus_source.h"
#include "scaler/sources/redis_source.h"

namespace gpuvpa::scaler {
namespace {

std::string ResolveKey(std::string_view name, std::string_view ns,
                       const TriggerMetadata& metadata) {
  std::string key;
  key.append(ns).push_back('/');
  key.append(name);
  for (const auto& [k, v] : metadata) {
    key.push_back('\0');
    key.append(k).push_back('=');
    key.append(v);
  }
  return key;
}

}  // namespace

ScalerCore::ScalerCore(const ScalerCoreOptions& options, const PushDepthRegistry& push,
                       ScalerMetrics* metrics)
    : options_(options), push_(push), metrics_(metrics), cache_(options.cache_ttl) {}

Result<ResolvedScaledObject> ScalerCore::Resolve(std::string_view name,
                                                 std::string_view namespace_name,
                                                 const TriggerMetadata& metadata) {
  const std::string key = ResolveKey(name, namespace_name, metadata);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = resolved_.find(key); it != resolved_.end()) return it->second;
  }
  Result<ScaledObjectConfig> parsed = ParseScaledObjectConfig(name, namespace_name, metadata);
  if (!parsed.ok()) return parsed.status();
  auto config = std::make_shared<const ScaledObjectConfig>(std::move(parsed).value());
  std::unique_ptr<QueueDepthSource> source;
  switch (config->source) {
    case QueueSourceKind::kRedis:
      source = std::make_unique<RedisQueueSource>(config->redis, options_.source_timeout,
                                                  options_.redis_password);
      break;
    case QueueSourceKind::kPush:
      source = std::make_unique<PushQueueSource>(push_, config->push.queue_name);
      break;
    case QueueSourceKind::kPrometheus:
      source = std::make_unique<PrometheusQueueSource>(config->prometheus, options_.source_timeout);
      break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (resolved_.size() >= options_.max_scaled_objects)
    resolved_.clear();  // bounded; re-parsed on demand
  auto [it, inserted] = sources_.try_emplace(source->Describe(), nullptr);
  if (inserted) it->second = std::move(source);
  ResolvedScaledObject so{config, it->second.get()};
  resolved_[key] = so;
  return so;
}

Result<double> ScalerCore::ReadDepth(const ResolvedScaledObject& so) {
  auto timed_read = [&] {
    const auto start = std::chrono::steady_clock::now();
    Result<double> depth = so.source->ReadDepth();
    if (metrics_ != nullptr)
      metrics_->SourceRead(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return depth;
  };
  // Push depths are in memory already and must be seen the moment they arrive.
  if (so.config->source == QueueSourceKind::kPush) return timed_read();
  bool read_here = false;
  Result<double> depth = cache_.Get(so.source->Describe(), [&] {
    read_here = true;
    return timed_read();
  });
  if (!read_here && metrics_ != nullptr) metrics_->CacheHit();
  return depth;
}

size_t ScalerCore::scaled_objects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resolved_.size();
}

}  // namespace gpuvpa::scaler
