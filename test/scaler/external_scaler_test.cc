// gpuvpa-scaler's ExternalScaler over a real gRPC socket, with a real redis-server behind it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/cost/price_book.h"
#include "core/net/grpc_server.h"
#include "core/net/metrics_page.h"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/activity_meter.h"
#include "scaler/service/external_scaler_service.h"
#include "scaler/service/push_service.h"
#include "scaler/service/scaler_core.h"
#include "test/support/redis_server.h"
#include "test/support/scaler_harness.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa::scaler {
namespace {

using std::chrono::milliseconds;

using testing::ScalerHarness;
using testing::ScalerHarnessOptions;

class ExternalScalerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(redis_.Start(&error)) << error;
    Restart(milliseconds(200));
  }
  // A fresh scaler whose config lists the test's Redis.
  void Restart(milliseconds ttl, ScalerMetrics* metrics = nullptr,
               DepthObserver* observer = nullptr,
               milliseconds refresh_window = ScalerCoreOptions{}.refresh_window,
               size_t refresh_phases = ScalerCoreOptions{}.refresh_phases) {
    harness_.reset();
    ScalerHarnessOptions o;
    o.cache_ttl = ttl;
    o.refresh_window = refresh_window;
    o.refresh_phases = refresh_phases;
    o.config = testing::RedisOnlyConfig({redis_.port()});
    o.metrics = metrics;
    o.observer = observer;
    harness_ = std::make_unique<ScalerHarness>(std::move(o));
    channel_ = grpc::CreateChannel(harness_->target(), grpc::InsecureChannelCredentials());
    stub_ = externalscaler::ExternalScaler::NewStub(channel_);
  }
  // A ScaledObject's reference as KEDA sends it; Redis triggers point at the test's server.
  externalscaler::ScaledObjectRef Ref(const std::map<std::string, std::string>& extra) {
    externalscaler::ScaledObjectRef ref;
    ref.set_name("worker");
    ref.set_namespace_("ml");
    auto& m = *ref.mutable_scalermetadata();
    m["scalerAddress"] = harness_->target();
    if (!extra.count("source")) m["address"] = "127.0.0.1:" + std::to_string(redis_.port());
    for (const auto& [k, v] : extra) m[k] = v;
    return ref;
  }
  grpc::Status IsActive(const externalscaler::ScaledObjectRef& ref, bool* active) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(3));  // the HPA path's deadline
    externalscaler::IsActiveResponse r;
    grpc::Status s = stub_->IsActive(&ctx, ref, &r);
    *active = r.result();
    return s;
  }
  grpc::Status Metric(const externalscaler::ScaledObjectRef& ref,
                      externalscaler::GetMetricsResponse* out) {
    grpc::ClientContext ctx;
    externalscaler::GetMetricsRequest req;
    *req.mutable_scaledobjectref() = ref;
    req.set_metricname("redis-list-jobs");
    return stub_->GetMetrics(&ctx, req, out);
  }

  testing::RedisServer redis_;
  std::unique_ptr<ScalerHarness> harness_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<externalscaler::ExternalScaler::Stub> stub_;
};

TEST_F(ExternalScalerTest, MetricSpecIsNeverEmptyAndCarriesBothTargetForms) {
  grpc::ClientContext ctx;
  externalscaler::GetMetricSpecResponse spec;
  ASSERT_TRUE(
      stub_->GetMetricSpec(&ctx, Ref({{"listName", "jobs"}, {"listLength", "7.5"}}), &spec).ok());
  ASSERT_EQ(spec.metricspecs_size(), 1);
  EXPECT_EQ(spec.metricspecs(0).metricname(), "redis-list-jobs");
  EXPECT_EQ(spec.metricspecs(0).targetsizefloat(), 7.5);
  EXPECT_NE(spec.metricspecs(0).targetsize(), 0);
}

