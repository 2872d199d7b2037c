// Trigger metadata parsing.
#include "scaler/metadata/scaled_object_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "core/base/names.h"

namespace gpuvpa::scaler {
namespace {

// A key as shown in an error: plain when short and printable, else quoted and cut.
std::string ShownKey(std::string_view key) {
  const std::string quoted = QuoteForError(key);
  return quoted.size() == key.size() + 2 ? std::string(key) : quoted;
}

class MetadataReader {
 public:
  explicit MetadataReader(const TriggerMetadata& m) : m_(m) {}

  Status Bad(std::string_view key, std::string_view value, std::string_view why) const {
    return InvalidArgumentError("trigger metadata " + ShownKey(key) + " " + QuoteForError(value) +
                                " " + std::string(why));
  }
  Status Missing(std::string_view key, std::string_view context) const {
    return InvalidArgumentError("trigger metadata " + std::string(key) + " is required " +
                                std::string(context));
  }
  // `key`, or `keyFromEnv`: KEDA resolves *FromEnv keys from the workload's environment and
  // forwards the value under the same key name. Giving both is an error.
  const std::string* Find(std::string_view key) {
    used_.emplace_back(key);
    const std::string from_env = std::string(key) + "FromEnv";
    used_.push_back(from_env);
    auto it = m_.find(key);
    auto env = m_.find(from_env);
    if (it != m_.end() && env != m_.end() && conflict_.ok())
      conflict_ = InvalidArgumentError("trigger metadata " + std::string(key) + " and " + from_env +
                                       " are both given; give one");
    if (it != m_.end()) return &it->second;
    return env == m_.end() ? nullptr : &env->second;
  }
  Status String(std::string_view key, std::string& out) {
    if (const std::string* v = Find(key)) out = *v;
    return OkStatus();
  }
  // A finite number >= 0 (or > 0 when `positive`).
  Status Number(std::string_view key, double& out, bool positive) {
    const std::string* v = Find(key);
    if (v == nullptr) return OkStatus();
    double d = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
    if (ec != std::errc() || p != v->data() + v->size() || !std::isfinite(d))
      return Bad(key, *v, "is not a number");
    if (positive ? d <= 0 : d < 0)
      return Bad(key, *v, positive ? "must be positive" : "must not be negative");
    out = d;
    return OkStatus();
  }
  Status Integer(std::string_view key, int& out, int min, int max) {
    const std::string* v = Find(key);
    if (v == nullptr) return OkStatus();
    int i = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), i);
    if (ec != std::errc() || p != v->data() + v->size() || i < min || i > max)
      return Bad(key, *v,
                 "is not an integer in " + std::to_string(min) + ".." + std::to_string(max));
    out = i;
    return OkStatus();
  }
  Status Bool(std::string_view key, bool& out) {
    const std::string* v = Find(key);
    if (v == nullptr) return OkStatus();
    if (*v == "true")
      out = true;
    else if (*v == "false")
      out = false;
    else
      return Bad(key, *v, "is not true or false");
    return OkStatus();
  }
  // Every key that no reader asked for is unknown.
  Status RejectUnknown() const {
    if (!conflict_.ok()) return conflict_;
    for (const auto& [key, value] : m_) {
      if (std::find(used_.begin(), used_.end(), key) == used_.end())
        return Bad(key, value, "is not a known key for this source");
    }
    return OkStatus();
  }

 private:
  const TriggerMetadata& m_;
  std::vector<std::string> used_;
  Status conflict_;
};

Status ParseRedis(MetadataReader& r, ScaledObjectConfig& c) {
  RedisSourceConfig& redis = c.redis;
  std::string address;
  GPUVPA_RETURN_IF_ERROR(r.String("address", address));
  GPUVPA_RETURN_IF_ERROR(r.String("host", redis.host));
  GPUVPA_RETURN_IF_ERROR(r.Integer("port", redis.port, 1, 65535));
  if (!address.empty()) {
    const size_t colon = address.rfind(':');
    int port = 0;
    const char* end = address.data() + address.size();
    if (colon == std::string::npos || colon == 0 ||
        std::from_chars(address.data() + colon + 1, end, port).ptr != end || port < 1 ||
        port > 65535)
      return r.Bad("address", address, "is not host:port");
    redis.host = address.substr(0, colon);
    redis.port = port;
  }
  GPUVPA_RETURN_IF_ERROR(r.Integer("databaseIndex", redis.database_index, 0, 1 << 16));
  std::string list, stream, zset;
  GPUVPA_RETURN_IF_ERROR(r.String("listName", list));
  GPUVPA_RETURN_IF_ERROR(r.String("stream", stream));
  GPUVPA_RETURN_IF_ERROR(r.String("sortedSetName", zset));
  const int given = !list.empty() + !stream.empty() + !zset.empty();
  if (given == 0) return r.Missing("listName", "for source redis (or stream, or sortedSetName)");
  if (given > 1)
    return InvalidArgumentError(
        "trigger metadata: give only one of listName, stream, sortedSetName");
  if (!stream.empty()) {
    redis.data_type = RedisDataType::kStream;
    redis.key = stream;
    GPUVPA_RETURN_IF_ERROR(r.String("consumerGroup", redis.consumer_group));
    if (redis.consumer_group.empty()) return r.Missing("consumerGroup", "for a redis stream");
    GPUVPA_RETURN_IF_ERROR(r.Number("lagCount", c.target, true));
    GPUVPA_RETURN_IF_ERROR(r.Number("activationLagCount", c.activation, false));
    c.metric_name = HpaMetricName("redis-stream-" + stream + "-" + redis.consumer_group);
  } else {
    redis.data_type = list.empty() ? RedisDataType::kSortedSet : RedisDataType::kList;
    redis.key = list.empty() ? zset : list;
    GPUVPA_RETURN_IF_ERROR(r.Number("listLength", c.target, true));
    GPUVPA_RETURN_IF_ERROR(r.Number("activationListLength", c.activation, false));
    c.metric_name = HpaMetricName((list.empty() ? "redis-zset-" : "redis-list-") + redis.key);
  }
  return OkStatus();
}

