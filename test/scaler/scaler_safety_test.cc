// The scaler attacked the way a careless or hostile ScaledObject can: metadata pointing at
// unlisted backends (credential theft, SSRF), hostile HTTP peers, thousands of distinct
// ScaledObjects, a sleeping Redis, stalled streams. Everything over a real gRPC socket against
// real redis-server processes and real TCP peers.
#include <arpa/inet.h>
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
// The sanitizer runtime's public allocator interface (declared here: GCC ships no header).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include "proto/externalscaler.grpc.pb.h"
#include "test/support/redis_server.h"
#include "test/support/scaler_harness.h"
#include "test/support/scripted_http_server.h"

namespace gpuvpa::scaler {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::HttpBehaviour;
using testing::ScalerHarness;
using testing::ScalerHarnessOptions;
using testing::ScriptedHttpServer;

// A TCP peer that records every byte it receives and answers each read with "+OK\r\n" (enough
// for hiredis to believe AUTH and commands succeeded): a fake Redis that collects credentials.
class RecordingPeer {
 public:
  RecordingPeer() {
    fd_ = testing::ListenOnLoopback(&port_);
    thread_ = std::thread([this] {
      std::vector<int> clients;
      while (!stop_) {
        std::vector<pollfd> fds{{fd_, POLLIN, 0}};
        for (int c : clients) fds.push_back({c, POLLIN, 0});
        if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
        if (fds[0].revents & POLLIN) {
          clients.push_back(::accept(fd_, nullptr, nullptr));
          ++connections_;
        }
        for (size_t i = 1; i < fds.size(); ++i) {
          if (!(fds[i].revents & POLLIN)) continue;
          char buf[4096];
          const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
          if (n <= 0) continue;
          std::lock_guard<std::mutex> lock(mu_);
          received_.append(buf, static_cast<size_t>(n));
          (void)::send(fds[i].fd, "+OK\r\n", 5, MSG_NOSIGNAL);
        }
      }
      for (int c : clients) ::close(c);
    });
  }
  ~RecordingPeer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int connections() const { return connections_; }
  std::string received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::string received_;
  std::thread thread_;
};

// A peer that accepts connections (through the kernel's backlog) and never says a word.
class StalledPeer {
 public:
  StalledPeer() { fd_ = testing::ListenOnLoopback(&port_, false, 1024); }
  ~StalledPeer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

size_t OpenFds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

// Heap bytes in use (live allocations): what state kept per ScaledObject costs, unaffected by
// the allocator's caches (or, under ASan, its quarantine).
long long HeapBytesInUse() {
#if defined(__SANITIZE_ADDRESS__)
  return static_cast<long long>(__sanitizer_get_current_allocated_bytes());
#else
  return static_cast<long long>(mallinfo2().uordblks);
#endif
}

long RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

class ScalerSafetyTest : public ::testing::Test {
 protected:
  void Start(ScalerHarnessOptions o) {
    harness_ = std::make_unique<ScalerHarness>(std::move(o));
    stub_ = externalscaler::ExternalScaler::NewStub(
        grpc::CreateChannel(harness_->target(), grpc::InsecureChannelCredentials()));
  }
  static externalscaler::GetMetricsRequest Request(const std::string& name,
                                                   const std::map<std::string, std::string>& m) {
    externalscaler::GetMetricsRequest r;
    r.mutable_scaledobjectref()->set_name(name);
    r.mutable_scaledobjectref()->set_namespace_("ml");
    for (const auto& [k, v] : m) (*r.mutable_scaledobjectref()->mutable_scalermetadata())[k] = v;
    return r;
  }
  // GetMetrics with KEDA's HPA-path deadline (3 s); `took` is how long it took.
  grpc::Status GetMetrics(const externalscaler::GetMetricsRequest& r, double* value = nullptr,
                          Clock::duration* took = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    externalscaler::GetMetricsResponse out;
    const auto start = Clock::now();
    grpc::Status s = stub_->GetMetrics(&ctx, r, &out);
    if (took != nullptr) *took = Clock::now() - start;
    if (value != nullptr && s.ok()) *value = out.metricvalues(0).metricvaluefloat();
    return s;
  }
  static std::string Addr(int port) { return "127.0.0.1:" + std::to_string(port); }

