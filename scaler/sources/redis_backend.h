// One Redis server from the scaler's config: a bulkhead whose workers each own one connection
// (the pool: max_connections, whatever the number of queues), the server's own credentials
// (sent to it and nowhere else), and queue sources that read through it: list length (LLEN),
// sorted-set size (ZCARD), or a stream consumer group's outstanding work (lag + pending).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "scaler/config/scaler_config.h"
#include "scaler/metadata/scaled_object_config.h"
#include "scaler/sources/queue_depth_source.h"

struct redisContext;

namespace gpuvpa::scaler {

class RedisBackend {
 public:
  RedisBackend(RedisBackendConfig config, size_t max_pending);
  ~RedisBackend();
  RedisBackend(const RedisBackend&) = delete;
  RedisBackend& operator=(const RedisBackend&) = delete;

  // Runs on `worker` (its connection); a connection found dropped (a Redis restart) is replaced
  // and the read retried once on the fresh one.
  Result<double> Read(int worker, const RedisSourceConfig& queue, Deadline deadline);
  Bulkhead& bulkhead() { return *bulkhead_; }
  const RedisBackendConfig& config() const { return config_; }
  int open_connections() const { return open_; }

 private:
  struct Connection {
    redisContext* ctx = nullptr;
    int database = 0;
  };
  Status Connect(Connection& c, Deadline deadline);
  void Drop(Connection& c);

  const RedisBackendConfig config_;
  std::vector<Connection> connections_;  // one per worker, touched only by that worker
  std::atomic<int> open_{0};
  std::unique_ptr<Bulkhead> bulkhead_;  // last: its workers stop before the connections go
};

class RedisQueueSource final : public QueueDepthSource {
 public:
  RedisQueueSource(RedisBackend& backend, RedisSourceConfig config)
      : backend_(backend), config_(std::move(config)) {}
  Result<double> ReadDepth(int worker, Deadline deadline) override {
    return backend_.Read(worker, config_, deadline);
  }
  std::string Describe() const override;
  Bulkhead* bulkhead() override { return &backend_.bulkhead(); }

 private:
  RedisBackend& backend_;
  const RedisSourceConfig config_;
};

}  // namespace gpuvpa::scaler
