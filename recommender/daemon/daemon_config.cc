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

Status ReadList(const YAML::Node& map, const YamlField& f, std::string_view key,
                std::vector<std::string>& out) {
  const YAML::Node node = map[std::string(key)];
  if (!node) return OkStatus();
  if (!node.IsSequence() || node.size() == 0) return f[key].Error("expected a non-empty list");
  std::vector<std::string> values;
  for (size_t i = 0; i < node.size(); ++i) {
    Result<std::string> v = f[key][i].String(node[i]);
    if (!v.ok()) return v.status();
    if (v->empty()) return f[key][i].Error("must not be empty");
    values.push_back(std::move(v).value());
  }
  out = std::move(values);
  return OkStatus();
}

// Metric and label names of the DCGM exporter, when a cluster renames them (relabeling,
// another exporter version). Each is a list in order of preference.
Status ParseDcgmNames(const YAML::Node& n, const YamlField& f, DcgmNames& d) {
  GPUVPA_RETURN_IF_ERROR(
      f.CheckKeys(n, {"vram_mib_metrics", "sm_active_metrics", "gr_engine_active_metrics",
                      "gpu_util_percent_metrics", "pod_labels", "namespace_labels",
                      "container_labels", "host_labels", "uuid_labels", "exporter_containers"}));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "vram_mib_metrics", d.vram_mib));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "sm_active_metrics", d.sm_active));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "gr_engine_active_metrics", d.gr_engine_active));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "gpu_util_percent_metrics", d.gpu_util_percent));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "pod_labels", d.pod_labels));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "namespace_labels", d.namespace_labels));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "container_labels", d.container_labels));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "host_labels", d.host_labels));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "uuid_labels", d.uuid_labels));
  GPUVPA_RETURN_IF_ERROR(ReadList(n, f, "exporter_containers", d.exporter_containers));
  if (d.pod_labels.size() != d.namespace_labels.size() ||
      d.pod_labels.size() != d.container_labels.size())
    return f.Error(
        "pod_labels, namespace_labels and container_labels must have the same length "
        "(entry i of each is one label set)");
  return OkStatus();
}

// gpuvpa-node-agent's series as a source: `node_agent: {enabled: true}` (and names, when a
// cluster relabels them).
Status ParseNodeAgentNames(const YAML::Node& n, const YamlField& f, NodeAgentNames& a) {
  GPUVPA_RETURN_IF_ERROR(f.CheckKeys(n, {"enabled", "memory_bytes_metric", "busy_ratio_metric",
                                         "sm_active_ratio_metric", "node_label", "own_namespace"}));
  GPUVPA_RETURN_IF_ERROR(ReadYamlBool(n, f, "enabled", a.enabled));
  for (auto [key, value] :
       {std::pair{"memory_bytes_metric", &a.memory_bytes},
        std::pair{"busy_ratio_metric", &a.busy_ratio},
        std::pair{"sm_active_ratio_metric", &a.sm_active_ratio},
        std::pair{"node_label", &a.node_label}, std::pair{"own_namespace", &a.own_namespace}}) {
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, f, key, *value));
    if (value->empty()) return f[key].Error("must not be empty");
  }
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
        n, {"prometheus", "history_days", "poll_interval_seconds", "checkpoint",
            "checkpoint_interval_seconds", "charge_interval_seconds", "min_history_hours",
            "shared_gpu_replicas", "listen_http", "listen_grpc", "tls_cert_file", "tls_key_file",
            "client_ca_file", "shard", "dcgm", "node_agent", "unready_after_failed_polls"}));
    if (!n["prometheus"]) return root["prometheus"].Error("is required");
    GPUVPA_RETURN_IF_ERROR(ParsePrometheus(n["prometheus"], root["prometheus"], c.prometheus));
    double days = c.history_s / 86400, hours = c.min_history_s / 3600;
    GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, root, "history_days", 0.01, 90, days));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(n, root, "poll_interval_seconds", 1, 86400, c.poll_interval_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "checkpoint", c.checkpoint_path, true));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(n, root, "checkpoint_interval_seconds", 1, 86400, c.checkpoint_interval_s));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(n, root, "charge_interval_seconds", 0, 86400, c.charge_interval_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(n, root, "min_history_hours", 0, 24 * 90, hours));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlInt(n, root, "shared_gpu_replicas", 0, 64, c.shared_gpu_replicas));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlInt(n, root, "unready_after_failed_polls", 1, 1000, c.unready_after_failed_polls));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "listen_http", c.listen_http));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "listen_grpc", c.listen_grpc));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "tls_cert_file", c.tls_cert_file));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "tls_key_file", c.tls_key_file));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, root, "client_ca_file", c.client_ca_file));
    if (const YAML::Node dcgm = n["dcgm"])
      GPUVPA_RETURN_IF_ERROR(ParseDcgmNames(dcgm, root["dcgm"], c.prometheus.dcgm));
    if (const YAML::Node agent = n["node_agent"])
      GPUVPA_RETURN_IF_ERROR(
          ParseNodeAgentNames(agent, root["node_agent"], c.prometheus.dcgm.node_agent));
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
