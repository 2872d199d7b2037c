// Scaler core.
#include "scaler/service/scaler_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>

namespace gpuvpa::scaler {
namespace {

using SteadyClock = std::chrono::steady_clock;

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

// The metadata key that named the Redis server, for errors.
std::string RedisAddressKey(const TriggerMetadata& m) {
  for (const char* key : {"address", "addressFromEnv", "host", "hostFromEnv"})
    if (m.contains(key)) return key;
  return "address";
}

// Keeps `map` under `cap` entries by dropping the least recently used one.
template <typename Map>
void EvictOldestIfFull(Map& map, size_t cap) {
  if (map.size() < cap || map.empty()) return;
  auto oldest = std::min_element(map.begin(), map.end(), [](const auto& a, const auto& b) {
    return a.second.used_at < b.second.used_at;
  });
  map.erase(oldest);
}

}  // namespace

ScalerCore::ScalerCore(const ScalerCoreOptions& options, const Backends& backends,
                       const PushDepthRegistry& push, ScalerMetrics* metrics)
    : options_(options),
      backends_(backends),
      push_(push),
      metrics_(metrics),
      cache_(options.cache_ttl) {}

Result<std::shared_ptr<QueueDepthSource>> ScalerCore::MakeSource(
    const ScaledObjectConfig& c, const TriggerMetadata& metadata) const {
  switch (c.source) {
    case QueueSourceKind::kRedis: {
      RedisBackend* backend = c.redis.host.empty()
                                  ? backends_.OnlyRedis()
                                  : backends_.FindRedis(c.redis.host, c.redis.port);
      if (backend == nullptr) {
        const std::string key = RedisAddressKey(metadata);
        if (c.redis.host.empty())
          return InvalidArgumentError(
              "trigger metadata address is required: the scaler's config "
              "lists Redis servers " +
              backends_.RedisAddresses());
        return InvalidArgumentError("trigger metadata " + key + " \"" + c.redis.host + ":" +
                                    std::to_string(c.redis.port) +
                                    "\" is not a Redis server of the scaler's config (it lists " +
                                    backends_.RedisAddresses() + ")");
      }
      return std::shared_ptr<QueueDepthSource>(
          std::make_shared<RedisQueueSource>(*backend, c.redis));
    }
    case QueueSourceKind::kPrometheus: {
      PrometheusBackend* backend = backends_.FindPrometheus(c.prometheus.server_address);
      if (backend == nullptr)
        return InvalidArgumentError(
            "trigger metadata serverAddress \"" + c.prometheus.server_address +
            "\" is not a Prometheus endpoint of the scaler's config (it lists " +
            backends_.PrometheusAddresses() + ")");
      return std::shared_ptr<QueueDepthSource>(
          std::make_shared<PrometheusQueueSource>(*backend, c.prometheus));
    }
    case QueueSourceKind::kPush:
      return std::shared_ptr<QueueDepthSource>(
          std::make_shared<PushQueueSource>(push_, c.push.queue_name));
  }
  return InternalError("unhandled source kind");
}

Result<ResolvedScaledObject> ScalerCore::Resolve(std::string_view name,
                                                 std::string_view namespace_name,
                                                 const TriggerMetadata& metadata) {
  const std::string key = ResolveKey(name, namespace_name, metadata);
  const auto now = SteadyClock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = resolved_.find(key); it != resolved_.end()) {
      it->second.used_at = now;
      return it->second.so;
    }
  }
  Result<ScaledObjectConfig> parsed = ParseScaledObjectConfig(name, namespace_name, metadata);
  if (!parsed.ok()) return parsed.status();
  auto config = std::make_shared<const ScaledObjectConfig>(std::move(parsed).value());
  Result<std::shared_ptr<QueueDepthSource>> source = MakeSource(*config, metadata);
  if (!source.ok()) return source.status();
  std::lock_guard<std::mutex> lock(mu_);
  // Make room first: an evicted ScaledObject may free the queue the cap below needs.
  EvictOldestIfFull(resolved_, options_.limits.max_scaled_objects);
  auto [queue, fresh] = queues_.try_emplace((*source)->Describe());
  if (fresh) {
    queue->second.source = std::move(source).value();
    if (queues_.size() > options_.limits.max_queues) {
      // Drop an unreferenced queue (only parsed metadata and cache state go with it).
      for (auto it = queues_.begin(); it != queues_.end(); ++it)
        if (it != queue && it->second.source.use_count() == 1) {
          cache_.Erase(it->first);
          queues_.erase(it);
          break;
        }
    }
  }
  ResolvedScaledObject so{config, queue->second.source};
  resolved_[key] = {so, now};
  return so;
}

