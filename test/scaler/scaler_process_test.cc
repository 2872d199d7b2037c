// The real gpuvpa-scaler binary: SIGTERM while a hostile backend stalls, the health service, and
// a full filesystem under the ledger at shutdown (a tmpfs in a private mount namespace).
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/cost/ledger.h"
#include "core/cost/ledger_spool.h"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "proto/health.grpc.pb.h"
#include "test/support/process.h"
#include "test/support/redis_server.h"
#include "test/support/scripted_http_server.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa::scaler {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const std::string kScaler = std::string(GPUVPA_BIN_DIR) + "/gpuvpa-scaler";

externalscaler::ScaledObjectRef Ref(const std::string& name,
                                    const std::map<std::string, std::string>& m) {
  externalscaler::ScaledObjectRef r;
  r.set_name(name);
  r.set_namespace_("ml");
  for (const auto& [k, v] : m) (*r.mutable_scalermetadata())[k] = v;
  return r;
}

TEST(ScalerProcessTest, SigtermStopsTheScalerWhileAHostileBackendStallsAndHealthIsServed) {
  testing::ScopedTempDir tmp;
  testing::RedisServer redis;
  std::string error;
  ASSERT_TRUE(redis.Start(&error)) << error;
  testing::ScriptedHttpServer chunk(testing::HttpBehaviour::kWrappedChunk);
  testing::ScriptedHttpServer loris(testing::HttpBehaviour::kSlowloris);
  std::ofstream(tmp.Path("scaler.yaml"))
      << "redis:\n  - address: 127.0.0.1:" << redis.port() << "\n"
      << "prometheus:\n  - server_address: " << chunk.url() << "\n"
      << "  - server_address: " << loris.url() << "\n";
  const int port = testing::FreeLocalPort();
  pid_t pid =
      testing::SpawnProcess({kScaler, "serve", "--listen", "127.0.0.1:" + std::to_string(port),
                             "--metrics-listen", "", "--scaler-config", tmp.Path("scaler.yaml")},
                            tmp.Path("scaler.log"));
  ASSERT_TRUE(testing::WaitForTcpPort(port, milliseconds(10000)))
      << testing::ReadTextFile(tmp.Path("scaler.log"));
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = externalscaler::ExternalScaler::NewStub(channel);

  auto health = grpc::health::v1::Health::NewStub(channel);
  {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckResponse r;
    ASSERT_TRUE(health->Check(&ctx, {}, &r).ok());
    EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  for (int round = 0; round < 2; ++round)
    for (const auto* server : {&chunk, &loris}) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      externalscaler::GetMetricsRequest req;
      *req.mutable_scaledobjectref() = Ref("hostile", {{"source", "prometheus"},
                                                       {"serverAddress", server->url()},
                                                       {"query", "q"},
                                                       {"threshold", "1"}});
      externalscaler::GetMetricsResponse out;
      EXPECT_EQ(stub->GetMetrics(&ctx, req, &out).error_code(), grpc::StatusCode::UNAVAILABLE);
    }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    externalscaler::GetMetricsRequest req;
    *req.mutable_scaledobjectref() =
        Ref("healthy",
            {{"address", "127.0.0.1:" + std::to_string(redis.port())}, {"listName", "jobs"}});
    externalscaler::GetMetricsResponse out;
    grpc::Status s = stub->GetMetrics(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  // An open stream ends with OK on SIGTERM, and the process exits 0 promptly.
  grpc::ClientContext stream_ctx;
  auto stream = stub->StreamIsActive(
      &stream_ctx, Ref("pushed", {{"source", "push"}, {"queueName", "agent-tasks"}}));
  std::this_thread::sleep_for(milliseconds(200));
  ::kill(pid, SIGTERM);
  externalscaler::IsActiveResponse r;
  while (stream->Read(&r)) {
  }
  grpc::Status end = stream->Finish();
  EXPECT_TRUE(end.ok()) << end.error_code() << " " << end.error_message();
  EXPECT_EQ(testing::WaitForExit(pid, milliseconds(10000)), 0)
      << testing::ReadTextFile(tmp.Path("scaler.log"));
  const std::string log = testing::ReadTextFile(tmp.Path("scaler.log"));
  EXPECT_NE(log.find(" info serving ExternalScaler"), std::string::npos) << log;
  EXPECT_NE(log.find(" warning queue read failed: GET " + chunk.url()), std::string::npos)
      << "source errors are logged with a level and a timestamp:\n"
      << log;
}

// Drives a metered ScaledObject (push source) on a scaler at `port`: active for a while.
void MeterSomeActivity(int port) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto pusher = v1::QueueDepthPush::NewStub(channel);
  auto stub = externalscaler::ExternalScaler::NewStub(channel);
  grpc::ClientContext push_ctx;
  v1::QueueDepthReport report;
  report.set_queue_name("agent-tasks");
  report.set_depth(12);
  v1::QueueDepthAck ack;
  ASSERT_TRUE(pusher->Report(&push_ctx, report, &ack).ok());
  const auto ref = Ref("agent", {{"source", "push"},
                                 {"queueName", "agent-tasks"},
                                 {"costCenter", "ai-agents"},
                                 {"gpuModel", "H100-80GB"}});
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    externalscaler::IsActiveResponse r;
    ASSERT_TRUE(stub->IsActive(&ctx, ref, &r).ok());
    EXPECT_TRUE(r.result());
    std::this_thread::sleep_for(milliseconds(400));
  }
}

