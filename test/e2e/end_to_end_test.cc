// The whole system on one machine, the real daemons together:
//   a real Prometheus (30 h of DCGM exporter and kube-state-metrics history, backfilled with
//   promtool) -> gpuvpa-recommender (mTLS gRPC; the ledger's one writer, --accept-ledger-rows)
//   -> gpuvpa-updater (against the Kubernetes API test double, with the RBAC the shipped
//   manifests bind and the shipped report-only policy; GVPAs in Auto for ml-dev and for the
//   production namespace ml-prod) -> the ledger;
//   a real Redis list -> gpuvpa-scaler (mTLS), driven as KEDA drives it (GetMetricSpec, then
//   IsActive and GetMetrics on a poll loop, plus a StreamIsActive stream) -> metered periods to
//   the recommender's ledger over gRPC.
// Checked: the non-production workload is patched, the production one only reported; the queue
// filled and drained drives active -> inactive on both paths; every action and metered period
// is in the one ledger under its cost center, exactly once (usage charges equal a fresh
// single-pass recommender's over the same Prometheus; one applied change; one metered period
// whose GPU time equals the scaler's own counter).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "core/base/time_format.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/net/http_client.h"
#include "proto/externalscaler.grpc.pb.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/daemon/recommender_daemon.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/process.h"
#include "test/support/prometheus_server.h"
#include "test/support/redis_server.h"
#include "test/support/sockets.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::KubeTestCluster;

constexpr int kHours = 30;
constexpr const char* kUpdaterToken = "updater-token";
const std::string kBin = GPUVPA_BIN_DIR;

// DCGM exporter and kube-state-metrics history of two H100 inference servers with the same
// shape (VRAM 10-12.5 GiB, SM 5-15 %: a MIG 1g.20gb fits): ml-dev/server (cost center
// research) and ml-prod/server (environment=production, cost center fraud).
struct History {
  double start_s = 0;
  double end_s = 0;
  std::string openmetrics;
};

History MakeHistory() {
  History h;
  // Ends more than Prometheus's 5-minute lookback before the recommender's first query end
  // (now - lag): every poll, whenever it runs, sees the same points.
  h.end_s = std::floor(UnixNowSeconds() / 60) * 60 - 600;
  h.start_s = h.end_s - kHours * 3600.0;
  std::map<std::string, std::string> family;
  auto add = [&](const std::string& metric, const std::string& labels, double v, double t) {
    char value[64];
    std::snprintf(value, sizeof value, "%.6f %.0f\n", v, t);
    family[metric] += metric + "{" + labels + "} " + value;
  };
  struct Server {
    std::string ns, cost_center, environment, pod, replicaset, uuid, host;
  };
  const Server servers[] = {
      {"ml-dev", "research", "dev", "server-6d5f7b8c9d-x2x4z", "server-6d5f7b8c9d", "GPU-d", "a"},
      {"ml-prod", "fraud", "production", "server-7c8d9e6f5b-q7w8e", "server-7c8d9e6f5b", "GPU-p",
       "b"}};
  for (int i = 0; i <= kHours * 60; ++i) {
    const double t = h.start_s + i * 60.0;
    for (const Server& s : servers) {
      const std::string dcgm =
          "gpu=\"0\",UUID=\"" + s.uuid + "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-" +
          s.host + "\",namespace=\"" + s.ns + "\",pod=\"" + s.pod + "\",container=\"main\"";
      add("DCGM_FI_DEV_FB_USED", dcgm, 10240 + (i * 37 % 256) * 10, t);
      add("DCGM_FI_PROF_SM_ACTIVE", dcgm, 0.05 + (i * 13 % 10) / 100.0, t);
      if (i % 10 != 0) continue;
      add("kube_pod_owner",
          "namespace=\"" + s.ns + "\",pod=\"" + s.pod +
              "\",owner_kind=\"ReplicaSet\",owner_name=\"" + s.replicaset +
              "\",owner_is_controller=\"true\",uid=\"u-" + s.ns + "\"",
          1, t);
      add("kube_replicaset_owner",
          "namespace=\"" + s.ns + "\",replicaset=\"" + s.replicaset +
              "\",owner_kind=\"Deployment\",owner_name=\"server\",owner_is_controller=\"true\"",
          1, t);
      add("kube_pod_container_resource_requests",
          "namespace=\"" + s.ns + "\",pod=\"" + s.pod +
              "\",container=\"main\",resource=\"nvidia_com_gpu\",unit=\"integer\",node=\"node-" +
              s.host + "\",uid=\"u-" + s.ns + "\"",
          1, t);
      add("kube_namespace_labels",
          "namespace=\"" + s.ns + "\",label_cost_center=\"" + s.cost_center +
              "\",label_environment=\"" + s.environment + "\"",
          1, t);
    }
  }
  for (const auto& [metric, lines] : family)
    h.openmetrics += "# TYPE " + metric + " gauge\n" + lines;
  h.openmetrics += "# EOF\n";
  return h;
}

