// The Redis queue-depth source against a real redis-server on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "scaler/sources/depth_cache.h"
#include "scaler/sources/redis_backend.h"
#include "test/support/redis_server.h"

namespace gpuvpa::scaler {
namespace {

using std::chrono::milliseconds;

class RedisSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(redis_.Start(&error)) << error;
  }
  ScaledObjectConfig Config(const TriggerMetadata& extra) {
    TriggerMetadata m = {{"address", "127.0.0.1:" + std::to_string(redis_.port())}};
    m.insert(extra.begin(), extra.end());
    Result<ScaledObjectConfig> c = ParseScaledObjectConfig("so", "ns", m);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }
  RedisBackend& Backend() {
    if (!backend_) {
      RedisBackendConfig b;
      b.host = "127.0.0.1";
      b.port = redis_.port();
      backend_ = std::make_unique<RedisBackend>(b, 16);
    }
    return *backend_;
  }
  RedisQueueSource Source(const TriggerMetadata& extra) {
    return RedisQueueSource(Backend(), Config(extra).redis);
  }
  static Result<double> Read(RedisQueueSource& source) {
    return source.ReadDepth(0, std::chrono::steady_clock::now() + milliseconds(500));
  }
  static Result<double> Read(RedisQueueSource&& source) { return Read(source); }
  testing::RedisServer redis_;
  std::unique_ptr<RedisBackend> backend_;
};

TEST_F(RedisSourceTest, ReadsListStreamAndSortedSetDepths) {
  for (const char* item : {"a", "b", "c"}) redis_.Command({"RPUSH", "jobs", item});
  redis_.Command({"ZADD", "delayed", "1", "x", "2", "y"});
  redis_.Command({"XGROUP", "CREATE", "events", "workers", "$", "MKSTREAM"});
  for (int i = 0; i < 5; ++i) redis_.Command({"XADD", "events", "*", "n", std::to_string(i)});

  EXPECT_EQ(*Read(Source({{"listName", "jobs"}})), 3);
  EXPECT_EQ(*Read(Source({{"listName", "missing"}})), 0) << "an absent list is empty";
  EXPECT_EQ(*Read(Source({{"sortedSetName", "delayed"}})), 2);
  RedisQueueSource stream = Source({{"stream", "events"}, {"consumerGroup", "workers"}});
  EXPECT_EQ(*Read(stream), 5);
  // Two delivered but not acknowledged still count; one acknowledged does not.
  redis_.Command({"XREADGROUP", "GROUP", "workers", "c1", "COUNT", "2", "STREAMS", "events", ">"});
  EXPECT_EQ(*Read(stream), 5);
  EXPECT_EQ(Read(Source({{"stream", "events"}, {"consumerGroup", "nobody"}})).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(RedisSourceTest, ActivationAtTheThresholdIsInactiveAndOneAboveIsActive) {
  const ScaledObjectConfig c =
      Config({{"listName", "jobs"}, {"listLength", "5"}, {"activationListLength", "3"}});
  RedisQueueSource source(Backend(), c.redis);
  for (int i = 0; i < 3; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_FALSE(c.IsActive(*Read(source)));
  redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_TRUE(c.IsActive(*Read(source)));
  for (int i = 0; i < 7; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_EQ(c.DesiredReplicas(*Read(source)), 3) << "ceil(11 / 5)";
}

TEST_F(RedisSourceTest, RedisDownIsUnavailableAndRecoversWhenItReturns) {
  RedisQueueSource source = Source({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  ASSERT_EQ(*Read(source), 1);
  redis_.Kill();
  Result<double> down = Read(source);
  ASSERT_FALSE(down.ok()) << "a dead Redis must not read as depth " << *down;
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  std::string error;
  ASSERT_TRUE(redis_.Start(&error)) << error;  // same port, empty again
  redis_.Command({"RPUSH", "jobs", "y"});
  redis_.Command({"RPUSH", "jobs", "z"});
  Result<double> back = Read(source);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, 2);
}

// A Redis restart between two reads: the pooled connection is dead, and the read is retried once
// on a fresh one instead of failing with "Server closed the connection".
TEST_F(RedisSourceTest, AConnectionDroppedByARestartIsRetriedOnAFreshOne) {
  RedisQueueSource source = Source({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  ASSERT_EQ(*Read(source), 1);
  EXPECT_EQ(Backend().open_connections(), 1);
  redis_.Kill();
  std::string error;
  ASSERT_TRUE(redis_.Start(&error)) << error;  // same port, empty again
  redis_.Command({"RPUSH", "jobs", "y"});
  redis_.Command({"RPUSH", "jobs", "z"});
  Result<double> after = Read(source);
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(*after, 2);
  EXPECT_EQ(Backend().open_connections(), 1);
}

TEST_F(RedisSourceTest, ManyQueuesShareTheServersFewConnections) {
  for (int i = 0; i < 500; ++i) {
    RedisQueueSource q = Source({{"listName", "queue-" + std::to_string(i)}});
    ASSERT_TRUE(Read(q).ok());
  }
  EXPECT_EQ(Backend().open_connections(), 1) << "one worker, one connection, 500 queues";
}

TEST_F(RedisSourceTest, TwoHundredConcurrentCallersCauseOneReadPerTtl) {
  RedisQueueSource source = Source({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  DepthCache cache(milliseconds(2000));
  auto burst = [&] {
    std::vector<std::thread> callers;
    std::atomic<int> ok{0};
    for (int i = 0; i < 200; ++i)
      callers.emplace_back([&] {
        if (cache.GetBlocking(source.Describe(), [&] { return Read(source); }).ok()) ++ok;
      });
    for (std::thread& t : callers) t.join();
    return ok.load();
  };
  const long before = redis_.CommandCalls("llen");
  EXPECT_EQ(burst(), 200);
  EXPECT_EQ(redis_.CommandCalls("llen") - before, 1);
  std::this_thread::sleep_for(milliseconds(2100));  // the TTL passes
  EXPECT_EQ(burst(), 200);
  EXPECT_EQ(redis_.CommandCalls("llen") - before, 2);
  EXPECT_EQ(cache.reads(), 2u);
  EXPECT_EQ(cache.hits(), 398u);
}

TEST(DepthCacheTest, ErrorsReachTheWaitersButAreNotCached) {
  DepthCache cache(milliseconds(60000));
  int reads = 0;
  auto failing = [&]() -> Result<double> {
    ++reads;
    return UnavailableError("down");
  };
  EXPECT_EQ(cache.GetBlocking("q", failing).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cache.GetBlocking("q", failing).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reads, 2) << "an error is never served from the cache";
  EXPECT_EQ(*cache.GetBlocking("q", [] { return Result<double>(4.0); }), 4.0);
  EXPECT_EQ(*cache.GetBlocking("q", failing), 4.0) << "within the TTL the good value stands";
}

}  // namespace
}  // namespace gpuvpa::scaler
