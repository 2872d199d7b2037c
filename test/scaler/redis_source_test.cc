// The Redis queue-depth source against a real redis-server on 127.0.0.1.
#include "scaler/sources/redis_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "scaler/sources/depth_cache.h"
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
  RedisQueueSource Source(const TriggerMetadata& extra) {
    return RedisQueueSource(Config(extra).redis, milliseconds(500));
  }
  testing::RedisServer redis_;
};

TEST_F(RedisSourceTest, ReadsListStreamAndSortedSetDepths) {
  for (const char* item : {"a", "b", "c"}) redis_.Command({"RPUSH", "jobs", item});
  redis_.Command({"ZADD", "delayed", "1", "x", "2", "y"});
  redis_.Command({"XGROUP", "CREATE", "events", "workers", "$", "MKSTREAM"});
  for (int i = 0; i < 5; ++i) redis_.Command({"XADD", "events", "*", "n", std::to_string(i)});

  EXPECT_EQ(*Source({{"listName", "jobs"}}).ReadDepth(), 3);
  EXPECT_EQ(*Source({{"listName", "missing"}}).ReadDepth(), 0) << "an absent list is empty";
  EXPECT_EQ(*Source({{"sortedSetName", "delayed"}}).ReadDepth(), 2);
  RedisQueueSource stream = Source({{"stream", "events"}, {"consumerGroup", "workers"}});
  EXPECT_EQ(*stream.ReadDepth(), 5);
  // Two delivered but not acknowledged still count; one acknowledged does not.
  redis_.Command({"XREADGROUP", "GROUP", "workers", "c1", "COUNT", "2", "STREAMS", "events", ">"});
  EXPECT_EQ(*stream.ReadDepth(), 5);
  EXPECT_EQ(Source({{"stream", "events"}, {"consumerGroup", "nobody"}}).ReadDepth().status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(RedisSourceTest, ActivationAtTheThresholdIsInactiveAndOneAboveIsActive) {
  const ScaledObjectConfig c =
      Config({{"listName", "jobs"}, {"listLength", "5"}, {"activationListLength", "3"}});
  RedisQueueSource source(c.redis, milliseconds(500));
  for (int i = 0; i < 3; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_FALSE(c.IsActive(*source.ReadDepth()));
  redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_TRUE(c.IsActive(*source.ReadDepth()));
  for (int i = 0; i < 7; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  EXPECT_EQ(c.DesiredReplicas(*source.ReadDepth()), 3) << "ceil(11 / 5)";
}

TEST_F(RedisSourceTest, RedisDownIsUnavailableAndRecoversWhenItReturns) {
  RedisQueueSource source = Source({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  ASSERT_EQ(*source.ReadDepth(), 1);
  redis_.Kill();
  Result<double> down = source.ReadDepth();
  ASSERT_FALSE(down.ok()) << "a dead Redis must not read as depth " << *down;
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  std::string error;
  ASSERT_TRUE(redis_.Start(&error)) << error;  // same port, empty again
  redis_.Command({"RPUSH", "jobs", "y"});
  redis_.Command({"RPUSH", "jobs", "z"});
  Result<double> back = source.ReadDepth();
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, 2);
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
        if (cache.Get(source.Describe(), [&] { return source.ReadDepth(); }).ok()) ++ok;
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
  EXPECT_EQ(cache.Get("q", failing).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cache.Get("q", failing).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reads, 2) << "an error is never served from the cache";
  EXPECT_EQ(*cache.Get("q", [] { return Result<double>(4.0); }), 4.0);
  EXPECT_EQ(*cache.Get("q", failing), 4.0) << "within the TTL the good value stands";
}

}  // namespace
}  // namespace gpuvpa::scaler