bool WaitFor(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return done();
}

// The recommender's config (gpuvpa.yaml): prices, the ledger, Prometheus, mTLS.
std::string RecommenderConfig(const testing::ScopedTempDir& tmp, const std::string& prometheus) {
  return "ledger:\n  path: " + tmp.Path("ledger.db") +
         "\nprices:\n  - gpu_model: H100-80GB\n    usd_per_gpu_hour: 4\n"
         "recommender:\n  prometheus:\n    server_address: " +
         prometheus +
         "\n    step_seconds: 60\n    chunk_seconds: 21600\n    hosts_per_query: 4\n"
         "    lag_seconds: 180\n    timeout_seconds: 10\n    max_retries: 1\n"
         "  checkpoint: " +
         tmp.Path("checkpoint") +
         "\n  min_history_hours: 12\n  poll_interval_seconds: 1\n"
         "  listen_http: 127.0.0.1:0\n  listen_grpc: 127.0.0.1:0\n"
         "  tls_cert_file: " +
         tmp.Path("server.pem") + "\n  tls_key_file: " + tmp.Path("server.key") +
         "\n  client_ca_file: " + tmp.Path("ca.pem") + "\n";
}

// The policy the report-only overlay ships (deploy/kubernetes/base/config.yaml).
std::string ShippedPolicy() {
  for (const YAML::Node& doc : YAML::LoadAllFromFile(std::string(GPUVPA_SOURCE_DIR) +
                                                     "/deploy/kubernetes/base/config.yaml"))
    if (doc["metadata"]["name"].as<std::string>() == "gpuvpa-updater-policy")
      return doc["data"]["policy.yaml"].as<std::string>();
  return "";
}

struct Row {
  std::string kind, status, ns, workload, cost_center;
  int64_t metered_gpu_time = 0;
};

std::vector<Row> LedgerRows(const std::string& path) {
  std::vector<Row> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << path;
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT kind, status, namespace, workload, cost_center, metered_milli_gpu_s "
                     "FROM actions ORDER BY rowid",
                     -1, &s, nullptr);
  auto text = [&](int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
  };
  while (s != nullptr && sqlite3_step(s) == SQLITE_ROW)
    rows.push_back({text(0), text(1), text(2), text(3), text(4), sqlite3_column_int64(s, 5)});
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows;
}

int Count(const std::vector<Row>& rows, const std::string& kind, const std::string& status,
          const std::string& ns) {
  int n = 0;
  for (const Row& r : rows) n += r.kind == kind && r.status == status && r.ns == ns;
  return n;
}

