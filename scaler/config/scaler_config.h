// gpuvpa-scaler's own configuration (YAML, `serve --scaler-config FILE`): the backends trigger
// metadata may name, each with its own credentials and TLS settings, the cost centers that may
// appear as metric labels, and the bounds on state kept per caller-chosen string. Metadata can
// only select among these backends; a credential goes only to the backend it is listed with.
//
//   redis:
//     - address: redis.queues:6379        # as trigger metadata names it (address, host+port)
//       username: scaler                  # optional (Redis 6 ACL user)
//       password_file: /etc/gpuvpa/redis-password   # optional; read at start, never logged
//       max_connections: 4                # pool size = concurrent reads on this server
//   prometheus:
//     - server_address: https://prometheus.monitoring.svc:9090
//       ca_file: /etc/gpuvpa/prometheus-ca.pem       # https only; default: system CAs
//       client_cert_file: ...  client_key_file: ...  # optional (mTLS)
//       insecure_skip_verify: false
//       bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
//       basic_auth_user: ...  basic_auth_password_file: ...
//       max_concurrent_reads: 4
//   cost_centers: [ai-agents, search]     # metric label values; others become "unallocated"
//   limits:
//     max_scaled_objects: 20000           # distinct (ScaledObject, metadata) kept parsed
//     max_queues: 20000                   # distinct queues (sources, cache entries, meters)
//     max_push_queues: 10000
//     idle_seconds: 900                   # state not asked for this long is evicted
//     max_pending_reads: 256              # per backend, beyond the reads in progress
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/net/http_client.h"

namespace gpuvpa::scaler {

struct RedisBackendConfig {
  std::string host;
  int port = 6379;
  std::string username;
  std::string password;  // loaded from password_file; never logged
  int max_connections = 4;
  std::string Address() const { return host + ":" + std::to_string(port); }
};

struct PrometheusBackendConfig {
  std::string server_address;  // normalized: no trailing '/'
  HttpClientOptions http;
  int max_concurrent_reads = 4;
};

struct ScalerLimits {
  size_t max_scaled_objects = 20000;
  size_t max_queues = 20000;
  size_t max_push_queues = 10000;
  std::chrono::seconds idle{900};
  size_t max_pending_reads = 256;
};

struct ScalerConfig {
  std::vector<RedisBackendConfig> redis;
  std::vector<PrometheusBackendConfig> prometheus;
  std::set<std::string, std::less<>> cost_centers;
  ScalerLimits limits;
};

// `name` is the file name for messages.
Result<ScalerConfig> ParseScalerConfig(std::string_view yaml_text, std::string_view name);
// An empty path gives a config with no backends (push sources only).
Result<ScalerConfig> LoadScalerConfig(const std::string& path);

// The Redis server as trigger metadata names it ("host:port"); Prometheus addresses compare
// after dropping trailing slashes.
std::string NormalizeServerAddress(std::string_view address);

}  // namespace gpuvpa::scaler
