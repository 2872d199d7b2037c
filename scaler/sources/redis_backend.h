// One Redis server from the scaler's config: a bulkhead whose workers each own one connection
// (the pool: max_connections, whatever the number of queues), the server's own credentials
// (sent to it and nowhere else), and queue sources that read through it: list length (LLEN),
// sorted-set size (ZCARD), or a stream consumer group's outstanding work (lag + pending). Any
// number of queues are read in one pipelined round trip: every command is written before the
// first reply is read.
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

class RedisBackend final : public BatchDepthReader {
 public:
  RedisBackend(RedisBackendConfig config, size_t max_pending);
  ~RedisBackend() override;
  RedisBackend(const RedisBackend&) = delete;
  RedisBackend& operator=(const RedisBackend&) = delete;

  // Runs on `worker` (its connection); a connection found dropped (a Redis restart) is replaced
  // and the read retried once on the fresh one.
  Result<double> Read(int worker, const RedisSourceConfig& queue, Deadline deadline);
  // The depths of `queues`, in order, in one pipelined round trip (and one SELECT per change of
  // database), with Read's retry. An error of one queue (a wrong type, a missing group) is that
  // queue's alone; a connection that fails fails the queues not answered yet.
  std::vector<Result<double>> ReadMany(int worker,
                                       const std::vector<const RedisSourceConfig*>& queues,
                                       Deadline deadline);
  std::vector<Result<double>> ReadBatch(int worker,
                                        const std::vector<const QueueDepthSource*>& sources,
                                        Deadline deadline) override;
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
  // One pipelined exchange on a connected `c`; sets `lost` when the connection dropped.
  std::vector<Result<double>> Exchange(Connection& c,
                                       const std::vector<const RedisSourceConfig*>& queues,
                                       Deadline deadline, bool& lost);

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
  BatchDepthReader* batch_reader() override { return &backend_; }
  const RedisSourceConfig& config() const { return config_; }

 private:
  RedisBackend& backend_;
  const RedisSourceConfig config_;
};

}  // namespace gpuvpa::scaler