// KEDA's side of the external scaler: one ScaledObject polled as the operator polls it, and a
// StreamIsActive stream as KEDA keeps open for `external-push`.
class KedaClient {
 public:
  KedaClient(const std::string& target, const testing::ScopedTempDir& certs, int redis_port) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = testing::ReadTextFile(certs.Path("ca.pem"));
    tls.pem_cert_chain = testing::ReadTextFile(certs.Path("client.pem"));
    tls.pem_private_key = testing::ReadTextFile(certs.Path("client.key"));
    stub_ = externalscaler::ExternalScaler::NewStub(
        grpc::CreateChannel(target, grpc::SslCredentials(tls)));
    ref_.set_name("agent-loop");
    ref_.set_namespace_("agents");
    for (const auto& [k, v] :
         std::map<std::string, std::string>{{"source", "redis"},
                                            {"address", "127.0.0.1:" + std::to_string(redis_port)},
                                            {"listName", "agent-tasks"},
                                            {"listLength", "5"},
                                            {"activationListLength", "0"},
                                            {"costCenter", "ai-agents"},
                                            {"gpuModel", "H100-80GB"},
                                            {"maxReplicas", "4"}})
      (*ref_.mutable_scalermetadata())[k] = v;
  }
  ~KedaClient() { Stop(); }

  grpc::Status GetMetricSpec() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    externalscaler::GetMetricSpecResponse spec;
    grpc::Status s = stub_->GetMetricSpec(&ctx, ref_, &spec);
    if (s.ok() && spec.metricspecs_size() > 0) metric_name_ = spec.metricspecs(0).metricname();
    return s;
  }
  void Start() {
    poller_ = std::thread([this] {
      while (!stop_) {
        grpc::ClientContext a;
        a.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
        externalscaler::IsActiveResponse active;
        const grpc::Status s = stub_->IsActive(&a, ref_, &active);
        grpc::ClientContext m;
        m.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
        externalscaler::GetMetricsRequest req;
        *req.mutable_scaledobjectref() = ref_;
        req.set_metricname(metric_name_);
        externalscaler::GetMetricsResponse metrics;
        const grpc::Status ms = stub_->GetMetrics(&m, req, &metrics);
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (!s.ok() || !ms.ok()) ++errors_;
          if (s.ok()) polled_.push_back(active.result());
          if (ms.ok() && metrics.metricvalues_size() > 0)
            last_value_ = metrics.metricvalues(0).metricvaluefloat();
        }
        std::this_thread::sleep_for(milliseconds(250));  // pollingInterval, shortened
      }
    });
    streamer_ = std::thread([this] {
      auto reader = stub_->StreamIsActive(&stream_ctx_, ref_);
      externalscaler::IsActiveResponse r;
      while (reader->Read(&r)) {
        std::lock_guard<std::mutex> lock(mu_);
        streamed_.push_back(r.result());
      }
      stream_end_ = reader->Finish();
    });
  }
  void Stop() {
    stop_ = true;
    if (poller_.joinable()) poller_.join();
    stream_ctx_.TryCancel();
    if (streamer_.joinable()) streamer_.join();
  }
  bool LastPolled(bool active) {
    std::lock_guard<std::mutex> lock(mu_);
    return !polled_.empty() && polled_.back() == active;
  }
  bool LastStreamed(bool active) {
    std::lock_guard<std::mutex> lock(mu_);
    return !streamed_.empty() && streamed_.back() == active;
  }
  size_t streamed() {
    std::lock_guard<std::mutex> lock(mu_);
    return streamed_.size();
  }
  double last_value() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_value_;
  }
  int errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  const std::string& metric_name() const { return metric_name_; }

 private:
  std::unique_ptr<externalscaler::ExternalScaler::Stub> stub_;
  externalscaler::ScaledObjectRef ref_;
  std::string metric_name_;
  std::atomic<bool> stop_{false};
  std::thread poller_, streamer_;
  grpc::ClientContext stream_ctx_;
  grpc::Status stream_end_;
  std::mutex mu_;
  std::vector<bool> polled_, streamed_;
  double last_value_ = -1;
  int errors_ = 0;
};