  std::unique_ptr<ScalerHarness> harness_;
  std::unique_ptr<externalscaler::ExternalScaler::Stub> stub_;
};

// Finding 2: the Redis password is sent only to the server it is configured for; metadata that
// names any other server is refused before a connection is opened. Same for Prometheus (SSRF).
TEST_F(ScalerSafetyTest, CredentialsAndRequestsGoOnlyToListedBackends) {
  testing::RedisServer redis;
  std::string error;
  ASSERT_TRUE(redis.Start(&error)) << error;
  const std::string password = "s3cret-redis-password";
  ASSERT_EQ(redis.Command({"CONFIG", "SET", "requirepass", password}), "OK");
  RecordingPeer fake;
  ScriptedHttpServer ssrf_target(HttpBehaviour::kOk);

  ScalerHarnessOptions o;
  o.config = testing::RedisOnlyConfig({redis.port()});
  o.config.redis[0].password = password;
  Start(std::move(o));

  grpc::Status stolen =
      GetMetrics(Request("thief", {{"address", Addr(fake.port())}, {"listName", "jobs"}}));
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(stolen.error_message().find("address"), std::string::npos) << stolen.error_message();
  EXPECT_EQ(stolen.error_message().find(password), std::string::npos);
  grpc::Status by_host = GetMetrics(Request(
      "thief2", {{"host", "127.0.0.1"}, {"port", std::to_string(fake.port())}, {"listName", "j"}}));
  EXPECT_EQ(by_host.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << by_host.error_message();
  grpc::Status ssrf = GetMetrics(Request("ssrf", {{"source", "prometheus"},
                                                  {"serverAddress", ssrf_target.url()},
                                                  {"query", "up"},
                                                  {"threshold", "1"}}));
  EXPECT_EQ(ssrf.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(ssrf.error_message().find("serverAddress"), std::string::npos);

  double depth = -1;
  grpc::Status legit = GetMetrics(
      Request("worker", {{"address", Addr(redis.port())}, {"listName", "jobs"}}), &depth);
  EXPECT_TRUE(legit.ok()) << legit.error_message();
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(fake.connections(), 0);
  EXPECT_EQ(fake.received().find(password), std::string::npos);
  EXPECT_EQ(ssrf_target.connections(), 0);
}

// Finding 1: hostile HTTP peers (wrapped chunk size, endless body, slowloris, silence) listed as
// Prometheus backends cost their own callers at most the read deadline and never block a
// healthy ScaledObject.
TEST_F(ScalerSafetyTest, HostileHttpBackendsNeverBlockAHealthyScaledObject) {
  testing::RedisServer redis;
  std::string error;
  ASSERT_TRUE(redis.Start(&error)) << error;
  redis.Command({"RPUSH", "jobs", "a", "b"});
  std::vector<std::unique_ptr<ScriptedHttpServer>> hostile;
  ScalerHarnessOptions o;
  o.config = testing::RedisOnlyConfig({redis.port()});
  for (HttpBehaviour b : {HttpBehaviour::kWrappedChunk, HttpBehaviour::kEndlessBody,
                          HttpBehaviour::kSlowloris, HttpBehaviour::kSilent}) {
    hostile.push_back(std::make_unique<ScriptedHttpServer>(b));
    PrometheusBackendConfig p;
    p.server_address = hostile.back()->url();
    p.http.base_url = p.server_address;
    p.max_concurrent_reads = 1;
    o.config.prometheus.push_back(p);
  }
  Start(std::move(o));
  // Each hostile endpoint, twice and concurrently (the original hang needed two calls).
  std::vector<std::thread> attackers;
  std::atomic<int> unavailable{0};
  for (size_t i = 0; i < hostile.size() * 2; ++i)
    attackers.emplace_back([&, i] {
      const auto r = Request("hostile-" + std::to_string(i),
                             {{"source", "prometheus"},
                              {"serverAddress", hostile[i % hostile.size()]->url()},
                              {"query", "q" + std::to_string(i)},
                              {"threshold", "1"}});
      if (GetMetrics(r).error_code() == grpc::StatusCode::UNAVAILABLE) ++unavailable;
    });
  std::this_thread::sleep_for(milliseconds(50));
  for (int i = 0; i < 10; ++i) {
    double depth = 0;
    Clock::duration took{};
    grpc::Status s = GetMetrics(
        Request("healthy", {{"address", Addr(redis.port())}, {"listName", "jobs"}}), &depth, &took);
    ASSERT_TRUE(s.ok()) << "call " << i << ": " << s.error_message();
    EXPECT_EQ(depth, 2);
  }
  for (std::thread& t : attackers) t.join();
  EXPECT_EQ(unavailable.load(), static_cast<int>(hostile.size() * 2));
  // The scaler still answers, and shutting down is not held up by any of them.
  const auto stop = Clock::now();
  harness_->Shutdown();
  EXPECT_LT(Clock::now() - stop, std::chrono::seconds(3));
}

// Finding 3: 11,000 distinct ScaledObjects on one Redis: one small pool of connections, bounded
// parsed state, and a legitimate ScaledObject (and redis-cli) still served afterwards.
TEST_F(ScalerSafetyTest, ElevenThousandDistinctScaledObjectsStayWithinBounds) {
  testing::RedisServer redis;
  std::string error;
  ASSERT_TRUE(redis.Start(&error)) << error;
  ScalerHarnessOptions o;
  o.config = testing::RedisOnlyConfig({redis.port()});
  o.config.limits.max_scaled_objects = 2000;
  o.config.limits.max_queues = 2000;
  Start(std::move(o));
  ASSERT_TRUE(
      GetMetrics(Request("warm", {{"address", Addr(redis.port())}, {"listName", "w"}})).ok());
  const size_t fds_before = OpenFds();
  const long rss_before = RssKib();
  const long long heap_before = HeapBytesInUse();
  constexpr int kScaledObjects = 11000;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      for (int i = t; i < kScaledObjects; i += 4) {
        const std::string n = std::to_string(i);
        if (GetMetrics(Request("so-" + n, {{"address", Addr(redis.port())},
                                           {"listName", "queue-" + n},
                                           {"costCenter", "team-" + n}}))
                .ok())
          ++ok;
      }
    });
  for (std::thread& c : clients) c.join();
  const size_t fds_after = OpenFds();
  const long rss_after = RssKib();
  const long long heap_after = HeapBytesInUse();
  const std::string clients_info = redis.Command({"INFO", "clients"});
  std::cout << "[ bounds   ] " << ok.load() << " of " << kScaledObjects << " answered; fds "
            << fds_before << " -> " << fds_after << "; RSS " << rss_before << " -> " << rss_after
            << " KiB; live heap +" << (heap_after - heap_before) / 1024 << " KiB; parsed "
            << harness_->core().scaled_objects() << ", queues " << harness_->core().queues()
            << ", cache entries " << harness_->core().cache().size() << "; redis connections "
            << harness_->backends().open_redis_connections() << "\n";
  EXPECT_EQ(ok.load(), kScaledObjects);
  // Stated bounds: the Redis pool (4), parsed metadata and queues at their configured caps,
  // fds within a few of where they were, live heap growth under 32 MiB.
  EXPECT_LE(harness_->backends().open_redis_connections(), 4);
  EXPECT_LE(harness_->core().scaled_objects(), 2000u);
  EXPECT_LE(harness_->core().queues(), 2000u);
  EXPECT_LE(harness_->core().cache().size(), 2000u);
  EXPECT_LE(fds_after, fds_before + 8);
  EXPECT_LT(heap_after - heap_before, 32LL << 20);
  const size_t at = clients_info.find("connected_clients:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LE(std::stoi(clients_info.substr(at + 18)), 4 + 1) << "the pool plus this INFO call";
  EXPECT_EQ(redis.Command({"PING"}), "PONG");
  EXPECT_TRUE(
      GetMetrics(Request("legit", {{"address", Addr(redis.port())}, {"listName", "jobs"}})).ok());
}

// Finding 4: a Redis asleep in DEBUG SLEEP holds only its own callers; a healthy Redis's
// GetMetrics keep answering (latency percentiles printed, not asserted).
TEST_F(ScalerSafetyTest, ASleepingRedisDoesNotDelayAHealthyOne) {
  testing::RedisServer sleepy, healthy;
  std::string error;
  ASSERT_TRUE(sleepy.Start(&error)) << error;
  ASSERT_TRUE(healthy.Start(&error)) << error;
  ScalerHarnessOptions o;
  o.config = testing::RedisOnlyConfig({sleepy.port(), healthy.port()});
  o.cache_ttl = milliseconds(1);  // every call reads the backend
  o.refresh_window = milliseconds(0);
  Start(std::move(o));
  std::thread sleeper([&] { sleepy.Command({"DEBUG", "SLEEP", "4"}); });
  std::this_thread::sleep_for(milliseconds(100));
  std::atomic<bool> stop{false};
  std::atomic<int> slow_unavailable{0}, slow_calls{0};
  std::vector<std::thread> slow;
  for (int t = 0; t < 40; ++t)
    slow.emplace_back([&, t] {
      for (int k = 0; !stop; ++k) {
        ++slow_calls;
        if (GetMetrics(
                Request("slow-" + std::to_string(t),
                        {{"address", Addr(sleepy.port())}, {"listName", "q" + std::to_string(t)}}))
                .error_code() == grpc::StatusCode::UNAVAILABLE)
          ++slow_unavailable;
      }
    });
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    Clock::duration took{};
    grpc::Status s = GetMetrics(
        Request("fast", {{"address", Addr(healthy.port())}, {"listName", "jobs"}}), nullptr, &took);
    ASSERT_TRUE(s.ok()) << "healthy call " << i << ": " << s.error_message();
    ms.push_back(std::chrono::duration<double, std::milli>(took).count());
  }
  stop = true;
  for (std::thread& t : slow) t.join();
  sleeper.join();
  std::sort(ms.begin(), ms.end());
  std::cout << "[ isolation] healthy Redis GetMetrics while another sleeps (40 callers): p50 "
            << ms[100] << " ms, p99 " << ms[198] << " ms, max " << ms.back() << " ms; "
            << slow_unavailable.load() << " of " << slow_calls.load()
            << " sleeping-Redis calls UNAVAILABLE\n";
  EXPECT_GT(slow_unavailable.load(), 0) << "the sleeping Redis's callers get errors, not hangs";
}

// Finding 5: streams on a backend that never answers do not delay a healthy stream's activation.
TEST_F(ScalerSafetyTest, StalledStreamsDoNotDelayAHealthyStreamsActivation) {
  testing::RedisServer healthy;
  std::string error;
  ASSERT_TRUE(healthy.Start(&error)) << error;
  StalledPeer stalled;
  ScalerHarnessOptions o;
  o.config = testing::RedisOnlyConfig({healthy.port(), stalled.port()});
  Start(std::move(o));
  for (int n : {0, 8}) {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReader<externalscaler::IsActiveResponse>>> streams;
    for (int i = 0; i < n; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      externalscaler::ScaledObjectRef ref =
          Request("stalled-" + std::to_string(i),
                  {{"address", Addr(stalled.port())}, {"listName", "s" + std::to_string(i)}})
              .scaledobjectref();
      streams.push_back(stub_->StreamIsActive(contexts.back().get(), ref));
    }
    const std::string list = "work-" + std::to_string(n);
    grpc::ClientContext ctx;
    auto healthy_stream =
        stub_->StreamIsActive(&ctx, Request("healthy-" + std::to_string(n),
                                            {{"address", Addr(healthy.port())}, {"listName", list}})
                                        .scaledobjectref());
    std::this_thread::sleep_for(milliseconds(600));  // streams open, stalled reads under way
    const auto pushed = Clock::now();
    healthy.Command({"RPUSH", list, "job"});
    externalscaler::IsActiveResponse r;
    ASSERT_TRUE(healthy_stream->Read(&r));
    EXPECT_TRUE(r.result());
    const double latency = std::chrono::duration<double, std::milli>(Clock::now() - pushed).count();
    std::cout << "[ streams  ] " << n << " stalled streams: healthy activation after " << latency
              << " ms (poll 50 ms, cache TTL 200 ms)\n";
    EXPECT_LT(latency, 2000) << "one TTL plus a poll, not the stalled reads' timeouts";
    ctx.TryCancel();
    for (auto& c : contexts) c->TryCancel();
    for (auto& s : streams) (void)s->Finish();
    (void)healthy_stream->Finish();
  }
}

// KEDA resets its reconnect backoff only after a clean end of stream: on shutdown, every open
// StreamIsActive and StreamMetricSpec stream ends with OK.
TEST_F(ScalerSafetyTest, ShutdownEndsOpenStreamsWithOk) {
  ScalerHarnessOptions o;
  Start(std::move(o));
  auto ref = Request("pushed", {{"source", "push"}, {"queueName", "q"}}).scaledobjectref();
  grpc::ClientContext a, b;
  auto active = stub_->StreamIsActive(&a, ref);
  auto spec = stub_->StreamMetricSpec(&b, ref);
  externalscaler::GetMetricSpecResponse first;
  ASSERT_TRUE(spec->Read(&first));
  EXPECT_EQ(first.metricspecs(0).metricname(), "push-q");
  std::this_thread::sleep_for(milliseconds(100));
  harness_->Shutdown();
  externalscaler::IsActiveResponse r;
  while (active->Read(&r)) {
  }
  grpc::Status active_end = active->Finish();
  EXPECT_TRUE(active_end.ok()) << active_end.error_code() << " " << active_end.error_message();
  while (spec->Read(&first)) {
  }
  grpc::Status spec_end = spec->Finish();
  EXPECT_TRUE(spec_end.ok()) << spec_end.error_code() << " " << spec_end.error_message();
}

}  // namespace
}  // namespace gpuvpa::scaler
