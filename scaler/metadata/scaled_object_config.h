// Trigger metadata of one ScaledObject, parsed once into a typed config (as KEDA's scalers do).
// Everything after parsing works on this struct, never on the raw map. Bad metadata is an
// INVALID_ARGUMENT error naming the key and the value.
//
// Keys follow KEDA's own scalers where they exist:
//   source: redis (default) | prometheus | push
//   redis:      address (host:port) or host + port, databaseIndex, and one
//               of listName (LLEN) | stream + consumerGroup (lag) | sortedSetName (ZCARD);
//               target listLength (default 5; lagCount for streams), activationListLength
//               (default 0; activationLagCount for streams)
//   prometheus: serverAddress, query, threshold (required), activationThreshold (default 0),
//               ignoreNullValues (default true)
//   push:       queueName, queueLength (default 5), activationQueueLength (default 0)
//   metering:   costCenter (default "unallocated"), gpuPerReplica (default 1), gpuModel (the
//               price book's model; without it metered GPU time is counted but not priced),
//               maxReplicas (default 100: caps the replica estimate ceil(depth / target))
//   scalerAddress, enableTLS and unsafeSsl are KEDA's own (how KEDA dials this scaler) and
//   ignored here; so Redis TLS has no key of its own yet (not supported). Every key may also
//   come as `<key>FromEnv` (KEDA resolves it from the workload's environment and forwards the
//   value under that name); both forms at once is an error. Any other key is an error.
// Backends: address / host+port and serverAddress may name only backends listed in the
// scaler's own config (ScalerCore checks; the error names the key); credentials come from there.
// A ScaledObject is active when the depth is strictly above its activation threshold.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa::scaler {

enum class QueueSourceKind { kRedis, kPrometheus, kPush };
enum class RedisDataType { kList, kStream, kSortedSet };

struct RedisSourceConfig {
  std::string host;  // empty: the one Redis server of the scaler's config
  int port = 6379;
  int database_index = 0;
  RedisDataType data_type = RedisDataType::kList;
  std::string key;             // list, stream or sorted set name
  std::string consumer_group;  // streams only
};

struct PrometheusSourceConfig {
  std::string server_address;
  std::string query;
  bool ignore_null_values = true;
};

struct PushSourceConfig {
  std::string queue_name;
};

struct ScaledObjectConfig {
  std::string name;
  std::string namespace_name;
  QueueSourceKind source = QueueSourceKind::kRedis;
  std::string metric_name;  // what GetMetricSpec / GetMetrics call the metric
  double target = 5;        // desired replicas = ceil(depth / target)
  double activation = 0;    // active when depth > activation
  std::string cost_center = "unallocated";
  double gpu_per_replica = 1;
  std::string gpu_model;
  int max_replicas = 100;
  RedisSourceConfig redis;
  PrometheusSourceConfig prometheus;
  PushSourceConfig push;

  // The replica count KEDA's HPA would ask for at this depth, capped at max_replicas.
  int DesiredReplicas(double depth) const;
  bool IsActive(double depth) const { return depth > activation; }
};

using TriggerMetadata = std::map<std::string, std::string, std::less<>>;

// An HPA metric name must be a valid path segment: `/ . : %` become `-`, as KEDA's own Redis
// scaler does.
std::string HpaMetricName(std::string name);

// The most bytes of keys and values one trigger's metadata may hold (a long PromQL query fits).
inline constexpr size_t kMaxTriggerMetadataBytes = 4096;

// `name` must be a Kubernetes object name and `namespace_name` a namespace name (INVALID_ARGUMENT
// naming them): with the metadata's bound, every piece of state a caller creates is bounded.
Result<ScaledObjectConfig> ParseScaledObjectConfig(std::string_view name,
                                                   std::string_view namespace_name,
                                                   const TriggerMetadata& metadata);

}  // namespace gpuvpa::scaler