// Issue 24, finding 1: the manifest starts the scaler with --health-listen (a plaintext port
// for Kubernetes' gRPC probes beside the mTLS one), and the process exited at once: gRPC cannot
// start a server with no service of its own. Started with the manifest's TLS flags and a
// health port, it serves grpc.health.v1 there (SERVING, NOT_FOUND for a named service), the
// main port still refuses a client without a certificate, and SIGTERM turns the probe
// NOT_SERVING before the process exits 0.
TEST(ScalerProcessTest, TheHealthPortOfTheManifestServesProbesBesideTheMtlsPort) {
  testing::ScopedTempDir tmp;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificates(tmp.dir().string(), &error)) << error;
  const int port = testing::FreeLocalPort(), health_port = testing::FreeLocalPort();
  pid_t pid = testing::SpawnProcess(
      {kScaler, "serve", "--listen=127.0.0.1:" + std::to_string(port), "--metrics-listen", "",
       "--health-listen=127.0.0.1:" + std::to_string(health_port),
       "--tls-cert=" + tmp.Path("server.pem"), "--tls-key=" + tmp.Path("server.key"),
       "--client-ca=" + tmp.Path("ca.pem")},
      tmp.Path("scaler.log"));
  ASSERT_TRUE(testing::WaitForTcpPort(health_port, milliseconds(10000)))
      << testing::ReadTextFile(tmp.Path("scaler.log"));
  auto health = grpc::health::v1::Health::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(health_port), grpc::InsecureChannelCredentials()));
  auto check = [&](const std::string& service, grpc::health::v1::HealthCheckResponse* r) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    return health->Check(&ctx, request, r);
  };
  grpc::health::v1::HealthCheckResponse r;
  ASSERT_TRUE(check("", &r).ok());
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(check("no.such.Service", &r).error_code(), grpc::StatusCode::NOT_FOUND);
  // The main port: mTLS, so a plaintext client (a probe) gets nowhere there.
  auto main_health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc::health::v1::HealthCheckResponse ignored;
    EXPECT_EQ(main_health->Check(&ctx, {}, &ignored).error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  // A watcher sees SERVING, then NOT_SERVING once SIGTERM arrives.
  grpc::ClientContext watch_ctx;
  auto watch = health->Watch(&watch_ctx, {});
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  ::kill(pid, SIGTERM);
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(testing::WaitForExit(pid, milliseconds(10000)), 0)
      << testing::ReadTextFile(tmp.Path("scaler.log"));
}

