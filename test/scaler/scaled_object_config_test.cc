// Trigger metadata parsing: typed config with defaults, errors naming the key.
#include "scaler/metadata/scaled_object_config.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuvpa::scaler {
namespace {

Result<ScaledObjectConfig> Parse(const TriggerMetadata& m) {
  return ParseScaledObjectConfig("jobs", "ml", m);
}

void ExpectInvalid(const TriggerMetadata& m, const std::string& key) {
  Result<ScaledObjectConfig> c = Parse(m);
  ASSERT_FALSE(c.ok()) << "accepted metadata with bad " << key;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
}

// The caller's names key the scaler's state: they must be Kubernetes names, and the metadata
// is bounded in bytes, so a million callers with megabyte names cannot grow the scaler.
TEST(ScaledObjectConfigTest, NamesAreKubernetesNamesAndMetadataIsBoundedInBytes) {
  const TriggerMetadata ok = {{"listName", "jobs"}};
  EXPECT_TRUE(ParseScaledObjectConfig("jobs.v2", "ml-team", ok).ok());
  for (const auto& [name, ns] :
       std::vector<std::pair<std::string, std::string>>{{std::string(1 << 20, 'n'), "ml"},
                                                        {"", "ml"},
                                                        {"Jobs", "ml"},
                                                        {"jobs", ""},
                                                        {"jobs", std::string(64, 'n')},
                                                        {"jobs", "ml/../x"},
                                                        {"jo\nbs", "ml"}}) {
    Result<ScaledObjectConfig> c = ParseScaledObjectConfig(name, ns, ok);
    ASSERT_FALSE(c.ok()) << name.substr(0, 40) << " / " << ns;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("ScaledObject"), std::string::npos);
    EXPECT_LT(c.status().message().size(), 400u) << "the error quotes a bounded part";
  }
  Result<ScaledObjectConfig> big =
      Parse({{"listName", "jobs"}, {"x-note", std::string(kMaxTriggerMetadataBytes, 'x')}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("the largest: \"x-note\""), std::string::npos)
      << big.status().message();
}

TEST(ScaledObjectConfigTest, RedisListWithKedaNamesAndDefaults) {
  Result<ScaledObjectConfig> c = Parse({{"scalerAddress", "gpuvpa-scaler:9090"},
                                        {"address", "redis:6380"},
                                        {"listName", "jobs"},
                                        {"costCenter", "search"}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->source, QueueSourceKind::kRedis);
  EXPECT_EQ(c->redis.data_type, RedisDataType::kList);
  EXPECT_EQ(c->redis.host, "redis");
  EXPECT_EQ(c->redis.port, 6380);
  EXPECT_EQ(c->target, 5);
  EXPECT_EQ(c->activation, 0);
  EXPECT_EQ(c->cost_center, "search");
  EXPECT_EQ(c->metric_name, "redis-list-jobs");
}

TEST(ScaledObjectConfigTest, StreamsSortedSetsPrometheusAndPush) {
  Result<ScaledObjectConfig> stream = Parse({{"stream", "events"},
                                             {"consumerGroup", "workers"},
                                             {"lagCount", "10"},
                                             {"activationLagCount", "2"}});
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  EXPECT_EQ(stream->redis.data_type, RedisDataType::kStream);
  EXPECT_EQ(stream->target, 10);
  EXPECT_EQ(stream->activation, 2);
  Result<ScaledObjectConfig> zset = Parse({{"sortedSetName", "delayed"}, {"databaseIndex", "3"}});
  ASSERT_TRUE(zset.ok());
  EXPECT_EQ(zset->redis.data_type, RedisDataType::kSortedSet);
  EXPECT_EQ(zset->redis.database_index, 3);
  Result<ScaledObjectConfig> prom = Parse({{"source", "prometheus"},
                                           {"serverAddress", "http://prom:9090"},
                                           {"query", "sum(queue_depth)"},
                                           {"threshold", "20"}});
  ASSERT_TRUE(prom.ok()) << prom.status().message();
  EXPECT_EQ(prom->target, 20);
  EXPECT_TRUE(prom->prometheus.ignore_null_values);
  Result<ScaledObjectConfig> push =
      Parse({{"source", "push"}, {"queueName", "agent-tasks"}, {"queueLength", "1"}});
  ASSERT_TRUE(push.ok());
  EXPECT_EQ(push->push.queue_name, "agent-tasks");
}

TEST(ScaledObjectConfigTest, BadMetadataIsInvalidArgumentNamingTheKey) {
  ExpectInvalid({}, "listName");
  ExpectInvalid({{"listName", "jobs"}, {"listLength", "five"}}, "listLength");
  ExpectInvalid({{"listName", "jobs"}, {"activationListLength", "-1"}}, "activationListLength");
  ExpectInvalid({{"source", "kafka"}, {"listName", "jobs"}}, "source");
  ExpectInvalid({{"listName", "jobs"}, {"listLength", "0"}}, "listLength");
  ExpectInvalid({{"listName", "jobs"}, {"databaseIndex", "-1"}}, "databaseIndex");
  ExpectInvalid({{"listName", "jobs"}, {"address", "redis"}}, "address");
  ExpectInvalid({{"listName", "jobs"}, {"lisLength", "3"}}, "lisLength");
  ExpectInvalid({{"stream", "events"}}, "consumerGroup");
  ExpectInvalid({{"source", "prometheus"}, {"serverAddress", "http://p"}, {"query", "q"}},
                "threshold");
  ExpectInvalid({{"source", "prometheus"},
                 {"serverAddress", "http://p"},
                 {"query", "q"},
                 {"threshold", "1"},
                 {"activationThreshold", "-3"}},
                "activationThreshold");
  ExpectInvalid({{"listName", "jobs"}, {"gpuPerReplica", "0"}}, "gpuPerReplica");
  ExpectInvalid(
      {{"source", "prometheus"}, {"serverAddress", "ftp://p"}, {"query", "q"}, {"threshold", "1"}},
      "serverAddress");
  ExpectInvalid({{"listName", "jobs"}, {"costCenter", std::string(1 << 20, 'c')}}, "costCenter");
  ExpectInvalid({{"listName", "jobs"}, {"costCenter", std::string(254, 'c')}}, "costCenter");
  ExpectInvalid({{"listName", "jobs"}, {"address", "a:1"}, {"addressFromEnv", "b:2"}},
                "addressFromEnv");
}

// KEDA resolves `<key>FromEnv` from the workload's environment and forwards the value under the
// same key name (pkg/scalers/external_scaler.go): each such key counts as its plain key.
TEST(ScaledObjectConfigTest, FromEnvKeysAsKedaForwardsThem) {
  Result<ScaledObjectConfig> c = Parse({{"addressFromEnv", "redis.queues:6380"},
                                        {"listNameFromEnv", "jobs"},
                                        {"listLengthFromEnv", "7"},
                                        {"costCenterFromEnv", "search"}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->redis.host, "redis.queues");
  EXPECT_EQ(c->redis.port, 6380);
  EXPECT_EQ(c->redis.key, "jobs");
  EXPECT_EQ(c->target, 7);
  EXPECT_EQ(c->cost_center, "search");
}

// HPA metric names are path segments: KEDA's Redis scaler rewrites `/ . : %` to `-`.
TEST(ScaledObjectConfigTest, MetricNamesAreValidPathSegments) {
  Result<ScaledObjectConfig> c = Parse({{"listName", "jobs/high.prio:v1%x"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->metric_name, "redis-list-jobs-high-prio-v1-x");
  EXPECT_EQ(c->redis.key, "jobs/high.prio:v1%x") << "the queue itself keeps its name";
}

TEST(ScaledObjectConfigTest, ActivationIsStrictAndReplicasFollowTheHpaRule) {
  Result<ScaledObjectConfig> c = Parse({{"listName", "jobs"},
                                        {"listLength", "5"},
                                        {"activationListLength", "3"},
                                        {"maxReplicas", "4"}});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->IsActive(3));
  EXPECT_TRUE(c->IsActive(4));
  EXPECT_EQ(c->DesiredReplicas(0), 0);
  EXPECT_EQ(c->DesiredReplicas(1), 1);
  EXPECT_EQ(c->DesiredReplicas(10), 2);
  EXPECT_EQ(c->DesiredReplicas(11), 3);
  EXPECT_EQ(c->DesiredReplicas(1000), 4) << "capped at maxReplicas";
}

}  // namespace
}  // namespace gpuvpa::scaler
