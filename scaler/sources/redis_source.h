// Redis queue depth: list length (LLEN), sorted-set size (ZCARD), or a stream consumer group's
// outstanding work (XINFO GROUPS lag + pending entries).
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "scaler/metadata/scaled_object_config.h"
#include "scaler/sources/queue_depth_source.h"

struct redisContext;

namespace gpuvpa::scaler {

class RedisQueueSource final : public QueueDepthSource {
 public:
  // `password` comes from the scaler's own configuration (KEDA does not forward
  // TriggerAuthentication secrets to external scalers); empty for none.
  RedisQueueSource(RedisSourceConfig config, std::chrono::milliseconds timeout,
                   std::string password = {});
  ~RedisQueueSource() override;
  RedisQueueSource(const RedisQueueSource&) = delete;
  RedisQueueSource& operator=(const RedisQueueSource&) = delete;

  Result<double> ReadDepth() override;
  std::string Describe() const override;

 private:
  Status ConnectLocked();
  Result<double> QueryLocked();
  void DropConnectionLocked();

  const RedisSourceConfig config_;
  const std::chrono::milliseconds timeout_;
  const std::string password_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;  // guarded by mu_; reconnected after any failure
};

}  // namespace gpuvpa::scaler
