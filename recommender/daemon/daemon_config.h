// gpuvpa-recommender's configuration: the `recommender:` section of the gpuvpa config file
// (whose other sections give prices, cost centers and the ledger). Documented in the README,
// "gpuvpa-recommender".
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "recommender/input/prometheus_source.h"

namespace gpuvpa::recommender {

struct DaemonConfig {
  PrometheusSourceOptions prometheus;  // prometheus: {server_address, TLS, credentials, ...}
  double history_s = 7 * 86400.0;      // history_days
  double poll_interval_s = 60;         // poll_interval_seconds
  std::string checkpoint_path;         // checkpoint (required)
  double checkpoint_interval_s = 300;  // checkpoint_interval_seconds
  // charge_interval_seconds: usage goes to the ledger as one row per workload-container per
  // interval (and at the first poll and at stop), not per poll: a row a minute per workload is
  // 144 M rows a day at 100,000 workloads. Pending usage is kept in the checkpoint meanwhile.
  // 0: every poll.
  double charge_interval_s = 3600;
  double min_history_s = 24 * 3600.0;  // min_history_hours
  // /readyz turns 503 after this many polls in a row failed (and 200 again at the next success):
  // readiness says whether recommendations are current, not only that one poll ever worked.
  int unready_after_failed_polls = 3;          // unready_after_failed_polls
  int shared_gpu_replicas = 0;                 // 0: the most pods seen on a device at once
  std::string listen_http = "127.0.0.1:8080";  // /metrics, /healthz, /readyz
  std::string listen_grpc = "127.0.0.1:9090";  // RecommendationService + grpc.health.v1
  std::string tls_cert_file, tls_key_file, client_ca_file;  // gRPC TLS / mTLS
  int shard_index = 0;  // shard: {index, count}: this replica's workloads
  int shard_count = 1;
};

// `yaml` is the section's text; `file` names it in errors ("gpuvpa config FILE: recommender...").
Result<DaemonConfig> ParseDaemonConfig(std::string_view yaml, std::string_view file);

}  // namespace gpuvpa::recommender
