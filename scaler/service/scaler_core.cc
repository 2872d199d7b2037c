// Scaler core.
#include "scaler/service/scaler_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <map>
#include <utility>

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
      // One cache shard per refresh phase: a refresh step walks and locks only its own.
      cache_(options.cache_ttl, SteadyClock::now, options.refresh_phases) {
  if (options_.refresh_window > std::chrono::milliseconds::zero())
    refresher_ = std::thread([this] { RefreshLoop(); });
}

ScalerCore::~ScalerCore() {
  {
    std::lock_guard<std::mutex> lock(refresh_mu_);
    stopping_ = true;
  }
  refresh_cv_.notify_all();
  if (refresher_.joinable()) refresher_.join();
  // Their tasks hold this core; each ends by its deadline (the source timeout).
  std::unique_lock<std::mutex> lock(refresh_mu_);
  refresh_cv_.wait(lock, [this] { return refreshes_in_flight_ == 0; });
}

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
    // Drop unreferenced queues (only parsed metadata and cache state go with them); one that a
    // read held at an earlier insert goes now.
    for (auto it = queues_.begin();
         queues_.size() > options_.limits.max_queues && it != queues_.end();)
      if (it != queue && it->second.source.use_count() == 1) {
        cache_.Erase(it->first);
        it = queues_.erase(it);
      } else {
        ++it;
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

void ScalerCore::RefreshLoop() {
  // A cycle of 3/4 of the TTL: a queue's read that lands up to a quarter of the TTL late still
  // replaces its depth before that expires, so the asks in between are answered from memory.
  const size_t phases = cache_.shards();
  const auto step = std::max<SteadyClock::duration>(
      std::chrono::duration_cast<SteadyClock::duration>(options_.cache_ttl * 3 / 4) /
          static_cast<long>(phases),
      std::chrono::microseconds(100));
  auto next = SteadyClock::now() + step;
  std::unique_lock<std::mutex> lock(refresh_mu_);
  for (size_t phase = 0; !refresh_cv_.wait_until(lock, next, [this] { return stopping_; });
       phase = (phase + 1) % phases) {
    lock.unlock();
    RefreshAsked(phase);
    // Fixed steps (not "a step after the last one ended"): each phase keeps its period.
    next = std::max(next + step, SteadyClock::now());
    lock.lock();
  }
}

void ScalerCore::RefreshAsked(size_t phase) {
  struct Batch {
    std::vector<std::weak_ptr<QueueDepthSource>> sources;
    std::vector<std::string> keys;
  };
  std::map<BatchDepthReader*, std::vector<Batch>> batches;
  std::vector<std::string> asked = cache_.Asked(options_.refresh_window, phase);
  if (asked.empty()) return;
  // The lock that Resolve needs on every request is taken for a bounded stretch at a time.
  constexpr size_t kLookupsPerLock = 64;
  for (size_t from = 0; from < asked.size(); from += kLookupsPerLock) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = from; i < std::min(asked.size(), from + kLookupsPerLock); ++i) {
      auto it = queues_.find(asked[i]);
      if (it == queues_.end()) continue;
      BatchDepthReader* reader = it->second.source->batch_reader();
      if (reader == nullptr) continue;  // read one at a time: only when asked
      std::vector<Batch>& mine = batches[reader];
      if (mine.empty() || mine.back().sources.size() >= options_.refresh_batch_queues)
        mine.emplace_back();
      mine.back().sources.push_back(it->second.source);  // weak: never keeps a queue from eviction
      mine.back().keys.push_back(std::move(asked[i]));
    }
  }
  for (auto& [reader, mine] : batches) {
    {
      std::lock_guard<std::mutex> lock(refresh_mu_);
      if (stopping_ || refreshing_[reader] > 0) continue;  // slow or stalled: its asks read
    }
    for (Batch& b : mine) SubmitRefresh(reader, std::move(b.sources), std::move(b.keys));
  }
}

void ScalerCore::SubmitRefresh(BatchDepthReader* reader,
                               std::vector<std::weak_ptr<QueueDepthSource>> queued_sources,
                               std::vector<std::string> queued_keys) {
  Bulkhead* bulkhead = nullptr;
  if (auto first = queued_sources.front().lock()) bulkhead = first->bulkhead();
  if (bulkhead == nullptr) return;  // evicted meanwhile
  const auto sent = SteadyClock::now();
  const Deadline deadline = sent + options_.source_timeout;
  {
    std::lock_guard<std::mutex> lock(refresh_mu_);
    ++refreshes_in_flight_;
    ++refreshing_[reader];
  }
  auto finished = [this, reader] {
    std::lock_guard<std::mutex> lock(refresh_mu_);
    --refreshes_in_flight_;
    --refreshing_[reader];
    refresh_cv_.notify_all();
  };
  Status queued =
      bulkhead->Submit(deadline, [this, reader, queued_sources = std::move(queued_sources),
                                  queued_keys = std::move(queued_keys), sent, deadline,
                                  finished](int worker, bool expired) {
        // A round trip that waited past its deadline behind other reads stores nothing: asks read.
        std::vector<std::shared_ptr<QueueDepthSource>> sources;  // held for the read only
        std::vector<const QueueDepthSource*> batch;
        std::vector<std::string> keys;
        for (size_t i = 0; i < queued_sources.size() && !expired; ++i)
          if (std::shared_ptr<QueueDepthSource> s = queued_sources[i].lock()) {
            batch.push_back(s.get());
            sources.push_back(std::move(s));
            keys.push_back(queued_keys[i]);
          }
        if (!batch.empty()) {
          const std::vector<Result<double>> depths = reader->ReadBatch(worker, batch, deadline);
          cache_.Store(keys, depths, sent);
          refreshed_queues_ += batch.size();
          ++refresh_round_trips_;
          if (metrics_ != nullptr)
            metrics_->SourceRefresh(
                batch.size(), std::chrono::duration<double>(SteadyClock::now() - sent).count());
          // One line per round trip, not one per queue: a backend that is down fails all of them.
          size_t failed = 0;
          size_t first = 0;
          for (size_t i = 0; i < depths.size(); ++i)
            if (!depths[i].ok() && failed++ == 0) first = i;
          if (failed > 0) {
            const Status& why = depths[first].status();
            LogSourceError(keys[first],
                           failed == 1 ? why
                                       : Status(why.code(), why.message() + " (and " +
                                                                std::to_string(failed - 1) +
                                                                " more queues of this refresh)"));
          }
        }
        finished();
      });
  if (!queued.ok()) finished();  // the bulkhead is full: skipped, the asks read
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