void ScalerCore::LogSourceError(const std::string& key, const Status& status) {
  const auto now = SteadyClock::now();
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = queues_.find(key);
    if (it == queues_.end()) return;
    QueueEntry& q = it->second;
    if (q.error_logged_at != SteadyClock::time_point{} &&
        now - q.error_logged_at < options_.error_log_interval) {
      ++q.errors_not_logged;
      return;
    }
    q.error_logged_at = now;
    suppressed = q.errors_not_logged;
    q.errors_not_logged = 0;
  }
  spdlog::warn("queue read failed: {}{}", status.message(),
               suppressed ? " (" + std::to_string(suppressed) + " more since the last report)"
                          : std::string());
}

void ScalerCore::ReadDepthAsync(const ResolvedScaledObject& so, Deadline deadline,
                                DepthCallback done) {
  std::shared_ptr<QueueDepthSource> source = so.source;
  Bulkhead* bulkhead = source->bulkhead();
  if (bulkhead == nullptr) {  // in memory (push): seen the moment it arrives, never cached
    done(source->ReadDepth(0, deadline));
    return;
  }
  deadline = std::min(deadline, SteadyClock::now() + options_.source_timeout);
  const std::string key = source->Describe();
  bool started = false;
  cache_.Get(key, std::move(done), [&](std::function<void(Result<double>)> complete) {
    started = true;
    const auto submitted = SteadyClock::now();
    Status queued = bulkhead->Submit(deadline, [this, source, key, deadline, submitted, complete](
                                                   int worker, bool expired) {
      Result<double> depth =
          expired
              ? Result<double>(UnavailableError(
                    source->Describe() + ": no free connection to the backend before the deadline"))
              : source->ReadDepth(worker, deadline);
      if (metrics_ != nullptr)
        metrics_->SourceRead(std::chrono::duration<double>(SteadyClock::now() - submitted).count());
      if (!depth.ok()) LogSourceError(key, depth.status());
      complete(std::move(depth));
    });
    if (!queued.ok()) {
      LogSourceError(key, queued);
      complete(queued);
    }
  });
  if (!started && metrics_ != nullptr) metrics_->CacheHit();
}

Result<double> ScalerCore::ReadDepth(const ResolvedScaledObject& so) {
  auto answer = std::make_shared<std::promise<Result<double>>>();
  std::future<Result<double>> future = answer->get_future();
  ReadDepthAsync(so, SteadyClock::now() + options_.source_timeout,
                 [answer](const Result<double>& depth) { answer->set_value(depth); });
  return future.get();
}

void ScalerCore::EvictIdle() {
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(options_.limits.idle);
  const auto now = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(resolved_, [&](const auto& kv) { return now - kv.second.used_at > idle; });
  // A queue goes when no parsed metadata, stream or read in flight refers to it any more.
  std::erase_if(queues_, [&](const auto& kv) {
    if (kv.second.source.use_count() != 1) return false;
    cache_.Erase(kv.first);
    return true;
  });
  cache_.EvictIdle(idle);
}

size_t ScalerCore::scaled_objects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resolved_.size();
}

size_t ScalerCore::queues() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queues_.size();
}

}  // namespace gpuvpa::scaler