TEST(EndToEndTest, RecommenderUpdaterAndScalerChargeOneLedgerExactlyOnce) {
  testing::ScopedTempDir tmp;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificates(tmp.dir().string(), &error)) << error;

  // Prometheus with the history, Redis, the Kubernetes API double.
  testing::ScopedTempDir prometheus_dir;
  testing::PrometheusServer prometheus(prometheus_dir.dir().string());
  const History history = MakeHistory();
  ASSERT_TRUE(prometheus.Backfill(history.openmetrics, &error)) << error;
  ASSERT_TRUE(prometheus.Start(&error)) << error;
  testing::RedisServer redis;
  ASSERT_TRUE(redis.Start(&error)) << error;
  KubeTestCluster cluster;
  cluster.api().AddUser(kUpdaterToken, KubeTestCluster::UserFromManifests("gpuvpa-updater"));
  cluster.api().Seed(KubeTestCluster::Namespace("ml-dev", {{"environment", "dev"}}));
  cluster.api().Seed(KubeTestCluster::Namespace("ml-prod", {{"environment", "production"}}));
  for (const char* ns : {"ml-dev", "ml-prod"}) {
    cluster.api().Seed(
        KubeTestCluster::Workload("Deployment", ns, "server", "main", "nvidia.com/gpu", "1"));
    cluster.api().Seed(KubeTestCluster::Gvpa(ns, "server", "Deployment", "server", "Auto"));
  }

  // gpuvpa-recommender: the ledger's one writer.
  std::ofstream(tmp.Path("gpuvpa.yaml")) << RecommenderConfig(tmp, prometheus.url());
  const int rec_grpc = testing::FreeLocalPort();
  const int rec_http = testing::FreeLocalPort();
  pid_t recommender = testing::SpawnProcess(
      {kBin + "/gpuvpa-recommender", "--config", tmp.Path("gpuvpa.yaml"), "--accept-ledger-rows",
       "--listen-grpc", "127.0.0.1:" + std::to_string(rec_grpc), "--listen-http",
       "127.0.0.1:" + std::to_string(rec_http)},
      tmp.Path("recommender.log"));
  ASSERT_GT(recommender, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        Result<HttpResponse> r =
            HttpGet("http://127.0.0.1:" + std::to_string(rec_http) + "/readyz", milliseconds(500));
        return r.ok() && r->status == 200;
      },
      60))
      << testing::ReadTextFile(tmp.Path("recommender.log"));

  // gpuvpa-updater: the shipped report-only policy; the GVPAs ask for Auto.
  std::ofstream(tmp.Path("policy.yaml")) << ShippedPolicy();
  const std::string rec_address = "127.0.0.1:" + std::to_string(rec_grpc);
  // Each component with its own client certificate (the names make-secrets.sh issues): the
  // ledger service lets each append only its own rows.
  auto mtls_as = [&](const std::string& who) {
    return std::vector<std::string>{tmp.Path("ca.pem"), tmp.Path(who + ".pem"),
                                    tmp.Path(who + ".key")};
  };
  const std::vector<std::string> mtls_to_recommender = mtls_as("gpuvpa-updater");
  // Both send their ledger rows to the recommender, over mTLS.
  auto with_ledger = [&](std::vector<std::string> args, const std::string& who) {
    const std::vector<std::string> tls = mtls_as(who);
    for (const std::string& a :
         {std::string("--ledger-service"), rec_address, std::string("--ledger-service-ca"), tls[0],
          std::string("--ledger-service-cert"), tls[1], std::string("--ledger-service-key"),
          tls[2]})
      args.push_back(a);
    return args;
  };
  pid_t updater =
      testing::SpawnProcess(with_ledger({kBin + "/gpuvpa-updater",
                                         "--kubeconfig",
                                         cluster.Kubeconfig(kUpdaterToken, "updater.yaml"),
                                         "--recommender",
                                         rec_address,
                                         "--recommender-ca",
                                         mtls_to_recommender[0],
                                         "--recommender-cert",
                                         mtls_to_recommender[1],
                                         "--recommender-key",
                                         mtls_to_recommender[2],
                                         "--config",
                                         tmp.Path("gpuvpa.yaml"),
                                         "--policy",
                                         tmp.Path("policy.yaml"),
                                         "--spool",
                                         tmp.Path("updater.spool"),
                                         "--report-dir",
                                         tmp.Path("reports"),
                                         "--interval",
                                         "1",
                                         "--identity",
                                         "updater-e2e",
                                         "--log-level",
                                         "warn"},
                                        "gpuvpa-updater"),
                            tmp.Path("updater.log"));
  ASSERT_GT(updater, 0);

  // gpuvpa-scaler: mTLS for KEDA, the Redis backend, metered rows to the recommender.
  std::ofstream(tmp.Path("scaler.yaml"))
      << "redis:\n  - address: 127.0.0.1:" << redis.port() << "\ncost_centers: [ai-agents]\n";
  const int scaler_port = testing::FreeLocalPort();
  const int scaler_metrics = testing::FreeLocalPort();
  pid_t scaler = testing::SpawnProcess(with_ledger({kBin + "/gpuvpa-scaler",
                                                    "serve",
                                                    "--listen",
                                                    "127.0.0.1:" + std::to_string(scaler_port),
                                                    "--metrics-listen",
                                                    "127.0.0.1:" + std::to_string(scaler_metrics),
                                                    "--tls-cert",
                                                    tmp.Path("server.pem"),
                                                    "--tls-key",
                                                    tmp.Path("server.key"),
                                                    "--client-ca",
                                                    tmp.Path("ca.pem"),
                                                    "--scaler-config",
                                                    tmp.Path("scaler.yaml"),
                                                    "--config",
                                                    tmp.Path("gpuvpa.yaml"),
                                                    "--spool",
                                                    tmp.Path("metered.spool"),
                                                    "--cache-ttl-ms",
                                                    "100"},
                                                   "gpuvpa-scaler"),
                                       tmp.Path("scaler.log"));
  ASSERT_GT(scaler, 0);
  ASSERT_TRUE(testing::WaitForTcpPort(scaler_port, milliseconds(10000)))
      << testing::ReadTextFile(tmp.Path("scaler.log"));

  // The updater patches ml-dev and reports ml-prod.
  auto limits = [&](const std::string& ns) {
    return cluster.api().Get(
        "deployments", ns,
        "server")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  };
  auto gvpa_action = [&](const std::string& ns) {
    const json g = cluster.api().Get("gpuverticalpodautoscalers", ns, "server");
    const json recs = g.is_null() ? json()
                                  : g.value("status", json::object())
                                        .value("recommendation", json::object())
                                        .value("containerRecommendations", json::array());
    return recs.is_array() && !recs.empty() ? recs[0].value("action", "") : std::string();
  };
  const bool patched = WaitFor(
      [&] {
        const json l = limits("ml-dev");
        if (!l.is_object()) return false;
        for (auto it = l.begin(); it != l.end(); ++it)
          if (it.key().rfind("nvidia.com/mig-", 0) == 0) return true;
        return false;
      },
      90);
  ASSERT_TRUE(patched) << limits("ml-dev").dump() << "\n"
                       << testing::ReadTextFile(tmp.Path("updater.log"))
                       << testing::ReadTextFile(tmp.Path("recommender.log"));
  ASSERT_TRUE(WaitFor([&] { return gvpa_action("ml-prod") == "mig_profile"; }, 30))
      << cluster.api().Get("gpuverticalpodautoscalers", "ml-prod", "server").dump();
  // The live updater's owner reports draw each workload's charts, which came over gRPC with the
  // recommendations (the updater has no recommender code to read a store with).
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(tmp.Path("reports/report.json")); }, 30))
      << testing::ReadTextFile(tmp.Path("updater.log"));
  const json live_report = json::parse(testing::ReadTextFile(tmp.Path("reports/report.json")));
  size_t with_charts = 0;
  for (const json& cc : live_report["cost_centers"])
    for (const json& ns : cc["namespaces"])
      for (const json& w : ns["workloads"]) {
        ASSERT_TRUE(w.contains("charts")) << w.dump();
        EXPECT_FALSE(w["charts"]["vram_histogram"].empty()) << w.dump();
        EXPECT_EQ(w["charts"]["hourly_active_ratio"].size(), 168u);
        ++with_charts;
      }
  EXPECT_GE(with_charts, 2u);
  const std::string live_html = testing::ReadTextFile(tmp.Path("reports/report.html"));
  EXPECT_NE(live_html.find("VRAM peaks per hour"), std::string::npos);
  EXPECT_NE(live_html.find("<div class=\"charts\">"), std::string::npos);

  // KEDA: an empty queue is inactive; filled, active on both paths; drained, inactive again.
  KedaClient keda("127.0.0.1:" + std::to_string(scaler_port), tmp, redis.port());
  grpc::Status spec = keda.GetMetricSpec();
  ASSERT_TRUE(spec.ok()) << spec.error_message();
  EXPECT_EQ(keda.metric_name(), "redis-list-agent-tasks") << "KEDA's metric name rules";
  keda.Start();
  // The stream carries only rising edges (KEDA's push path to scale from zero); falling back
  // to zero is the poll loop's and the cooldown's.
  EXPECT_TRUE(WaitFor([&] { return keda.LastPolled(false); }, 10));
  EXPECT_EQ(keda.streamed(), 0u);
  std::vector<std::string> push = {"LPUSH", "agent-tasks"};
  for (int i = 0; i < 12; ++i) push.push_back("task-" + std::to_string(i));
  redis.Command(push);
  EXPECT_TRUE(WaitFor([&] { return keda.LastPolled(true) && keda.LastStreamed(true); }, 10));
  EXPECT_TRUE(WaitFor([&] { return keda.last_value() == 12; }, 10)) << keda.last_value();
  std::this_thread::sleep_for(milliseconds(3000));  // 3 replicas busy for a while
  redis.Command({"DEL", "agent-tasks"});
  EXPECT_TRUE(WaitFor([&] { return keda.LastPolled(false); }, 10));
  std::this_thread::sleep_for(milliseconds(500));
  keda.Stop();
  EXPECT_EQ(keda.streamed(), 1u) << "one activation, pushed once";
  EXPECT_EQ(keda.errors(), 0);

  // The scaler's own count of metered GPU time, before it stops.
  Result<HttpResponse> metrics = HttpGet(
      "http://127.0.0.1:" + std::to_string(scaler_metrics) + "/metrics", milliseconds(2000));
  ASSERT_TRUE(metrics.ok());
  double counted_gpu_s = -1;
  {
    const std::string key = "gpuvpa_scaler_metered_gpu_seconds_total{cost_center=\"ai-agents\"} ";
    const size_t at = metrics->body.find(key);
    ASSERT_NE(at, std::string::npos) << metrics->body;
    counted_gpu_s = std::stod(metrics->body.substr(at + key.size()));
  }
  EXPECT_GT(counted_gpu_s, 3 * 2.5) << "3 replicas x 1 GPU for at least 2.5 s";

  // Stop in the order a rollout would: the scaler and the updater first (their last rows go to
  // the recommender), then the recommender.
  ::kill(scaler, SIGTERM);
  EXPECT_EQ(testing::WaitForExit(scaler, milliseconds(15000)), 0)
      << testing::ReadTextFile(tmp.Path("scaler.log"));
  ::kill(updater, SIGTERM);
  EXPECT_EQ(testing::WaitForExit(updater, milliseconds(15000)), 0)
      << testing::ReadTextFile(tmp.Path("updater.log"));
  ::kill(recommender, SIGTERM);
  EXPECT_EQ(testing::WaitForExit(recommender, milliseconds(30000)), 0)
      << testing::ReadTextFile(tmp.Path("recommender.log"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Path("metered.spool"))) << "nothing left undelivered";
  EXPECT_FALSE(std::filesystem::exists(tmp.Path("updater.spool")));

  // Kubernetes: ml-dev patched once (dry run first); ml-prod never written.
  int dev_patches = 0, dev_dry_runs = 0;
  for (const testing::KubeRequestRecord& r : cluster.api().requests()) {
    EXPECT_FALSE(r.method == "PATCH" &&
                 r.path.find("/namespaces/ml-prod/deployments") != std::string::npos)
        << r.path;
    if (r.method == "PATCH" && r.path == "/apis/apps/v1/namespaces/ml-dev/deployments/server" &&
        r.status == 200)
      ++(r.query.find("dryRun=All") != std::string::npos ? dev_dry_runs : dev_patches);
  }
  EXPECT_EQ(dev_patches, 1);
  EXPECT_EQ(dev_dry_runs, 1);
  EXPECT_EQ(limits("ml-prod"), (json{{"nvidia.com/gpu", "1"}}));

  // The one ledger: every row under its cost center, each action once.
  const std::vector<Row> rows = LedgerRows(tmp.Path("ledger.db"));
  for (const Row& r : rows) {
    const std::string expected = r.ns == "ml-dev"    ? "research"
                                 : r.ns == "ml-prod" ? "fraud"
                                 : r.ns == "agents"  ? "ai-agents"
                                                     : "?";
    EXPECT_EQ(r.cost_center, expected) << r.kind << " " << r.ns << "/" << r.workload;
  }
  EXPECT_EQ(Count(rows, "applied_change", "applied", "ml-dev"), 1);
  EXPECT_EQ(Count(rows, "applied_change", "proposed", "ml-dev"), 1) << "the accepted dry run";
  EXPECT_EQ(Count(rows, "applied_change", "applied", "ml-prod"), 0);
  EXPECT_EQ(Count(rows, "applied_change", "proposed", "ml-prod"), 0);
  EXPECT_EQ(Count(rows, "recommendation", "applied", "ml-dev"), 1) << "the saving realised";
  EXPECT_GE(Count(rows, "recommendation", "proposed", "ml-prod"), 1) << "reported";
  int metered_periods = 0;
  int64_t metered_milli = 0;
  for (const Row& r : rows)
    if (r.kind == "metered_period" && r.metered_gpu_time > 0) {
      ++metered_periods;
      metered_milli += r.metered_gpu_time;
      EXPECT_EQ(r.workload, "ScaledObject/agent-loop");
    }
  EXPECT_EQ(metered_periods, 1) << "one active period: filled, then drained";
  EXPECT_NEAR(static_cast<double>(metered_milli), counted_gpu_s * 1000, 1.0)
      << "the ledger holds what the scaler metered";

  // Usage charged exactly once: the same GPU time per cost center as one fresh pass over the
  // same Prometheus.
  Result<Showback> charged = [&] {
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
    return ledger->QueryShowback({});
  }();
  ASSERT_TRUE(charged.ok());
  testing::ScopedTempDir fresh;
  std::ofstream(fresh.Path("gpuvpa.yaml")) << RecommenderConfig(fresh, prometheus.url());
  Result<GpuvpaConfig> config = LoadConfigFile(fresh.Path("gpuvpa.yaml"));
  ASSERT_TRUE(config.ok()) << config.status().message();
  Result<recommender::DaemonConfig> daemon_config =
      recommender::ParseDaemonConfig(config->recommender_yaml, "gpuvpa.yaml");
  ASSERT_TRUE(daemon_config.ok()) << daemon_config.status().message();
  {
    Result<std::unique_ptr<recommender::RecommenderDaemon>> once =
        recommender::RecommenderDaemon::Create(*daemon_config, *config);
    ASSERT_TRUE(once.ok()) << once.status().message();
    ASSERT_TRUE((*once)->PollOnce(UnixNowSeconds()).ok());
  }
  Result<Showback> reference = [&] {
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(fresh.Path("ledger.db"))).value();
    return ledger->QueryShowback({});
  }();
  ASSERT_TRUE(reference.ok());
  std::map<std::string, MilliGpuSeconds> want, got;
  for (const ShowbackRow& g : reference->groups) want[g.group] = g.allocated_gpu_time;
  for (const ShowbackRow& g : charged->groups)
    if (g.allocated_gpu_time > 0) got[g.group] = g.allocated_gpu_time;
  EXPECT_EQ(got, want);
  EXPECT_EQ(want.size(), 2u) << "research and fraud";
  // One GPU over the history: a 60 s step per sample (kHours * 60 + 1 of them), and up to 5
  // more: backfilled series have no staleness markers, so range queries repeat the last sample
  // for Prometheus's 5-minute lookback.
  const int64_t samples_ms = static_cast<int64_t>(history.end_s - history.start_s + 60) * 1000;
  EXPECT_GE(want["research"], samples_ms);
  EXPECT_LE(want["research"], samples_ms + 300'000);
}

}  // namespace
}  // namespace gpuvpa
