// The Redis queue-depth source against a real redis-server on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
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

// Many queues in one pipelined exchange answer exactly as one read each would, and one queue's
// error (a wrong type, a missing group, a database Redis refuses) stays that queue's.
TEST_F(RedisSourceTest, ABatchAnswersAsSingleReadsAndKeepsErrorsToTheirQueue) {
  for (const char* item : {"a", "b", "c"}) redis_.Command({"RPUSH", "jobs", item});
  redis_.Command({"ZADD", "delayed", "1", "x", "2", "y"});
  redis_.Command({"XGROUP", "CREATE", "events", "workers", "$", "MKSTREAM"});
  for (int i = 0; i < 5; ++i) redis_.Command({"XADD", "events", "*", "n", std::to_string(i)});
  redis_.Command({"SET", "not-a-list", "x"});
  std::vector<RedisSourceConfig> queues = {
      Config({{"listName", "jobs"}}).redis,
      Config({{"listName", "jobs"}, {"databaseIndex", "3"}}).redis,
      Config({{"sortedSetName", "delayed"}}).redis,
      Config({{"stream", "events"}, {"consumerGroup", "workers"}}).redis,
      Config({{"stream", "no-such-stream"}, {"consumerGroup", "workers"}}).redis,
      Config({{"stream", "events"}, {"consumerGroup", "nobody"}}).redis,
      Config({{"listName", "not-a-list"}}).redis,
      Config({{"listName", "missing"}}).redis,
  };
  RedisSourceConfig refused = queues[0];
  refused.database_index = 100000;  // beyond the server's databases: SELECT fails
  queues.insert(queues.begin() + 2, refused);
  std::vector<const RedisSourceConfig*> batch;
  for (const RedisSourceConfig& q : queues) batch.push_back(&q);
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(2000);
  const std::vector<Result<double>> together = Backend().ReadMany(0, batch, deadline);
  ASSERT_EQ(together.size(), queues.size());
  for (size_t i = 0; i < queues.size(); ++i) {
    const Result<double> alone = Backend().Read(0, queues[i], deadline);
    ASSERT_EQ(together[i].ok(), alone.ok()) << i << ": " << together[i].status().message();
    if (alone.ok())
      EXPECT_EQ(*together[i], *alone) << i;
    else
      EXPECT_EQ(together[i].status().code(), alone.status().code()) << i;
  }
  EXPECT_EQ(*together[0], 3);
  EXPECT_EQ(*together[1], 0) << "database 3 holds no list jobs";
  EXPECT_EQ(together[2].status().code(), StatusCode::kUnavailable);
  EXPECT_NE(together[2].status().message().find("SELECT"), std::string::npos)
      << together[2].status().message();
  EXPECT_EQ(*together[3], 2);
  EXPECT_EQ(*together[4], 5);
  EXPECT_EQ(*together[5], 0) << "no stream yet: no work";
  EXPECT_EQ(together[6].status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(together[7].status().message().find("WRONGTYPE"), std::string::npos)
      << together[7].status().message();
  EXPECT_EQ(*together[8], 0);
  EXPECT_EQ(Backend().open_connections(), 1) << "errors of queues keep the connection";
}

TEST(DepthCacheTest, RefreshedDepthsServeAsksAndAnErrorDropsTheCachedOne) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  DepthCache cache(milliseconds(1000), [&] { return now; });
  int reads = 0;
  auto read = [&](double depth) {
    return [&reads, depth]() -> Result<double> {
      ++reads;
      return depth;
    };
  };
  EXPECT_EQ(*cache.GetBlocking("q", read(1)), 1.0);
  EXPECT_EQ(cache.Asked(milliseconds(500)), std::vector<std::string>{"q"});
  now += milliseconds(600);
  EXPECT_TRUE(cache.Asked(milliseconds(500)).empty()) << "not asked within the window";
  cache.Store({"q"}, {2.0}, now);
  now += milliseconds(900);  // 1.5 s after the first read: its depth would have expired
  EXPECT_EQ(*cache.GetBlocking("q", read(9)), 2.0) << "the refreshed depth, from memory";
  EXPECT_EQ(reads, 1);
  cache.Store({"q"}, {7.0}, now - milliseconds(1000));
  EXPECT_EQ(*cache.GetBlocking("q", read(9)), 2.0) << "an older read never replaces a newer one";
  cache.Store({"q"}, {UnavailableError("down")}, now);
  EXPECT_EQ(*cache.GetBlocking("q", read(3)), 3.0) << "after an error the ask reads again";
  EXPECT_EQ(reads, 2);
  cache.Store({"gone"}, {5.0}, now);
  EXPECT_EQ(cache.size(), 1u) << "a queue evicted meanwhile is not brought back";
}

TEST(DepthCacheTest, ShardsSplitTheAskedKeysEachInExactlyOne) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  DepthCache cache(
      milliseconds(1000), [&] { return now; }, 7);
  ASSERT_EQ(cache.shards(), 7u);
  for (int i = 0; i < 200; ++i)
    ASSERT_TRUE(cache.GetBlocking("k" + std::to_string(i), [i] { return Result<double>(i); }).ok());
  std::multiset<std::string> seen;
  for (size_t shard = 0; shard < 7; ++shard) {
    const std::vector<std::string> keys = cache.Asked(milliseconds(500), shard);
    EXPECT_LT(keys.size(), 100u) << "spread, not all in one";
    seen.insert(keys.begin(), keys.end());
  }
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 200u);
  EXPECT_EQ(cache.size(), 200u);
  EXPECT_EQ(cache.reads(), 200u);
  EXPECT_EQ(*cache.GetBlocking("k42", [] { return Result<double>(-1.0); }), 42.0);
  EXPECT_EQ(cache.hits(), 1u);
  // Stored depths reach each key's own shard, whichever order they come in.
  cache.Store({"k7", "k3", "k150"}, {70.0, 30.0, 1500.0}, now);
  EXPECT_EQ(*cache.GetBlocking("k150", [] { return Result<double>(-1.0); }), 1500.0);
  EXPECT_EQ(*cache.GetBlocking("k3", [] { return Result<double>(-1.0); }), 30.0);
  EXPECT_EQ(*cache.GetBlocking("k7", [] { return Result<double>(-1.0); }), 70.0);
  now += milliseconds(600);
  EXPECT_EQ(cache.EvictIdle(milliseconds(500)), 200u);
  EXPECT_EQ(cache.size(), 0u);
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