// Issue 23, finding 11: a SIGKILLed scaler lost every open metering period (rows flush hourly).
// Now the open periods are saved every --open-periods-interval and the next start writes them:
// 30 kills at random moments of an active ScaledObject (3 replicas), then a clean stop. The
// ledger holds every run's active time but at most one interval (plus the housekeeping's
// jitter) per kill, and never more than the time it was active: nothing twice.
TEST(ScalerProcessTest, ThirtyKillsWithOpenPeriodsLoseAtMostOneSaveIntervalEach) {
  testing::ScopedTempDir tmp;
  std::mt19937 rng(11);
  double active_s = 0;
  const auto ref = Ref("agent", {{"source", "push"},
                                 {"queueName", "agent-tasks"},
                                 {"costCenter", "ai-agents"},
                                 {"gpuModel", "H100-80GB"}});
  auto start = [&](int port) {
    return testing::SpawnProcess(
        {kScaler, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--metrics-listen", "",
         "--ledger", tmp.Path("ledger.db"), "--spool", tmp.Path("metered.spool"),
         "--open-periods-interval", "1", "--log-level", "warn"},
        tmp.Path("scaler.log"));
  };
  constexpr int kKills = 30;
  for (int k = 0; k <= kKills; ++k) {
    const int port = testing::FreeLocalPort();
    pid_t pid = start(port);
    ASSERT_TRUE(testing::WaitForTcpPort(port, milliseconds(10000)))
        << testing::ReadTextFile(tmp.Path("scaler.log"));
    if (k == kKills) {  // the last run only takes over what the one before left open
      ::kill(pid, SIGTERM);
      ASSERT_EQ(testing::WaitForExit(pid, milliseconds(15000)), 0)
          << testing::ReadTextFile(tmp.Path("scaler.log"));
      break;
    }
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    auto pusher = v1::QueueDepthPush::NewStub(channel);
    auto stub = externalscaler::ExternalScaler::NewStub(channel);
    grpc::ClientContext push_ctx;
    v1::QueueDepthReport report;
    report.set_queue_name("agent-tasks");
    report.set_depth(12);  // 3 replicas at the default target of 5
    v1::QueueDepthAck ack;
    ASSERT_TRUE(pusher->Report(&push_ctx, report, &ack).ok());
    const double run_s = 1.0 + static_cast<double>(rng() % 1000) / 1000;
    const auto first = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - first).count() < run_s) {
      grpc::ClientContext ctx;
      externalscaler::IsActiveResponse r;
      ASSERT_TRUE(stub->IsActive(&ctx, ref, &r).ok());
      std::this_thread::sleep_for(milliseconds(100));
    }
    testing::KillProcess(pid);
    active_s += std::chrono::duration<double>(Clock::now() - first).count();
  }
  Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(tmp.Path("ledger.db"));
  ASSERT_TRUE(ledger.ok());
  Result<Showback> s = (*ledger)->QueryShowback({});
  ASSERT_TRUE(s.ok());
  const double metered_s = static_cast<double>(s->total.metered_gpu_time) / 1000 / 3;
  std::cout << "active " << active_s << " s over " << kKills << " killed runs; metered "
            << metered_s << " s (3 replicas each)\n";
  EXPECT_LE(metered_s, active_s + 0.5) << "nothing charged twice";
  // Each kill loses at most the save interval (1 s) plus the housekeeping's jitter (0.5 s).
  EXPECT_GE(metered_s, active_s - kKills * 1.5);
  EXPECT_GE(metered_s, active_s * 0.25) << "the open periods were recovered at all";
  EXPECT_FALSE(std::filesystem::exists(tmp.Path("metered.spool.open")));
}

