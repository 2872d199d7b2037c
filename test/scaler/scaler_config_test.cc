// The scaler's own config: backends with credentials from files, limits, strict keys.
#include "scaler/config/scaler_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test/support/temp_dir.h"

namespace gpuvpa::scaler {
namespace {

TEST(ScalerConfigTest, BackendsCredentialsAndLimits) {
  testing::ScopedTempDir tmp;
  std::ofstream(tmp.Path("pw")) << "hunter2\n";
  std::ofstream(tmp.Path("token")) << "tok\n";
  const std::string yaml =
      "redis:\n  - address: redis.queues:6380\n    password_file: " + tmp.Path("pw") +
      "\n    max_connections: 2\n"
      "prometheus:\n  - server_address: https://prom.monitoring:9090/\n"
      "    bearer_token_file: " +
      tmp.Path("token") +
      "\ncost_centers: [search, ai-agents]\n"
      "limits: {max_scaled_objects: 500, idle_seconds: 60}\n";
  Result<ScalerConfig> c = ParseScalerConfig(yaml, "scaler.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->redis.size(), 1u);
  EXPECT_EQ(c->redis[0].host, "redis.queues");
  EXPECT_EQ(c->redis[0].port, 6380);
  EXPECT_EQ(c->redis[0].password, "hunter2");
  EXPECT_EQ(c->redis[0].max_connections, 2);
  ASSERT_EQ(c->prometheus.size(), 1u);
  EXPECT_EQ(c->prometheus[0].server_address, "https://prom.monitoring:9090");
  EXPECT_TRUE(c->cost_centers.contains("search"));
  EXPECT_EQ(c->limits.max_scaled_objects, 500u);
  EXPECT_EQ(c->limits.idle, std::chrono::seconds(60));
}

TEST(ScalerConfigTest, MistakesAreErrorsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"redis:\n  - adress: a:1\n", "unknown key \"adress\""},
      {"redis:\n  - address: a\n", "redis[0].address"},
      {"redis:\n  - address: a:1\n    tls: true\n", "not supported"},
      {"redis:\n  - address: a:1\n    password_file: /no/such/file\n", "/no/such/file"},
      {"redis:\n  - address: a:1\n  - address: a:1\n", "listed twice"},
      {"redis:\n  - address: a:1\n    max_connections: 0\n", "max_connections"},
      {"prometheus:\n  - server_address: ftp://x\n", "prometheus[0]"},
      {"prometheus:\n  - server_address: https://x\n    ca_file: /no/ca.pem\n", "/no/ca.pem"},
      {"limits: {idle_seconds: -1}\n", "limits.idle_seconds"},
      {"cost_centers: [\"\"]\n", "cost_centers[0]"},
      {"backends: []\n", "unknown key \"backends\""},
  };
  for (const auto& [yaml, expected] : cases) {
    Result<ScalerConfig> c = ParseScalerConfig(yaml, "scaler.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.status().message().find(expected), std::string::npos)
        << yaml << " -> " << c.status().message();
  }
}

}  // namespace
}  // namespace gpuvpa::scaler
