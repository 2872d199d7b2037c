// gpuvpa-recommender configuration loading.
#include "recommender/daemon/daemon_config.h"

#include "core/base/yaml_fields.h"
#include "core/net/http_client_config.h"

namespace gpuvpa::recommender {
namespace {

Status ParsePrometheus(const YAML::Node& n, const YamlField& f, PrometheusSourceOptions& p) {
  GPUVPA_RETURN_IF_ERROR(f.CheckKeys(
      n, WithHttpEndpointKeys({"step_seconds", "chunk_seconds", "hosts_per_query", "lag_seconds",
                               "timeout_seconds", "max_retries", "selector"})));
  GPUVPA_RETURN_IF_ERROR(ReadHttpEndpoint(n, f, p.http));
  GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, f, "step_seconds", 1, 3600, p.step_s));
  GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, f, "chunk_seconds", 1, 7 * 86400, p.chunk_s));
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "hosts_per_query", 0, 100000, p.hosts_per_query));
  GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, f, "lag_seconds", 0, 3600, p.lag_s));
  GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, f, "timeout_seconds", 0.1, 600, p.request_timeout_s));
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "max_retries", 0, 10, p.max_retries));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, f, "selector", p.selector));
  if (p.chunk_s < p.step_s) return f["chunk_seconds"].Error("is shorter than step_seconds");
  if (p.chunk_s / p.step_s > 10000)
    return f["chunk_seconds"].Error("holds more than 10,000 steps (Prometheus's limit is 11,000)");
  return OkStatus();
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(std::string_view yaml, std::string_view file) {
  const YamlField root{"gpuvpa config " + std::string(file) + ":", "recommender"};
  DaemonConfig c;
  try {
    const YAML::Node n = YAML::Load(std::string(yaml));
    if (!n || n.IsNull())
      return root.Error("is missing (the daemon needs at least prometheus and checkpoint)");
    GPUVPA_RETURN_IF_ERROR(root.CheckKeys(
        n,
        {"prometheus", "history_days", "poll_interval_seconds", "checkpoint",
         "checkpoint_interval_seconds", "min_history_hours", "shared_gpu_replicas", "listen_http",
         "listen_grpc", "tls_cert_file", "tls_key_file", "client_ca_file", "shard"}));
    if (!n["prometheus"]) return root["prometheus"].Error("is required");
    GPUVPA_RETURN_IF_ERROR(ParsePrometheus(n["prometheus"], root["prometheus"], c.prometheus));
    double days = c.history_s / 86400, hours = c.min_history_s / 3600;
    GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, root, "history_days", 0.01, 90, days));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(n, root, "poll_interval_seconds", 1, 86400, c.poll_interval_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "checkpoint", c.checkpoint_path, true));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(n, root, "checkpoint_interval_seconds", 1, 86400, c.checkpoint_interval_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, root, "min_history_hours", 0, 24 * 90, hours));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlInt(n, root, "shared_gpu_replicas", 0, 64, c.shared_gpu_replicas));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "listen_http", c.listen_http));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "listen_grpc", c.listen_grpc));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "tls_cert_file", c.tls_cert_file));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "tls_key_file", c.tls_key_file));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "client_ca_file", c.client_ca_file));
    if (const YAML::Node shard = n["shard"]) {
      GPUVPA_RETURN_IF_ERROR(root["shard"].CheckKeys(shard, {"index", "count"}));
      GPUVPA_RETURN_IF_ERROR(ReadYamlInt(shard, root["shard"], "count", 1, 1024, c.shard_count));
      GPUVPA_RETURN_IF_ERROR(
          ReadYamlInt(shard, root["shard"], "index", 0, c.shard_count - 1, c.shard_index));
    }
    c.history_s = days * 86400;
    c.min_history_s = hours * 3600;
  } catch (const YAML::Exception& e) {
    return root.Error(e.what());
  }
  return c;
}

}  // namespace gpuvpa::recommender