Status ParsePrometheus(MetadataReader& r, ScaledObjectConfig& c) {
  GPUVPA_RETURN_IF_ERROR(r.String("serverAddress", c.prometheus.server_address));
  GPUVPA_RETURN_IF_ERROR(r.String("query", c.prometheus.query));
  if (c.prometheus.server_address.empty())
    return r.Missing("serverAddress", "for source prometheus");
  if (!c.prometheus.server_address.starts_with("http://") &&
      !c.prometheus.server_address.starts_with("https://"))
    return r.Bad("serverAddress", c.prometheus.server_address, "is not an http(s):// URL");
  if (c.prometheus.query.empty()) return r.Missing("query", "for source prometheus");
  if (r.Find("threshold") == nullptr) return r.Missing("threshold", "for source prometheus");
  GPUVPA_RETURN_IF_ERROR(r.Number("threshold", c.target, true));
  GPUVPA_RETURN_IF_ERROR(r.Number("activationThreshold", c.activation, false));
  GPUVPA_RETURN_IF_ERROR(r.Bool("ignoreNullValues", c.prometheus.ignore_null_values));
  c.metric_name = HpaMetricName("prometheus-" + c.name);
  return OkStatus();
}

Status ParsePush(MetadataReader& r, ScaledObjectConfig& c) {
  GPUVPA_RETURN_IF_ERROR(r.String("queueName", c.push.queue_name));
  if (c.push.queue_name.empty()) return r.Missing("queueName", "for source push");
  GPUVPA_RETURN_IF_ERROR(r.Number("queueLength", c.target, true));
  GPUVPA_RETURN_IF_ERROR(r.Number("activationQueueLength", c.activation, false));
  c.metric_name = HpaMetricName("push-" + c.push.queue_name);
  return OkStatus();
}

}  // namespace

std::string HpaMetricName(std::string name) {
  for (char& ch : name)
    if (ch == '/' || ch == '.' || ch == ':' || ch == '%') ch = '-';
  return name;
}

int ScaledObjectConfig::DesiredReplicas(double depth) const {
  if (!(depth > 0)) return 0;
  return static_cast<int>(std::min<double>(max_replicas, std::ceil(depth / target)));
}

Result<ScaledObjectConfig> ParseScaledObjectConfig(std::string_view name,
                                                   std::string_view namespace_name,
                                                   const TriggerMetadata& metadata) {
  // Caller strings key the scaler's state (parsed configs, cache entries, meters), which is
  // bounded by count: each entry is bounded in bytes here, so the state is bounded in bytes.
  GPUVPA_RETURN_IF_ERROR(ValidateObjectName("ScaledObject name", name));
  GPUVPA_RETURN_IF_ERROR(ValidateNamespaceName("ScaledObject namespace", namespace_name));
  size_t metadata_bytes = 0;
  const std::pair<const std::string, std::string>* largest = nullptr;
  for (const auto& entry : metadata) {
    metadata_bytes += entry.first.size() + entry.second.size();
    if (largest == nullptr || entry.second.size() > largest->second.size()) largest = &entry;
  }
  if (metadata_bytes > kMaxTriggerMetadataBytes)
    return InvalidArgumentError("trigger metadata: " + std::to_string(metadata_bytes) +
                                " bytes of keys and values, more than " +
                                std::to_string(kMaxTriggerMetadataBytes) +
                                " (the largest: " + QuoteForError(largest->first) + ", " +
                                std::to_string(largest->second.size()) + " bytes)");
  ScaledObjectConfig c;
  c.name = std::string(name);
  c.namespace_name = std::string(namespace_name);
  MetadataReader r(metadata);
  // KEDA's own keys, forwarded verbatim: how KEDA reaches this scaler, not queue settings.
  for (const char* keda_key : {"scalerAddress", "enableTLS", "unsafeSsl"}) (void)r.Find(keda_key);
  std::string source = "redis";
  GPUVPA_RETURN_IF_ERROR(r.String("source", source));
  GPUVPA_RETURN_IF_ERROR(r.String("costCenter", c.cost_center));
  if (Status s = ValidateLabelText("trigger metadata costCenter", c.cost_center); !s.ok()) return s;
  GPUVPA_RETURN_IF_ERROR(r.Number("gpuPerReplica", c.gpu_per_replica, true));
  GPUVPA_RETURN_IF_ERROR(r.String("gpuModel", c.gpu_model));
  GPUVPA_RETURN_IF_ERROR(r.Integer("maxReplicas", c.max_replicas, 1, 100000));
  if (source == "redis") {
    c.source = QueueSourceKind::kRedis;
    GPUVPA_RETURN_IF_ERROR(ParseRedis(r, c));
  } else if (source == "prometheus") {
    c.source = QueueSourceKind::kPrometheus;
    GPUVPA_RETURN_IF_ERROR(ParsePrometheus(r, c));
  } else if (source == "push") {
    c.source = QueueSourceKind::kPush;
    GPUVPA_RETURN_IF_ERROR(ParsePush(r, c));
  } else {
    return r.Bad("source", source, "is not one of redis, prometheus, push");
  }
  GPUVPA_RETURN_IF_ERROR(r.RejectUnknown());
  return c;
}

}  // namespace gpuvpa::scaler