// What KEDA really sends and needs (pkg/scalers/external_scaler.go): *FromEnv keys resolved
// under their own names, metric names that are valid path segments, and the integer targetSize
// that KEDA before 2.17 reads (rounded from a fractional target).
TEST_F(ExternalScalerTest, KedaFromEnvKeysPathSafeMetricNamesAndIntegerTargets) {
  auto ref = Ref({{"listNameFromEnv", "jobs/high.prio"}, {"listLengthFromEnv", "2.5"}});
  ref.mutable_scalermetadata()->erase("address");
  (*ref.mutable_scalermetadata())["addressFromEnv"] = "127.0.0.1:" + std::to_string(redis_.port());
  grpc::ClientContext ctx;
  externalscaler::GetMetricSpecResponse spec;
  grpc::Status s = stub_->GetMetricSpec(&ctx, ref, &spec);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(spec.metricspecs(0).metricname(), "redis-list-jobs-high-prio");
  EXPECT_EQ(spec.metricspecs(0).targetsizefloat(), 2.5);
  EXPECT_EQ(spec.metricspecs(0).targetsize(), 3) << "what KEDA before 2.17 uses";
  redis_.Command({"RPUSH", "jobs/high.prio", "a", "b", "c"});
  externalscaler::GetMetricsResponse metrics;
  grpc::ClientContext ctx2;
  externalscaler::GetMetricsRequest req;
  *req.mutable_scaledobjectref() = ref;
  req.set_metricname("redis-list-jobs-high-prio");
  ASSERT_TRUE(stub_->GetMetrics(&ctx2, req, &metrics).ok());
  EXPECT_EQ(metrics.metricvalues(0).metricname(), "redis-list-jobs-high-prio");
  EXPECT_EQ(metrics.metricvalues(0).metricvaluefloat(), 3);
}

TEST_F(ExternalScalerTest, ActivationIsStrictlyAboveTheThresholdAndReplicasFollowTheHpaRule) {
  const auto ref = Ref({{"listName", "jobs"}, {"listLength", "5"}, {"activationListLength", "3"}});
  for (int i = 0; i < 3; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  bool active = true;
  ASSERT_TRUE(IsActive(ref, &active).ok());
  EXPECT_FALSE(active) << "depth 3 equals the activation threshold";
  for (int i = 0; i < 8; ++i) redis_.Command({"RPUSH", "jobs", "x"});
  // Past the cache TTL: any depth served now was read after the pushes.
  std::this_thread::sleep_for(milliseconds(250));
  ASSERT_TRUE(IsActive(ref, &active).ok());
  EXPECT_TRUE(active);
  externalscaler::GetMetricsResponse metrics;
  ASSERT_TRUE(Metric(ref, &metrics).ok());
  ASSERT_EQ(metrics.metricvalues_size(), 1) << "exactly one value: the HPA sums them";
  EXPECT_EQ(metrics.metricvalues(0).metricvaluefloat(), 11);
  EXPECT_EQ(std::ceil(metrics.metricvalues(0).metricvaluefloat() / 5), 3)
      << "KEDA's desired replicas";
}

TEST_F(ExternalScalerTest, StreamsAndSortedSetsOverTheWire) {
  redis_.Command({"ZADD", "delayed", "1", "a", "2", "b", "3", "c"});
  redis_.Command({"XGROUP", "CREATE", "events", "workers", "$", "MKSTREAM"});
  redis_.Command({"XADD", "events", "*", "k", "v"});
  externalscaler::GetMetricsResponse zset, stream;
  ASSERT_TRUE(Metric(Ref({{"sortedSetName", "delayed"}}), &zset).ok());
  EXPECT_EQ(zset.metricvalues(0).metricvaluefloat(), 3);
  ASSERT_TRUE(Metric(Ref({{"stream", "events"}, {"consumerGroup", "workers"}}), &stream).ok());
  EXPECT_EQ(stream.metricvalues(0).metricvaluefloat(), 1);
}

TEST_F(ExternalScalerTest, BadMetadataIsInvalidArgumentNamingTheKey) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{}, "listName"},
      {{{"listName", "jobs"}, {"listLength", "many"}}, "listLength"},
      {{{"listName", "jobs"}, {"activationListLength", "-2"}}, "activationListLength"},
      {{{"listName", "jobs"}, {"source", "rabbitmq"}}, "source"},
  };
  for (const auto& [metadata, key] : cases) {
    bool active = false;
    grpc::Status s = IsActive(Ref(metadata), &active);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << key;
    EXPECT_NE(s.error_message().find(key), std::string::npos) << s.error_message();
  }
}