// Finding 6: with the ledger's filesystem full at shutdown, the metered rows go to the spool,
// durably, and the next start moves them into a ledger; with the spool full too, the process
// exits non-zero instead of pretending.
TEST(ScalerProcessTest, AFullFilesystemAtShutdownLosesNoMeteredRow) {
  testing::ScopedTempDir tmp;
  for (bool spool_full_too : {false, true}) {
    SCOPED_TRACE(spool_full_too ? "ledger and spool full" : "ledger full");
    const std::string full = tmp.Path(spool_full_too ? "full2" : "full1");
    std::filesystem::create_directories(full);
    const std::string spool = spool_full_too ? full + "/metered.spool" : tmp.Path("metered.spool");
    const std::string ready = tmp.Path("ready"), fill_now = tmp.Path("fill-now"),
                      filled = tmp.Path("filled"), code = tmp.Path("exit-code");
    for (const std::string& f : {ready, fill_now, filled, code}) std::filesystem::remove(f);
    const int port = testing::FreeLocalPort();
    // A private mount namespace with a 2 MiB tmpfs under the ledger; the scaler starts with
    // room to spare, then the test fills it before SIGTERM.
    const std::string script =
        "set -e\n"
        "mount -t tmpfs -o size=2m tmpfs '" +
        full + "'\n" + "'" + kScaler + "' serve --listen 127.0.0.1:" + std::to_string(port) +
        " --metrics-listen '' --ledger '" + full + "/ledger.db' --spool '" + spool + "' &\n" +
        "pid=$!\n"
        "echo $pid > '" +
        ready + "'\n" + "while [ ! -e '" + fill_now + "' ]; do sleep 0.05; done\n" +
        "dd if=/dev/zero of='" + full + "/filler' bs=64k >/dev/null 2>&1 || true\n" + "touch '" +
        filled + "'\n" + "set +e\nwait $pid\necho $? > '" + code + "'\n";
    std::ofstream(tmp.Path("run.sh")) << script;
    pid_t sh = testing::SpawnProcess(
        {"unshare", "--user", "--map-root-user", "--mount", "sh", tmp.Path("run.sh")},
        tmp.Path("run.log"));
    ASSERT_GT(sh, 0);
    ASSERT_TRUE(testing::WaitForTcpPort(port, milliseconds(10000)))
        << "unshare/mount or the scaler failed: " << testing::ReadTextFile(tmp.Path("run.log"));
    const pid_t scaler = std::stoi(testing::ReadTextFile(ready));
    MeterSomeActivity(port);
    std::ofstream(fill_now) << "";
    for (int i = 0; i < 500 && !std::filesystem::exists(filled); ++i)
      std::this_thread::sleep_for(milliseconds(20));
    ASSERT_TRUE(std::filesystem::exists(filled));
    ::kill(scaler, SIGTERM);
    EXPECT_EQ(testing::WaitForExit(sh, milliseconds(15000)), 0)
        << testing::ReadTextFile(tmp.Path("run.log"));
    const std::string exit_code = testing::ReadTextFile(code);
    const std::string log = testing::ReadTextFile(tmp.Path("run.log"));
    if (spool_full_too) {
      EXPECT_NE(exit_code, "0\n") << "no row could be kept: the exit status must say so\n" << log;
      EXPECT_NE(log.find("metered rows lost"), std::string::npos) << log;
      continue;
    }
    EXPECT_EQ(exit_code, "0\n") << log;
    Result<std::vector<LedgerAction>> kept = LedgerSpool(spool).Read();
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    ASSERT_EQ(kept->size(), 1u) << log;
    EXPECT_EQ((*kept)[0].cost_center, "ai-agents");
    EXPECT_GT((*kept)[0].metered, 0);
    // The next start (a ledger with room) takes the spooled row first.
    const int port2 = testing::FreeLocalPort();
    pid_t next = testing::SpawnProcess(
        {kScaler, "serve", "--listen", "127.0.0.1:" + std::to_string(port2), "--metrics-listen", "",
         "--ledger", tmp.Path("ledger2.db"), "--spool", spool},
        tmp.Path("next.log"));
    ASSERT_TRUE(testing::WaitForTcpPort(port2, milliseconds(10000)))
        << testing::ReadTextFile(tmp.Path("next.log"));
    ::kill(next, SIGTERM);
    EXPECT_EQ(testing::WaitForExit(next, milliseconds(10000)), 0)
        << testing::ReadTextFile(tmp.Path("next.log"));
    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(tmp.Path("ledger2.db"));
    ASSERT_TRUE(ledger.ok());
    Result<Showback> s = (*ledger)->QueryShowback({});
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->total.metered, (*kept)[0].metered);
    EXPECT_FALSE(std::filesystem::exists(spool)) << "drained into the ledger";
  }
}

}  // namespace
}  // namespace gpuvpa::scaler
