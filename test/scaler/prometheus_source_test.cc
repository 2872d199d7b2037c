// The Prometheus queue-depth source against a real Prometheus with backfilled history.
#include "scaler/sources/prometheus_source.h"

#include <gtest/gtest.h>

#include <chrono>

#include "test/support/prometheus_server.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::scaler {
namespace {

using std::chrono::milliseconds;

class PrometheusSourceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScopedTempDir();
    server_ = new testing::PrometheusServer(dir_->dir().string());
    // A queue depth sampled every 15 s for the last 10 minutes: the latest values are 12 (jobs)
    // and 3 and 4 (two shards).
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::string om = "# TYPE queue_depth gauge\n";
    for (int64_t t = now - 600; t <= now - 30; t += 15) {
      om += "queue_depth{queue=\"jobs\"} 12 " + std::to_string(t) + "\n";
      om += "queue_depth{queue=\"shard\",shard=\"a\"} 3 " + std::to_string(t) + "\n";
      om += "queue_depth{queue=\"shard\",shard=\"b\"} 4 " + std::to_string(t) + "\n";
    }
    om += "# EOF\n";
    std::string error;
    ok_ = server_->Backfill(om, &error) && server_->Start(&error);
    error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    delete error_;
  }
  void SetUp() override { ASSERT_TRUE(ok_) << *error_; }

  static Result<double> Query(const std::string& query, bool ignore_null = true,
                              const std::string& address = "") {
    PrometheusBackendConfig b;
    b.server_address = address.empty() ? server_->url() : address;
    b.http.base_url = b.server_address;
    Result<std::unique_ptr<PrometheusBackend>> backend = PrometheusBackend::Create(b, 16);
    if (!backend.ok()) return backend.status();
    PrometheusSourceConfig c;
    c.server_address = b.server_address;
    c.query = query;
    c.ignore_null_values = ignore_null;
    return PrometheusQueueSource(**backend, c)
        .ReadDepth(0, std::chrono::steady_clock::now() + milliseconds(2000));
  }

  static testing::ScopedTempDir* dir_;
  static testing::PrometheusServer* server_;
  static bool ok_;
  static std::string* error_;
};

testing::ScopedTempDir* PrometheusSourceTest::dir_ = nullptr;
testing::PrometheusServer* PrometheusSourceTest::server_ = nullptr;
bool PrometheusSourceTest::ok_ = false;
std::string* PrometheusSourceTest::error_ = nullptr;

TEST_F(PrometheusSourceTest, InstantQueryReadsTheBackfilledDepth) {
  Result<double> depth = Query("queue_depth{queue=\"jobs\"}");
  ASSERT_TRUE(depth.ok()) << depth.status().message();
  EXPECT_EQ(*depth, 12);
  Result<double> summed = Query("sum(queue_depth{queue=\"shard\"})");
  ASSERT_TRUE(summed.ok()) << summed.status().message();
  EXPECT_EQ(*summed, 7);
}

TEST_F(PrometheusSourceTest, EmptyResultFollowsIgnoreNullValuesAndManySeriesIsAnError) {
  EXPECT_EQ(*Query("queue_depth{queue=\"none\"}"), 0);
  EXPECT_EQ(Query("queue_depth{queue=\"none\"}", false).status().code(),
            StatusCode::kFailedPrecondition);
  Result<double> many = Query("queue_depth{queue=\"shard\"}");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("2 series"), std::string::npos) << many.status().message();
  EXPECT_EQ(Query("sum(").status().code(), StatusCode::kFailedPrecondition)
      << "a bad query is not an outage";
}

TEST_F(PrometheusSourceTest, UnreachableServerIsUnavailableNeverZero) {
  testing::ScopedTempDir other;
  testing::PrometheusServer down(other.dir().string());  // never started: nothing listens there
  Result<double> r = Query("queue_depth", true, down.url());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpuvpa::scaler