TEST_F(ExternalScalerTest, RedisDownIsUnavailableNeverInactiveAndRecovers) {
  const auto ref = Ref({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  bool active = false;
  ASSERT_TRUE(IsActive(ref, &active).ok());
  ASSERT_TRUE(active);
  redis_.Kill();
  std::this_thread::sleep_for(milliseconds(250));
  grpc::Status down = IsActive(ref, &active);
  EXPECT_EQ(down.error_code(), grpc::StatusCode::UNAVAILABLE) << down.error_message();
  externalscaler::GetMetricsResponse metrics;
  EXPECT_EQ(Metric(ref, &metrics).error_code(), grpc::StatusCode::UNAVAILABLE);
  std::string error;
  ASSERT_TRUE(redis_.Start(&error)) << error;  // same port, empty again
  redis_.Command({"RPUSH", "jobs", "y"});
  // A read-ahead may have seen the restarted, still empty list just before the push; that depth
  // is true and is served for at most one TTL, so the push shows within a few TTLs.
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5 * 200);
  grpc::Status back;
  do {
    back = IsActive(ref, &active);
    if (back.ok() && active) break;
    std::this_thread::sleep_for(milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(back.ok()) << back.error_message();
  EXPECT_TRUE(active) << "the pushed job was still not seen one second after Redis returned";
}

TEST_F(ExternalScalerTest, TwoHundredConcurrentCallersCauseOneRedisReadPerTtl) {
  Restart(milliseconds(3000), nullptr, nullptr, milliseconds(0));  // reads that asks cause
  const auto ref = Ref({{"listName", "jobs"}});
  redis_.Command({"RPUSH", "jobs", "x"});
  const long before = redis_.CommandCalls("llen");
  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 200; ++i)
    callers.emplace_back([&] {
      bool active = false;
      if (IsActive(ref, &active).ok() && active) ++ok;
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), 200);
  EXPECT_EQ(redis_.CommandCalls("llen") - before, 1);
}

// Queues KEDA keeps asking for are read ahead, all of one server's in one pipelined round trip
// per refresh (one phase per cycle here, so a cycle is one round trip), so the asks are answered
// from memory with a depth younger than the TTL; queues no longer asked for are left alone, and
// a Redis that goes away is UNAVAILABLE, never its last depth.
TEST_F(ExternalScalerTest, AskedQueuesAreRefreshedAheadInOneRoundTripAndAnsweredFromMemory) {
  Restart(milliseconds(200), nullptr, nullptr, milliseconds(1500), 1);
  constexpr int kQueues = 50;
  auto ref = [&](int i) {
    externalscaler::ScaledObjectRef r = Ref({{"listName", "jobs-" + std::to_string(i)}});
    r.set_name("worker-" + std::to_string(i));
    return r;
  };
  auto depth = [&](int i) {
    externalscaler::GetMetricsResponse m;
    const grpc::Status s = Metric(ref(i), &m);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return s.ok() && m.metricvalues_size() == 1 ? m.metricvalues(0).metricvaluefloat() : -1;
  };
  for (int i = 0; i < kQueues; ++i) redis_.Command({"RPUSH", "jobs-" + std::to_string(i), "x"});
  for (int i = 0; i < kQueues; ++i) ASSERT_EQ(depth(i), 1);
  const ScalerCore& core = harness_->core();
  const uint64_t asked_reads = core.cache().reads();
  EXPECT_EQ(asked_reads, static_cast<uint64_t>(kQueues)) << "the first asks read";
  std::this_thread::sleep_for(milliseconds(200));  // a refresh round with every queue asked

  for (int i = 0; i < kQueues; ++i) redis_.Command({"RPUSH", "jobs-" + std::to_string(i), "y"});
  const uint64_t rounds_before = core.refresh_round_trips();
  const long llen_before = redis_.CommandCalls("llen");
  const long events_before = redis_.Stat("total_reads_processed");
  std::this_thread::sleep_for(milliseconds(450));  // past the TTL: two or three rounds
  for (int i = 0; i < kQueues; ++i) EXPECT_EQ(depth(i), 2) << "a depth read after the push";
  const long rounds = static_cast<long>(core.refresh_round_trips() - rounds_before);
  const long llens = redis_.CommandCalls("llen") - llen_before;
  const long events = redis_.Stat("total_reads_processed") - events_before;
  EXPECT_EQ(core.cache().reads(), asked_reads) << "every ask answered from memory";
  EXPECT_GE(rounds, 2);
  EXPECT_GE(llens, (rounds - 1) * kQueues) << "each round reads every asked queue";
  EXPECT_LE(llens, (rounds + 1) * kQueues);
  // Redis's own count of client reads: about one per round (plus the test's two INFO calls),
  // where one read per queue would be 50 a round.
  EXPECT_LE(events, 2 * (rounds + 1) + 6)
      << llens << " LLEN in " << rounds << " rounds took " << events << " reads";

  std::this_thread::sleep_for(milliseconds(1500 + 300));  // the refresh window passes
  const long idle_llen = redis_.CommandCalls("llen");
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(redis_.CommandCalls("llen"), idle_llen) << "queues nobody asks for are not read";

  ASSERT_EQ(depth(0), 2);  // asked again: refreshed again
  redis_.Kill();
  std::this_thread::sleep_for(milliseconds(300));
  externalscaler::GetMetricsResponse down;
  EXPECT_EQ(Metric(ref(0), &down).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "never the depth read before Redis went away";
}

TEST_F(ExternalScalerTest, APushAboveTheThresholdReachesAnOpenStreamWithin100ms) {
  const auto ref =
      Ref({{"source", "push"}, {"queueName", "agent-tasks"}, {"activationQueueLength", "2"}});
  auto pusher = v1::QueueDepthPush::NewStub(channel_);
  auto push = [&](double depth) {
    grpc::ClientContext ctx;
    v1::QueueDepthReport report;
    report.set_queue_name("agent-tasks");
    report.set_depth(depth);
    v1::QueueDepthAck ack;
    return pusher->Report(&ctx, report, &ack);
  };
  ASSERT_TRUE(push(0).ok());
  grpc::ClientContext stream_ctx;
  auto stream = stub_->StreamIsActive(&stream_ctx, ref);
  std::this_thread::sleep_for(milliseconds(150));  // the stream is open and has seen depth 0
  ASSERT_TRUE(push(2).ok()) << "at the threshold: still inactive";
  std::this_thread::sleep_for(milliseconds(50));
  const auto pushed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(push(3).ok());
  externalscaler::IsActiveResponse r;
  ASSERT_TRUE(stream->Read(&r));
  const auto latency = std::chrono::steady_clock::now() - pushed_at;
  EXPECT_TRUE(r.result());
  std::cout << "[ push     ] push to stream: "
            << std::chrono::duration<double, std::milli>(latency).count() << " ms\n";
  EXPECT_LT(latency, milliseconds(100))
      << std::chrono::duration<double, std::milli>(latency).count() << " ms";
  stream_ctx.TryCancel();  // the client leaves; the server cleans up
  EXPECT_FALSE(stream->Read(&r));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// GET http://127.0.0.1:port/path, the whole response as text.
std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)::write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(ExternalScalerTest, MetricsEndpointCountsRequestsReadsAndMeteredGpuTime) {
  auto registry = std::make_shared<prometheus::Registry>();
  ScalerMetrics metrics(registry, {"search"});
  Result<std::unique_ptr<HttpServer>> exposer = HttpServer::Start(
      "127.0.0.1:0", [registry](const std::string&) { return MetricsPage(*registry); });
  ASSERT_TRUE(exposer.ok()) << exposer.status().message();
  PriceBook prices;
  ActivityMeter meter({}, nullptr, prices, ActivityMeter::DefaultClock(), &metrics);
  Restart(milliseconds(5000), &metrics, &meter);
  redis_.Command({"RPUSH", "jobs", "x"});
  bool active = false;
  const auto ref = Ref({{"listName", "jobs"}, {"costCenter", "search"}});
  ASSERT_TRUE(IsActive(ref, &active).ok());
  ASSERT_TRUE(IsActive(ref, &active).ok());  // from the cache
  EXPECT_EQ(IsActive(Ref({}), &active).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(IsActive(ref, &active).ok());  // accrues GPU time for the active replica
  const std::string text = HttpGet((*exposer)->port(), "/metrics");
  EXPECT_NE(text.find("gpuvpa_scaler_requests_total{code=\"OK\",method=\"IsActive\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("gpuvpa_scaler_requests_total{code=\"INVALID_ARGUMENT\",method=\"IsActive\"} 1"),
      std::string::npos);
  EXPECT_NE(text.find("gpuvpa_scaler_source_read_seconds_count 1"), std::string::npos);
  EXPECT_NE(text.find("gpuvpa_scaler_cache_hits_total"), std::string::npos);
  EXPECT_NE(text.find("gpuvpa_scaler_active_scaled_objects 1"), std::string::npos);
  EXPECT_NE(text.find("gpuvpa_scaler_metered_gpu_seconds_total{cost_center=\"search\"}"),
            std::string::npos);
  // A cost center outside the configured set never becomes a label value of its own.
  const auto other = Ref({{"listName", "jobs"}, {"costCenter", std::string(300, 'x')}});
  EXPECT_EQ(IsActive(other, &active).error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << "longer than 253 bytes";
  const auto stranger = Ref({{"listName", "jobs2"}, {"costCenter", "team-not-configured"}});
  redis_.Command({"RPUSH", "jobs2", "x"});
  ASSERT_TRUE(IsActive(stranger, &active).ok());
  ASSERT_TRUE(IsActive(stranger, &active).ok());
  const std::string after = HttpGet((*exposer)->port(), "/metrics");
  EXPECT_EQ(after.find("team-not-configured"), std::string::npos);
  EXPECT_NE(after.find("gpuvpa_scaler_metered_gpu_seconds_total{cost_center=\"unallocated\"}"),
            std::string::npos)
      << after;
}

// Certificates made by openssl for this test: a CA, a server certificate for 127.0.0.1 and a
// client certificate, all signed by the CA.
class MtlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificates(tmp_.dir().string(), &error)) << error;
  }
  std::string Read(const std::string& name) {
    std::ifstream in(tmp_.Path(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  grpc::Status CallGetMetricSpec(const std::string& target,
                                 std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = externalscaler::ExternalScaler::NewStub(grpc::CreateChannel(target, creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    externalscaler::ScaledObjectRef ref;
    ref.set_name("jobs");
    ref.set_namespace_("ml");
    (*ref.mutable_scalermetadata())["source"] = "push";
    (*ref.mutable_scalermetadata())["queueName"] = "jobs";
    externalscaler::GetMetricSpecResponse spec;
    return stub->GetMetricSpec(&ctx, ref, &spec);
  }
  testing::ScopedTempDir tmp_;
};

TEST_F(MtlsTest, ClientWithoutCertificateIsRefusedAndWithOneItWorks) {
  ServerOptions options;
  options.tls_cert_file = tmp_.Path("server.pem");
  options.tls_key_file = tmp_.Path("server.key");
  options.client_ca_file = tmp_.Path("ca.pem");
  ScalerHarnessOptions o;
  o.server = options;
  ScalerHarness harness(std::move(o));
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = Read("ca.pem");
  grpc::Status refused = CallGetMetricSpec(harness.target(), grpc::SslCredentials(no_cert));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << "the handshake must fail";
  grpc::SslCredentialsOptions with_cert = no_cert;
  with_cert.pem_private_key = Read("client.key");
  with_cert.pem_cert_chain = Read("client.pem");
  grpc::Status accepted = CallGetMetricSpec(harness.target(), grpc::SslCredentials(with_cert));
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(CallGetMetricSpec(harness.target(), grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE)
      << "plaintext is refused";
}

TEST_F(MtlsTest, TlsWithoutClientCaAcceptsAnyTlsClient) {
  ServerOptions options;
  options.tls_cert_file = tmp_.Path("server.pem");
  options.tls_key_file = tmp_.Path("server.key");
  ScalerHarnessOptions o;
  o.server = options;
  ScalerHarness harness(std::move(o));
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = Read("ca.pem");
  EXPECT_TRUE(CallGetMetricSpec(harness.target(), grpc::SslCredentials(tls)).ok());
}

}  // namespace
}  // namespace gpuvpa::scaler
