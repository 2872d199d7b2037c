// The backends of the scaler's config, built once at start: one RedisBackend per Redis server
// and one PrometheusBackend per Prometheus endpoint, each with its own connections, bulkhead and
// credentials. Trigger metadata can only select among them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scaler/config/scaler_config.h"
#include "scaler/sources/prometheus_source.h"
#include "scaler/sources/redis_backend.h"

namespace gpuvpa::scaler {

class Backends {
 public:
  static Result<std::unique_ptr<Backends>> Create(const ScalerConfig& config);

  // Null when not configured.
  RedisBackend* FindRedis(const std::string& host, int port) const;
  PrometheusBackend* FindPrometheus(const std::string& server_address) const;
  // The only Redis server when exactly one is configured (metadata may then omit address).
  RedisBackend* OnlyRedis() const { return redis_.size() == 1 ? redis_[0].get() : nullptr; }
  // "a:6379, b:6379" or "none" (for errors).
  std::string RedisAddresses() const;
  std::string PrometheusAddresses() const;
  int open_redis_connections() const;

 private:
  std::vector<std::unique_ptr<RedisBackend>> redis_;
  std::vector<std::unique_ptr<PrometheusBackend>> prometheus_;
};

}  // namespace gpuvpa::scaler
