// gpuvpa-updater against the Kubernetes API double: dry run then patch, conflicts re-read and
// retried, a 403 named, production never patched (a property over 1,000 random workloads and
// policies), rollback after a CUDA OOM with the bump, every step in the ledger and as an
// Event, and leader election between two real gpuvpa-updater processes.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/api/oom_bump.h"
#include "core/api/recommendation_json.h"
#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/gpu/gpu_allocation.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/process.h"
#include "test/support/recommendation_builders.h"
#include "updater/daemon/updater_daemon.h"
#include "updater/kube/gvpa.h"

namespace gpuvpa::updater {
namespace {

using json = nlohmann::json;
using testing::KubeTestCluster;

constexpr const char* kUpdaterToken = "updater-token";

// What deploy/ grants gpuvpa-updater (issue 12's least-privilege list).
// What deploy/kubernetes/base grants the updater's service account, nothing more.
testing::KubeUser UpdaterUser() {
  return testing::KubeTestCluster::UserFromManifests("gpuvpa-updater");
}

v1::Recommendation Rec(const std::string& ns, const std::string& name,
                       double history_s = 7 * 86400) {
  return testing::MigFittingH100Recommendation(ns, name, history_s);
}

void WriteRecs(const std::string& path, const std::vector<v1::Recommendation>& recs) {
  v1::ListRecommendationsResponse list;
  for (const auto& r : recs) *list.add_recommendations() = r;
  std::string text;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(list, &text).ok());
  std::ofstream(path) << text;
}

class UpdaterKubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.api().AddUser(kUpdaterToken, UpdaterUser());
    Seed("ml-dev", {{"environment", "dev"}});
    Seed("ml-prod", {{"environment", "production"}});
    WriteRecs(recs_path_, {Rec("ml-dev", "server"), Rec("ml-prod", "server")});
  }

  void Seed(const std::string& ns, const json& labels, const std::string& name = "server",
            const std::string& mode = "Auto") {
    if (cluster_.api().Get("namespaces", "", ns).is_null())
      cluster_.api().Seed(KubeTestCluster::Namespace(ns, labels));
    cluster_.api().Seed(
        KubeTestCluster::Workload("Deployment", ns, name, "main", "nvidia.com/gpu", "1"));
    if (!mode.empty())
      cluster_.api().Seed(KubeTestCluster::Gvpa(ns, name, "Deployment", name, mode));
  }

  std::unique_ptr<UpdaterDaemon> Daemon(const std::string& token = kUpdaterToken,
                                        UpdaterPolicy policy = {}, ChangeLimits limits = {},
                                        const std::string& report_dir = "",
                                        const std::string& recommender = "") {
    Result<KubeConnection> c = KubeconfigConnection(cluster_.Kubeconfig(token, token + ".yaml"));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    auto client = KubeClient::Create(*c);
    EXPECT_TRUE(client.ok());
    UpdaterDaemonOptions o;
    if (recommender.empty())
      o.recommendations_file = recs_path_;
    else
      o.recommender.address = recommender;
    o.ledger.ledger = ledger_path_;
    o.lease.identity = "updater-test";
    o.limits = limits;
    o.report_dir = report_dir;
    o.change_key_file = change_key_file_;
    Result<GpuvpaConfig> config = LoadConfigFile("");
    EXPECT_TRUE(config.ok());
    auto d = UpdaterDaemon::Create(o, *config, std::move(policy), std::move(client).value());
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return std::move(d).value();
  }

  json Limits(const std::string& ns, const std::string& name = "server") {
    return cluster_.api().Get(
        "deployments", ns,
        name)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  }

  std::vector<std::string> EventReasons(const std::string& ns, const std::string& name = "server") {
    std::vector<std::string> reasons;
    for (const json& e : cluster_.api().List("events", ns))
      if (e["involvedObject"]["name"] == name) reasons.push_back(e["reason"]);
    return reasons;
  }

  Showback Ledger() {
    auto ledger = Ledger::Open(ledger_path_);
    EXPECT_TRUE(ledger.ok());
    Result<Showback> s = (*ledger)->QueryShowback({});
    EXPECT_TRUE(s.ok());
    return *s;
  }

  bool LedgerHas(const std::string& id) {
    auto ledger = Ledger::Open(ledger_path_);
    return ledger.ok() && *(*ledger)->Contains(id);
  }

  std::string ApplyRowId(const v1::Recommendation& r, const std::string& to,
                         const std::string& step) {
    return "apply:" + r.identity().namespace_name() + "/Deployment/" + r.identity().owner_name() +
           "/main:" + to + ":H100-80GB:" + EvidenceMark(r) + ":" + step;
  }

  KubeTestCluster cluster_;
  std::string recs_path_ = cluster_.dir().Path("recs.json");
  std::string ledger_path_ = cluster_.dir().Path("ledger.db");
  std::string change_key_file_;
};

TEST_F(UpdaterKubeTest, DryRunThenPatchInNonProductionOnlyWithLedgerAndEvents) {
  const std::string reports = cluster_.dir().Path("reports");
  auto d = Daemon(kUpdaterToken, {}, {}, reports);
  EXPECT_EQ(d->HandleHttp("/readyz").status, 503);  // no cycle yet
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->leading);
  EXPECT_EQ(s->gvpas, 2u);
  EXPECT_EQ(s->applied, 1u) << ::testing::PrintToString(s->messages);
  EXPECT_EQ(s->failed, 0u) << ::testing::PrintToString(s->messages);
  // The dry run comes first, then the patch, both on the Deployment; nothing writes to prod.
  std::vector<std::string> writes;
  for (const auto& r : cluster_.api().requests()) {
    if (r.method == "GET") continue;
    EXPECT_EQ(r.path.find("/namespaces/ml-prod/deployments"), std::string::npos) << r.path;
    if (r.path == "/apis/apps/v1/namespaces/ml-dev/deployments/server")
      writes.push_back(r.method +
                       (r.query.find("dryRun=All") != std::string::npos ? " dry-run" : "") + " " +
                       std::to_string(r.status));
  }
  EXPECT_EQ(writes, (std::vector<std::string>{"PATCH dry-run 200", "PATCH 200"}));
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
  EXPECT_EQ(Limits("ml-prod"), (json{{"nvidia.com/gpu", "1"}}));
  const json dev = cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev", "server");
  EXPECT_EQ(dev["status"]["summary"]["action"], "mig_profile");
  EXPECT_EQ(dev["status"]["summary"]["applied"], "nvidia.com/mig-1g.20gb=1");
  const json prod = cluster_.api().Get("gpuverticalpodautoscalers", "ml-prod", "server");
  EXPECT_EQ(prod["status"]["summary"]["applied"], "-");
  for (const json& c : prod["status"]["conditions"]) {
    if (c["type"] == "Applied") {
      EXPECT_EQ(c["status"], "False");
    }
  }
  EXPECT_EQ(prod["status"]["recommendation"]["containerRecommendations"][0]["applyMode"],
            "Report (production namespace: never applied)");
  EXPECT_EQ(dev["status"]["recommendation"]["containerRecommendations"][0]["applyMode"], "Auto");
  EXPECT_EQ(EventReasons("ml-dev"), (std::vector<std::string>{"GpuvpaDryRun", "GpuvpaApplied"}));
  EXPECT_TRUE(EventReasons("ml-prod").empty());
  // Ledger: the dry run and the applied change; realised savings = $6.88/h x 730 h x 3/4.
  const v1::Recommendation r = Rec("ml-dev", "server");
  EXPECT_TRUE(LedgerHas(ApplyRowId(r, "nvidia.com/mig-1g.20gb=1", "dry-run")));
  EXPECT_TRUE(LedgerHas(ApplyRowId(r, "nvidia.com/mig-1g.20gb=1", "applied")));
  Showback sb = Ledger();
  EXPECT_EQ(sb.total.savings_realised_monthly, 6'880'000LL * 730 * 3 / 4);
  // The applied proposal is no longer "proposed"; production's still is.
  EXPECT_EQ(sb.total.savings_proposed_monthly, 6'880'000LL * 730 * 3 / 4);
  // The owner reports, the probes and the metrics.
  for (const char* f : {"report.html", "report.md", "report.json", "report.csv"})
    EXPECT_TRUE(std::filesystem::exists(reports + "/" + f)) << f;
  EXPECT_EQ(d->HandleHttp("/readyz").status, 200);
  EXPECT_EQ(d->HandleHttp("/healthz").status, 200);
  const std::string metrics = d->HandleHttp("/metrics").body;
  EXPECT_NE(metrics.find("gpuvpa_updater_changes_applied_total 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpuvpa_updater_leader 1"), std::string::npos) << metrics;
  // A second cycle finds the change made: nothing new is patched.
  cluster_.api().ClearRequests();
  s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 0u);
  for (const auto& req : cluster_.api().requests())
    EXPECT_FALSE(req.method == "PATCH" && req.path.find("/deployments/") != std::string::npos)
        << req.path;
}

// The report-only install: --max-mode=Report caps every GVPA (Auto included) and the policy
// (default Auto); the updater still plans, reports and writes GVPA status, and sends no write
// of any kind to a workload, even with a token allowed everything. With the report-only
// overlay's own RBAC (no write verb on workloads) the same cycle has no failure.
TEST_F(UpdaterKubeTest, MaxModeReportSendsZeroWritesToWorkloadsWhateverTheGvpaSays) {
  Seed("ml-dev", {}, "second", "");  // no GVPA: the policy's default (Auto) applies
  WriteRecs(recs_path_,
            {Rec("ml-dev", "server"), Rec("ml-dev", "second"), Rec("ml-prod", "server")});
  int rc = 0;
  std::string warnings;
  const std::string rendered = KubeTestCluster::Kustomize(
      std::string(GPUVPA_SOURCE_DIR) + "/deploy/kubernetes/overlays/report-only", &rc, &warnings);
  ASSERT_EQ(rc, 0) << warnings;
  cluster_.api().AddUser("report-only-token",
                         KubeTestCluster::UserFromRendered(rendered, "gpuvpa-updater"));
  for (const std::string& token :
       {std::string(testing::kAdminToken), std::string("report-only-token")}) {
    UpdaterPolicy policy;
    policy.default_mode = UpdateMode::kAuto;
    policy.max_mode = UpdateMode::kReport;
    auto d = Daemon(token, policy);
    // Each install starts from GVPAs without a status, so that each is seen writing it.
    for (const char* ns : {"ml-dev", "ml-prod"}) {
      json g = cluster_.api().Get("gpuverticalpodautoscalers", ns, "server");
      g.erase("status");
      cluster_.api().Seed(g);
    }
    cluster_.api().ClearRequests();
    const double t0 = UnixNowSeconds();
    for (int cycle = 0; cycle < 2; ++cycle) {
      Result<CycleSummary> s = d->RunCycle(t0 + 60 * cycle);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_EQ(s->gvpas, 2u);
      EXPECT_EQ(s->planned, 3u) << token;
      EXPECT_EQ(s->applied, 0u) << token;
      EXPECT_EQ(s->failed, 0u) << token << ": " << ::testing::PrintToString(s->messages);
    }
    int workload_writes = 0, status_writes = 0;
    for (const auto& r : cluster_.api().requests()) {
      if (r.method == "GET") continue;
      if (r.path.find("/deployments") != std::string::npos ||
          r.path.find("/statefulsets") != std::string::npos)
        ++workload_writes;
      if (r.path.find("gpuverticalpodautoscalers") != std::string::npos) ++status_writes;
    }
    EXPECT_EQ(workload_writes, 0) << token;
    // Written in the first cycle; the second finds nothing changed and writes nothing.
    EXPECT_EQ(status_writes, 2) << token << ": the GVPAs' status is still written, once";
    // Proposed savings accrue over the minute the plan stood: three H100 -> MIG 1g.20gb
    // proposals of $6.88/h x 3/4 each.
    const std::string metrics = d->HandleHttp("/metrics").body;
    const std::string series =
        "gpuvpa_cost_usd_total{cost_center=\"team\",kind=\"proposed_savings\"} ";
    ASSERT_NE(metrics.find(series), std::string::npos) << metrics;
    EXPECT_NEAR(std::stod(metrics.substr(metrics.find(series) + series.size())),
                3 * 6.88 * 0.75 * 60 / 3600, 1e-5);
    EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
    EXPECT_EQ(Limits("ml-dev", "second"), (json{{"nvidia.com/gpu", "1"}}));
    const json dev = cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev", "server");
    EXPECT_EQ(dev["status"]["summary"]["action"], "mig_profile") << "still planned";
    EXPECT_EQ(dev["status"]["summary"]["applied"], "-");
    EXPECT_NE(dev["status"]["recommendation"]["containerRecommendations"][0]["applyMode"]
                  .get<std::string>()
                  .find("Report"),
              std::string::npos)
        << dev["status"];
  }
  EXPECT_TRUE(EventReasons("ml-dev").empty()) << "no dry run, no change";
}

// The owner reports where people look: /reports/ on the updater's HTTP port (its Service),
// an index by cost center and namespace, each report in every format; what a previous
// container wrote is served after a restart, before any cycle; nothing else is readable.
TEST_F(UpdaterKubeTest, ReportsAreServedUnderReportsByCostCenterAndNamespaceAcrossRestarts) {
  const std::string reports = cluster_.dir().Path("reports");
  {
    auto d = Daemon(kUpdaterToken, {}, {}, reports);
    EXPECT_EQ(d->HandleHttp("/reports/").status, 404) << "nothing written yet";
    ASSERT_TRUE(d->RunCycle(UnixNowSeconds()).ok());
    const HttpServerResponse index = d->HandleHttp("/reports/");
    ASSERT_EQ(index.status, 200) << index.body;
    EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
    for (const char* link : {"cost-center/team.html", "cost-center/team.md", "namespace/ml-dev.csv",
                             "namespace/ml-prod.json", "report.html"})
      EXPECT_NE(index.body.find(std::string("href=\"") + link + "\""), std::string::npos) << link;
    EXPECT_EQ(d->HandleHttp("/reports").status, 200);
  }
  // A new container (the same folder): served before its first cycle.
  auto d = Daemon(kUpdaterToken, {}, {}, reports);
  for (const auto& [path, type] : std::vector<std::pair<std::string, std::string>>{
           {"/reports/report.md", "text/markdown; charset=utf-8"},
           {"/reports/cost-center/team.html", "text/html; charset=utf-8"},
           {"/reports/namespace/ml-dev.csv", "text/csv; charset=utf-8"},
           {"/reports/namespace/ml-prod.json", "application/json"}}) {
    const HttpServerResponse r = d->HandleHttp(path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.content_type, type) << path;
  }
  const std::string dev = d->HandleHttp("/reports/namespace/ml-dev.json").body;
  EXPECT_NE(dev.find("\"ml-dev\""), std::string::npos);
  EXPECT_EQ(dev.find("\"ml-prod\""), std::string::npos) << "a namespace's report holds only it";
  std::ofstream(cluster_.dir().Path("secret.txt")) << "not a report";
  for (const char* path :
       {"/reports/../secret.txt", "/reports/..%2Fsecret.txt", "/reports/namespace/../../secret.txt",
        "/reports/.hidden.html", "/reports/other.html", "/reports/namespace/x.sh",
        "/reports//etc/passwd"})
    EXPECT_EQ(d->HandleHttp(path).status, 404) << path;
}

TEST_F(UpdaterKubeTest, RateLimitAndOptOutAnnotationHoldChangesBack) {
  Seed("ml-dev", {}, "second");
  Seed("ml-dev", {}, "third");
  json w = cluster_.api().Get("deployments", "ml-dev", "third");
  cluster_.api().Delete("deployments", "ml-dev", "third");
  w["metadata"]["annotations"]["gpuvpa.io/opt-out"] = "true";
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "generation"})
    w["metadata"].erase(k);
  cluster_.api().Seed(w);
  WriteRecs(recs_path_, {Rec("ml-dev", "server"), Rec("ml-dev", "second"), Rec("ml-dev", "third")});
  ChangeLimits one;
  one.per_namespace_per_hour = 1;
  auto d = Daemon(kUpdaterToken, {}, one);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 1u);
  const std::string all = ::testing::PrintToString(s->messages);
  EXPECT_NE(all.find("rate limit: 1 changes in namespace ml-dev in the last hour"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("opted out"), std::string::npos) << all;
  EXPECT_EQ(Limits("ml-dev", "third"), (json{{"nvidia.com/gpu", "1"}}));
  // An hour later the budget is back (the opted-out workload still stays).
  s = d->RunCycle(UnixNowSeconds() + 3601);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 1u) << ::testing::PrintToString(s->messages);
  EXPECT_EQ(Limits("ml-dev", "third"), (json{{"nvidia.com/gpu", "1"}}));
}

// The recommender's gRPC API as the source, over a real socket; a recommender that is down
// fails the cycle (UNAVAILABLE, not ready) instead of planning from nothing.
class FixedRecommendations final : public v1::RecommendationService::Service {
 public:
  explicit FixedRecommendations(std::vector<v1::Recommendation> recs) : recs_(std::move(recs)) {}
  // Charts only to a reader that asks for them, as the recommender's service does.
  grpc::Status List(grpc::ServerContext*, const v1::ListRecommendationsRequest* request,
                    v1::ListRecommendationsResponse* out) override {
    for (const auto& r : recs_) {
      v1::Recommendation* added = out->add_recommendations();
      *added = r;
      if (!request->include_charts()) added->clear_charts();
    }
    return grpc::Status::OK;
  }

 private:
  std::vector<v1::Recommendation> recs_;
};

TEST_F(UpdaterKubeTest, RecommendationsFromTheRecommendersGrpcApi) {
  FixedRecommendations service({Rec("ml-dev", "server"), Rec("ml-prod", "server")});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  auto d = Daemon(kUpdaterToken, {}, {}, "", "127.0.0.1:" + std::to_string(port));
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->applied, 1u);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
  server->Shutdown();
  server.reset();
  s = d->RunCycle(UnixNowSeconds());
  ASSERT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().ToString();
  EXPECT_NE(s.status().message().find("recommender 127.0.0.1:"), std::string::npos);
  EXPECT_EQ(d->HandleHttp("/readyz").status, 503);
}

// The live reports draw the charts that came with the recommendations; what arrives over gRPC
// passes the same checks as a recommendations file.
TEST_F(UpdaterKubeTest, LiveReportsDrawTheChartsOfRecommendationsFromGrpc) {
  v1::Recommendation dev = Rec("ml-dev", "server");
  v1::WorkloadCharts* charts = dev.mutable_charts();
  v1::ChartBar* bar = charts->add_vram();
  bar->set_from(9.0e9);
  bar->set_to(9.5e9);
  bar->set_weight(1);
  bar = charts->add_sm();
  bar->set_from(0.30);
  bar->set_to(0.31);
  bar->set_weight(1);
  charts->set_latest_hour(static_cast<int64_t>(UnixNowSeconds() / 3600));
  for (int h = 0; h < 168; ++h) {
    charts->add_hourly_samples(60);
    charts->add_hourly_active(h % 2 == 0 ? 60 : 0);
  }
  auto serve = [](FixedRecommendations& service, int& port) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    return builder.BuildAndStart();
  };
  FixedRecommendations service({dev});
  int port = 0;
  std::unique_ptr<grpc::Server> server = serve(service, port);
  ASSERT_NE(port, 0);
  const std::string reports = cluster_.dir().Path("live-reports");
  auto d = Daemon(kUpdaterToken, {}, {}, reports, "127.0.0.1:" + std::to_string(port));
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::string html = *ReadWholeFile(reports + "/report.html");
  EXPECT_NE(html.find("<div class=\"charts\">"), std::string::npos);
  EXPECT_NE(html.find("VRAM peaks per hour"), std::string::npos);
  const json report = json::parse(*ReadWholeFile(reports + "/report.json"));
  const json& w = report["cost_centers"][0]["namespaces"][0]["workloads"][0];
  ASSERT_TRUE(w.contains("charts")) << w.dump();
  EXPECT_EQ(w["charts"]["hourly_active_ratio"].size(), 168u);
  EXPECT_EQ(w["charts"]["hourly_active_ratio"][166], 1.0);
  EXPECT_EQ(w["charts"]["hourly_active_ratio"][167], 0.0);
  server->Shutdown();

  // An impossible figure from the recommender is refused, naming the field and the value.
  v1::Recommendation impossible = Rec("ml-dev", "server");
  impossible.set_vram_target_bytes(5e14);
  FixedRecommendations bad_service({impossible});
  std::unique_ptr<grpc::Server> bad = serve(bad_service, port);
  auto d2 = Daemon(kUpdaterToken, {}, {}, "", "127.0.0.1:" + std::to_string(port));
  s = d2->RunCycle(UnixNowSeconds());
  ASSERT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find("recommendations[0].vram_target_bytes: "), std::string::npos)
      << s.status().message();
  EXPECT_EQ(d2->HandleHttp("/readyz").status, 503);
  bad->Shutdown();
}

// With recommender shards the updater asks every shard: each answers for its own workloads,
// and one that does not answer fails the cycle (nothing is planned on half a fleet).
TEST_F(UpdaterKubeTest, RecommendationsComeFromEveryShard) {
  FixedRecommendations first({Rec("ml-dev", "server")});
  FixedRecommendations second({Rec("ml-prod", "server")});
  std::vector<std::unique_ptr<grpc::Server>> servers;
  std::vector<int> ports(2, 0);
  for (int i = 0; i < 2; ++i) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &ports[i]);
    builder.RegisterService(i == 0 ? &first : &second);
    servers.push_back(builder.BuildAndStart());
  }
  const std::string both =
      "127.0.0.1:" + std::to_string(ports[0]) + ",127.0.0.1:" + std::to_string(ports[1]);
  const std::string reports = cluster_.dir().Path("shard-reports");
  auto d = Daemon(kUpdaterToken, {}, {}, reports, both);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::string json_report = *ReadWholeFile(reports + "/report.json");
  EXPECT_NE(json_report.find("\"ml-dev\""), std::string::npos) << "the first shard's workload";
  EXPECT_NE(json_report.find("\"ml-prod\""), std::string::npos) << "the second shard's workload";
  servers[1]->Shutdown();
  auto d2 = Daemon(kUpdaterToken, {}, {}, "", both);
  s = d2->RunCycle(UnixNowSeconds());
  ASSERT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().ToString();
  EXPECT_NE(s.status().message().find(std::to_string(ports[1])), std::string::npos)
      << s.status().message();
  servers[0]->Shutdown();
}

// A fleet's recommendations with their charts are larger than gRPC's 4 MiB default answer.
TEST_F(UpdaterKubeTest, AFleetsRecommendationsWithChartsAreTakenBeyondFourMiB) {
  std::vector<v1::Recommendation> fleet;
  for (int i = 0; i < 2500; ++i) {
    v1::Recommendation r = Rec("bulk", "server-" + std::to_string(i));
    v1::WorkloadCharts* c = r.mutable_charts();
    for (int b = 0; b < 60; ++b) {
      v1::ChartBar* bar = c->add_vram();
      bar->set_from(1e9 + b * 1e8);
      bar->set_to(1e9 + (b + 1) * 1e8);
      bar->set_weight(1.0 / 60);
    }
    c->set_latest_hour(static_cast<int64_t>(UnixNowSeconds() / 3600));
    for (int h = 0; h < 168; ++h) {
      c->add_hourly_samples(60);
      c->add_hourly_active(h % 60);
    }
    fleet.push_back(std::move(r));
  }
  size_t bytes = 0;
  for (const v1::Recommendation& r : fleet) bytes += r.ByteSizeLong();
  ASSERT_GT(bytes, 4u << 20);
  FixedRecommendations service(std::move(fleet));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  UpdaterPolicy policy;
  policy.namespace_modes["bulk"] = UpdateMode::kOff;  // taken and validated, nothing planned
  auto d = Daemon(kUpdaterToken, policy, {}, cluster_.dir().Path("bulk-reports"),
                  "127.0.0.1:" + std::to_string(port));
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  server->Shutdown();
}

TEST_F(UpdaterKubeTest, ConflictsAreReReadAndRetried) {
  cluster_.api().InterposeWrites("deployments", 2);
  auto d = Daemon();
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 1u) << ::testing::PrintToString(s->messages);
  int conflicts = 0;
  for (const auto& r : cluster_.api().requests()) conflicts += r.status == 409;
  EXPECT_EQ(conflicts, 2);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
  // The other writer's change survived the retry.
  EXPECT_TRUE(cluster_.api().Get("deployments", "ml-dev", "server")["metadata"]["labels"].contains(
      "interposed-writer"));
}

TEST_F(UpdaterKubeTest, ForbiddenPatchIsReportedWithVerbAndResource) {
  testing::KubeUser user = UpdaterUser();
  user.rules[0].verbs = {"get", "list", "watch"};  // no patch on workloads
  cluster_.api().AddUser("no-patch", user);
  auto d = Daemon("no-patch");
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 0u);
  EXPECT_EQ(s->failed, 1u);
  const std::string all = ::testing::PrintToString(s->messages);
  EXPECT_NE(all.find("cannot patch resource \\\"deployments\\\" in API group \\\"apps\\\" in the "
                     "namespace \\\"ml-dev\\\""),
            std::string::npos)
      << all;
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
  EXPECT_TRUE(LedgerHas(ApplyRowId(Rec("ml-dev", "server"), "nvidia.com/mig-1g.20gb=1", "failed")));
  EXPECT_EQ(EventReasons("ml-dev"), (std::vector<std::string>{"GpuvpaApplyFailed"}));
  EXPECT_EQ(Ledger().total.savings_realised_monthly, 0);
}

TEST_F(UpdaterKubeTest, CudaOomAfterAChangeRollsBackWithABumpAndWaitsForNewEvidence) {
  auto d = Daemon();
  ASSERT_EQ(d->RunCycle(UnixNowSeconds())->applied, 1u);
  // The new pod dies with a CUDA OOM.
  json pod = KubeTestCluster::Pod("ml-dev", "server-7d9f", "server", "main");
  pod["status"]["containerStatuses"][0]["restartCount"] = 1;
  pod["status"]["containerStatuses"][0]["lastState"] = {
      {"terminated",
       {{"exitCode", 1},
        {"reason", "Error"},
        {"message", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}}}};
  cluster_.api().Seed(pod);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rolled_back, 1u) << ::testing::PrintToString(s->messages);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
  const json w = cluster_.api().Get("deployments", "ml-dev", "server");
  EXPECT_FALSE(w["metadata"]["annotations"].contains(kAppliedChangeAnnotation));
  EXPECT_TRUE(w["metadata"]["annotations"].contains(kRolledBackAnnotation));
  const json g = cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev", "server");
  // The bump: the recommender's OOM rule over 1g.20gb's usable 19968 MB.
  const double floor = VramAfterCudaOom(19968.0 * 1024 * 1024);
  EXPECT_EQ(g["status"]["rollback"]["vramFloor"], FormatQuantityBytes(floor));
  bool rolled_back_condition = false;
  for (const json& c : g["status"]["conditions"])
    if (c["type"] == "RolledBack") rolled_back_condition = c["status"] == "True";
  EXPECT_TRUE(rolled_back_condition);
  EXPECT_EQ(EventReasons("ml-dev").back(), "GpuvpaRolledBack");
  // Savings realised net of the rollback: zero.
  EXPECT_EQ(Ledger().total.savings_realised_monthly, 0);
  // The same evidence: no new attempt.
  s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 0u);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
  // A day more of history: a change again, above the floor (1g.20gb no longer qualifies).
  WriteRecs(recs_path_, {Rec("ml-dev", "server", 8 * 86400 + 60), Rec("ml-prod", "server")});
  s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->applied, 1u) << ::testing::PrintToString(s->messages);
  const json limits = Limits("ml-dev");
  ASSERT_EQ(limits.size(), 1u);
  const std::string resource = limits.begin().key();
  EXPECT_EQ(resource, "nvidia.com/mig-3g.40gb") << limits;  // 40192 MB >= the floor
}

TEST_F(UpdaterKubeTest, CrashLoopBackOffAfterAChangeRollsBack) {
  auto d = Daemon();
  ASSERT_EQ(d->RunCycle(UnixNowSeconds())->applied, 1u);
  json pod = KubeTestCluster::Pod("ml-dev", "server-5c8b", "server", "main");
  pod["status"]["containerStatuses"][0]["state"] = {
      {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 40s restarting"}}}};
  cluster_.api().Seed(pod);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rolled_back, 1u) << ::testing::PrintToString(s->messages);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
  const std::string all = ::testing::PrintToString(s->messages);
  EXPECT_NE(all.find("CrashLoopBackOff"), std::string::npos) << all;
}

TEST_F(UpdaterKubeTest, PodsOlderThanTheChangeDoNotRollItBack) {
  json old_pod = KubeTestCluster::Pod("ml-dev", "server-old", "server", "main");
  old_pod["status"]["containerStatuses"][0]["lastState"] = {
      {"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}}}};
  cluster_.api().Seed(old_pod);
  auto d = Daemon();
  // The change happens (in the double's clock) two seconds after the old pod was created.
  ASSERT_EQ(d->RunCycle(UnixNowSeconds() + 2)->applied, 1u);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds() + 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rolled_back, 0u) << ::testing::PrintToString(s->messages);
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
}

// A production namespace as the product defines it, written here independently of the policy
// code: label environment in {production, prod, prd} (any case), or a name with one of the
// words prod, production, prd (each maybe followed by digits) between dashes.
bool IsProduction(const std::string& ns, const std::string& environment) {
  std::string env = environment;
  for (char& c : env) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (env == "production" || env == "prod" || env == "prd") return true;
  std::stringstream parts(ns);
  for (std::string part; std::getline(parts, part, '-');) {
    while (!part.empty() && std::isdigit(static_cast<unsigned char>(part.back()))) part.pop_back();
    if (part == "prod" || part == "production" || part == "prd") return true;
  }
  return false;
}

TEST_F(UpdaterKubeTest, ProductionIsNeverPatchedOverAThousandRandomWorkloadsAndPolicies) {
  std::mt19937 rng(20261203);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> shapes = {"prod-", "", "team-", "ml-", "production-x"};
  const std::vector<std::string> tails = {"-prod", "-production", "-dev", "-staging", ""};
  UpdaterPolicy policy;
  std::map<std::string, std::string> environment;
  std::vector<v1::Recommendation> recs;
  for (int n = 0; n < 100; ++n) {
    std::string ns = pick(shapes) + "ns" + std::to_string(n) + pick(tails);
    if (n == 0) ns = "prod";
    if (n == 1) ns = "production";
    const std::string env = pick({"production", "prod", "dev", "staging", ""});
    environment[ns] = env;
    json labels = json::object();
    if (!env.empty()) labels["environment"] = env;
    cluster_.api().Seed(KubeTestCluster::Namespace(ns, labels));
    // The policy file may even say Auto for a production namespace: it must not matter.
    policy.namespace_modes[ns] = static_cast<UpdateMode>(rng() % 3);
    for (int w = 0; w < 10; ++w) {
      const std::string name = "w" + std::to_string(w);
      const std::string mode = rng() % 4 == 0 ? "" : pick({"Off", "Report", "Auto", "Auto"});
      Seed(ns, labels, name, mode);
      recs.push_back(Rec(ns, name));
    }
  }
  WriteRecs(recs_path_, recs);
  ChangeLimits unlimited;
  unlimited.per_cluster_per_hour = 1000000;
  unlimited.per_namespace_per_hour = 1000000;
  auto d = Daemon(testing::kAdminToken, policy, unlimited);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->failed, 0u) << ::testing::PrintToString(s->messages);
  size_t patched_non_production = 0, production_workloads = 0;
  for (const auto& [ns, env] : environment) {
    for (int w = 0; w < 10; ++w) {
      const json limits = Limits(ns, "w" + std::to_string(w));
      const bool patched = !limits.contains("nvidia.com/gpu");
      if (IsProduction(ns, env)) {
        ++production_workloads;
        EXPECT_FALSE(patched) << ns << "/w" << w << " is production";
      } else {
        patched_non_production += patched;
      }
    }
  }
  for (const auto& r : cluster_.api().requests())
    if (r.method == "PATCH" && r.path.find("/deployments/") != std::string::npos) {
      const std::string ns = r.path.substr(r.path.find("/namespaces/") + 12);
      const std::string name = ns.substr(0, ns.find('/'));
      EXPECT_FALSE(IsProduction(name, environment[name])) << r.path << "?" << r.query;
    }
  // The property is not vacuous: both kinds are present and changes did happen elsewhere.
  EXPECT_GT(production_workloads, 200u);
  EXPECT_GT(patched_non_production, 50u);
  EXPECT_EQ(s->applied, patched_non_production);
}

TEST_F(UpdaterKubeTest, TwoProcessesOnlyTheLeaseHolderActsAndTheOtherTakesOver) {
  const std::string kubeconfig = cluster_.Kubeconfig(kUpdaterToken, "updater.yaml");
  auto start = [&](const std::string& identity) {
    return testing::SpawnProcess(
        {std::string(GPUVPA_BIN_DIR) + "/gpuvpa-updater", "--kubeconfig", kubeconfig,
         "--recommendations", recs_path_, "--ledger", cluster_.dir().Path(identity + ".db"),
         // A cycle interval longer than the lease: the renewal must not wait for the cycle.
         "--identity", identity, "--interval", "4", "--lease-duration", "3", "--log-level", "warn"},
        cluster_.dir().Path(identity + ".log"));
  };
  pid_t a = start("updater-a");
  pid_t b = start("updater-b");
  auto holder = [&] {
    const json lease = cluster_.api().Get("leases", "gpuvpa", "gpuvpa-updater");
    return lease.is_null() ? std::string() : lease["spec"].value("holderIdentity", "");
  };
  auto wait_for = [](const std::function<bool()>& done, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return !holder().empty(); }, 20));
  const std::string first = holder();
  ASSERT_TRUE(wait_for([&] { return Limits("ml-dev").contains("nvidia.com/mig-1g.20gb"); }, 20));
  // Let both run a few more cycles: the standby must do nothing.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  auto event_hosts = [&] {
    std::set<std::string> hosts;
    for (const json& e : cluster_.api().List("events", "ml-dev")) hosts.insert(e["source"]["host"]);
    return hosts;
  };
  EXPECT_EQ(event_hosts(), (std::set<std::string>{first}));
  std::set<std::string> status_writers;
  for (const auto& r : cluster_.api().requests())
    if (r.method == "PATCH" && r.path.find("/status") != std::string::npos)
      status_writers.insert(r.user);
  EXPECT_EQ(status_writers.size(), 1u);
  // One holder all along: the lease never lapsed between cycles.
  EXPECT_EQ(cluster_.api().Get("leases", "gpuvpa", "gpuvpa-updater")["spec"]["leaseTransitions"],
            0);
  EXPECT_EQ(holder(), first);
  // The leader dies without giving the lease up.
  pid_t& leader = first == "updater-a" ? a : b;
  const std::string second = first == "updater-a" ? "updater-b" : "updater-a";
  const auto killed = std::chrono::steady_clock::now();
  testing::KillProcess(leader);
  ASSERT_TRUE(wait_for([&] { return holder() == second; }, 10));
  const double takeover_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  // Within the lease duration (3 s) plus one standby check (a third of it) and the poll here.
  EXPECT_LT(takeover_s, 3 + 1 + 0.5) << takeover_s;
  std::cout << "takeover after " << takeover_s << " s\n";
  // The new leader acts: a workload added now is changed by it.
  Seed("ml-dev", {}, "second");
  WriteRecs(recs_path_,
            {Rec("ml-dev", "server"), Rec("ml-prod", "server"), Rec("ml-dev", "second")});
  ASSERT_TRUE(
      wait_for([&] { return Limits("ml-dev", "second").contains("nvidia.com/mig-1g.20gb"); }, 20));
  std::set<std::string> second_hosts;
  for (const json& e : cluster_.api().List("events", "ml-dev"))
    if (e["involvedObject"]["name"] == "second") second_hosts.insert(e["source"]["host"]);
  EXPECT_EQ(second_hosts, (std::set<std::string>{second}));
  pid_t& other = first == "updater-a" ? b : a;
  ::kill(other, SIGTERM);
  int status = 0;
  ::waitpid(other, &status, 0);
  other = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // A clean stop gives the lease up.
  EXPECT_EQ(holder(), "");
}

// The demo fleet (README command 1) through gpuvpa-updater, seen the way an engineer sees it:
// `kubectl get gvpa -A -o wide` against the double. chat and fraud are production namespaces.
TEST_F(UpdaterKubeTest, DemoFleetAsKubectlGetGvpaShowsIt) {
  for (const char* ns : {"ml-dev", "ml-prod"}) {
    cluster_.api().Delete("gpuverticalpodautoscalers", ns, "server");
    cluster_.api().Delete("deployments", ns, "server");
  }
  const std::string trace = cluster_.dir().Path("demo.csv");
  const std::string bin = GPUVPA_BIN_DIR;
  ASSERT_EQ(std::system((bin + "/gpuvpa demo-trace --out '" + trace + "' >/dev/null").c_str()), 0);
  ASSERT_EQ(std::system((bin + "/gpuvpa recommend --trace '" + trace + "' --format json > '" +
                         recs_path_ + "' 2>/dev/null")
                            .c_str()),
            0);
  std::ifstream in(recs_path_);
  std::stringstream text;
  text << in.rdbuf();
  Result<std::vector<v1::Recommendation>> recs = ParseRecommendationsJson(text.str());
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 7u);
  for (const v1::Recommendation& r : *recs) {
    const v1::WorkloadIdentity& id = r.identity();
    const std::string ns = id.namespace_name();
    if (cluster_.api().Get("namespaces", "", ns).is_null()) {
      const bool prod = ns == "chat" || ns == "fraud";
      cluster_.api().Seed(
          KubeTestCluster::Namespace(ns, {{"environment", prod ? "production" : "dev"}}));
    }
    const GpuResourceRequest request = ResourceRequestOf(*ParseGpuAllocation(id.allocation()));
    cluster_.api().Seed(KubeTestCluster::Workload(id.owner_kind(), ns, id.owner_name(),
                                                  id.container(), request.name, request.quantity));
    cluster_.api().Seed(
        KubeTestCluster::Gvpa(ns, id.owner_name(), id.owner_kind(), id.owner_name(), "Auto"));
  }
  ChangeLimits limits;
  limits.per_cluster_per_hour = 100;
  auto d = Daemon(kUpdaterToken, {}, limits);
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->failed, 0u) << ::testing::PrintToString(s->messages);
  int rc;
  const std::string table = cluster_.Kubectl("get gvpa -A -o wide", &rc);
  ASSERT_EQ(rc, 0) << table;
  std::cout << "$ kubectl get gvpa -A -o wide\n" << table;
  for (const v1::Recommendation& r : *recs) {
    EXPECT_NE(table.find(r.identity().owner_name()), std::string::npos) << table;
    const json g = cluster_.api().Get("gpuverticalpodautoscalers", r.identity().namespace_name(),
                                      r.identity().owner_name());
    const std::string ns = r.identity().namespace_name();
    // Production namespaces are reported, never changed.
    if (ns == "chat" || ns == "fraud") {
      EXPECT_EQ(g["status"]["summary"]["applied"], "-") << ns;
    }
  }
  EXPECT_GT(s->applied, 0u);
}

// Namespace shapes for the production guard: label keys and values in every spelling, labels of
// the wrong JSON type (read as production: fail closed), names with the words prod, production
// and prd, and near misses that are not production.
struct NamespaceShape {
  std::string name;
  json labels;
  bool production;
};

std::vector<NamespaceShape> NamespaceShapes() {
  return {
      {"team-a", {{"environment", "production"}}, true},
      {"team-b", {{"environment", "Production"}}, true},
      {"team-c", {{"environment", "PROD"}}, true},
      {"team-d", {{"env", "production"}}, true},
      {"team-e", {{"Environment", "prod"}}, true},
      {"team-f", {{"tier", "prd"}}, true},
      {"team-g", {{"env", "Prd"}}, true},
      {"team-h", {{"ENV", "PRODUCTION"}}, true},
      {"team-i", {{"environment", json::array({"production"})}}, true},
      {"team-j", {{"env", 1}}, true},
      {"team-k", {{"tier", json::object()}}, true},
      {"team-l", {{"environment", nullptr}}, true},
      {"team-m", {{"environment", true}}, true},
      {"team-n", {{"environment", json::array({"dev"})}}, true},
      {"team-o", {{"environment", "dev"}, {"tier", "prod"}}, true},
      {"prod", {}, true},
      {"production", {}, true},
      {"prd", {}, true},
      {"prod-eu", {}, true},
      {"production-eu", {}, true},
      {"prd-pay", {}, true},
      {"payments-prod", {}, true},
      {"eu-production", {}, true},
      {"pay-prd", {}, true},
      {"eu-prod-2", {}, true},
      {"prod2", {}, true},
      {"prd01-x", {}, true},
      {"a-prod-b", {}, true},
      {"ml-prod3-b", {{"environment", "dev"}}, true},
      {"dev", {}, false},
      {"staging", {{"environment", "staging"}}, false},
      {"prodigy", {}, false},
      {"nonprod", {}, false},
      {"reproduce", {}, false},
      {"products", {}, false},
      {"ml-dev2", {{"environment", "dev"}}, false},
      {"team-p", {{"env", "development"}}, false},
      {"team-q", {{"owner", "production"}}, false},
      {"team-r", {{"environment", "preprod"}}, false},
      {"team-s", {{"tier", "frontend"}}, false},
      {"team-t", {{"unrelated", json::array()}}, false},
      {"prdx", {}, false},
      {"sprod", {}, false},
      {"team-u", {}, false},
  };
}

// What the test writes into the change-key file, and an applied-change annotation of a change
// made a minute ago from one whole GPU to MIG 1g.20gb, signed under `key`.
const std::string kChangeKey(48, 'k');

AppliedChange MinuteOldChange(const std::string& ns, const std::string& name) {
  AppliedChange c;
  c.id = "apply:" + ns + "/Deployment/" + name + "/main:test";
  c.container = "main";
  c.from_allocation = "nvidia.com/gpu=1";
  c.to_allocation = "nvidia.com/mig-1g.20gb=1";
  c.from_model = c.to_model = "H100-80GB";
  c.applied_at_s = UnixNowSeconds() - 60;
  c.to_vram_capacity_bytes = 19968.0 * 1024 * 1024;
  c.monthly_before = 5'022'400'000;
  c.monthly_after = 1'255'600'000;
  c.cost_center = "team";
  c.previous_resources = {{"limits", {{"nvidia.com/gpu", "1"}}},
                          {"requests", {{"nvidia.com/gpu", "1"}}}};
  c.previous_node_selector = nullptr;
  return c;
}

// Writes of any kind (dry runs included) the double saw to workloads of namespace `ns`.
std::vector<std::string> WorkloadWrites(const testing::KubeApiDouble& api, const std::string& ns,
                                        const std::string& name = "") {
  std::vector<std::string> writes;
  for (const auto& r : api.requests()) {
    if (r.method == "GET") continue;
    for (const char* kind : {"/deployments/", "/statefulsets/"}) {
      const std::string prefix = "/apis/apps/v1/namespaces/" + ns + kind + name;
      if (r.path.starts_with(prefix))
        writes.push_back(r.method +
                         (r.query.find("dryRun=All") != std::string::npos ? " dry-run" : "") + " " +
                         r.path + " " + std::to_string(r.status));
    }
  }
  return writes;
}

class ProductionGuardTest : public UpdaterKubeTest {
 protected:
  void SetUp() override {
    UpdaterKubeTest::SetUp();
    change_key_file_ = cluster_.dir().Path("change.key");
    std::ofstream(change_key_file_) << kChangeKey << "\n";
  }

  // A Deployment the updater changed a minute ago (annotation `change`, limits at the MIG
  // slice), its GVPA in `mode`, and a new pod of it in CrashLoopBackOff: a rollback is due.
  void SeedFailedChange(const std::string& ns, const std::string& name, const json& annotation,
                        const std::string& mode = "Auto") {
    json w =
        KubeTestCluster::Workload("Deployment", ns, name, "main", "nvidia.com/mig-1g.20gb", "1");
    w["metadata"]["annotations"][kAppliedChangeAnnotation] = annotation.dump();
    cluster_.api().Seed(w);
    cluster_.api().Seed(KubeTestCluster::Gvpa(ns, name, "Deployment", name, mode));
    json pod = KubeTestCluster::Pod(ns, name + "-5c8b", name, "main");
    pod["status"]["containerStatuses"][0]["state"] = {
        {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 40s restarting"}}}};
    cluster_.api().Seed(pod);
  }

  ChangeLimits Unlimited() {
    ChangeLimits limits;
    limits.per_cluster_per_hour = 1000000;
    limits.per_namespace_per_hour = 1000000;
    return limits;
  }
};

// Every shape through apply (an Auto GVPA with a change to make) and rollback (a failed change
// with a valid signature): zero writes in every production namespace, counted at the double;
// every non-production namespace is both patched and rolled back (the guard is not vacuous).
TEST_F(ProductionGuardTest, ZeroWritesInEveryProductionShapeThroughApplyAndRollback) {
  const std::vector<NamespaceShape> shapes = NamespaceShapes();
  ASSERT_GE(shapes.size(), 40u);
  std::vector<v1::Recommendation> recs;
  size_t production = 0;
  for (const NamespaceShape& shape : shapes) {
    // String labels are seeded; values of other JSON types are set raw before the first read
    // (the double, like the API, validates what is created).
    json strings = json::object();
    for (auto it = shape.labels.begin(); it != shape.labels.end(); ++it)
      if (it->is_string()) strings[it.key()] = *it;
    cluster_.api().Seed(KubeTestCluster::Namespace(shape.name, strings));
    if (strings.size() != shape.labels.size())
      cluster_.api().ChangeLabelsBeforeRequest("namespaces", 0, "namespaces", "", shape.name,
                                               shape.labels);
    Seed(shape.name, strings, "apply", "Auto");
    recs.push_back(Rec(shape.name, "apply"));
    SeedFailedChange(shape.name, "changed",
                     MinuteOldChange(shape.name, "changed").ToSignedJson(kChangeKey));
    production += shape.production;
  }
  WriteRecs(recs_path_, recs);
  auto d = Daemon(kUpdaterToken, {}, Unlimited());
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->failed, 0u) << ::testing::PrintToString(s->messages);
  for (const NamespaceShape& shape : shapes) {
    SCOPED_TRACE(shape.name + " " + shape.labels.dump());
    const std::vector<std::string> writes = WorkloadWrites(cluster_.api(), shape.name);
    if (shape.production) {
      EXPECT_TRUE(writes.empty()) << ::testing::PrintToString(writes);
      EXPECT_EQ(Limits(shape.name, "apply"), (json{{"nvidia.com/gpu", "1"}}));
      EXPECT_EQ(Limits(shape.name, "changed"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
    } else {
      EXPECT_EQ(writes.size(), 3u) << ::testing::PrintToString(writes);  // dry run, patch, undo
      EXPECT_EQ(Limits(shape.name, "apply"), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
      EXPECT_EQ(Limits(shape.name, "changed"), (json{{"nvidia.com/gpu", "1"}}));
    }
  }
  EXPECT_EQ(s->applied, shapes.size() - production);
  EXPECT_EQ(s->rolled_back, shapes.size() - production);
  // Each withheld rollback says why.
  std::string all;
  for (const std::string& m : s->messages) all += m + "\n";
  EXPECT_NE(all.find("team-i/changed: rollback due"), std::string::npos) << all;
  EXPECT_NE(all.find("label environment is not a string"), std::string::npos) << all;
}

// The label is read again immediately before each write: a namespace labelled production after
// the dry run was accepted, or during conflict retries, is not patched.
TEST_F(ProductionGuardTest, ANamespaceLabelledProductionBeforeThePatchIsNotPatched) {
  // After the dry run's Event, before the patch.
  cluster_.api().ChangeLabelsBeforeRequest("events", 0, "namespaces", "", "ml-dev",
                                           {{"environment", "Production"}});
  auto d = Daemon(kUpdaterToken, {}, Unlimited());
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->applied, 0u) << ::testing::PrintToString(s->messages);
  std::vector<std::string> writes = WorkloadWrites(cluster_.api(), "ml-dev");
  ASSERT_EQ(writes.size(), 1u) << ::testing::PrintToString(writes);
  EXPECT_TRUE(writes[0].starts_with("PATCH dry-run")) << writes[0];
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
  EXPECT_NE(::testing::PrintToString(s->messages).find("label environment=Production"),
            std::string::npos)
      << ::testing::PrintToString(s->messages);
}

TEST_F(ProductionGuardTest, ANamespaceLabelledProductionDuringConflictRetriesIsNotPatched) {
  // ml-dev's requests to deployments: the rollback check's read, the apply's read, its dry run
  // (answered 409: another writer came first); before the re-read, ml-dev becomes production.
  cluster_.api().InterposeWrites("deployments", 1);
  cluster_.api().ChangeLabelsBeforeRequest("deployments", 3, "namespaces", "", "ml-dev",
                                           {{"env", "PROD"}});
  auto d = Daemon(kUpdaterToken, {}, Unlimited());
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->applied, 0u) << ::testing::PrintToString(s->messages);
  const std::vector<std::string> writes = WorkloadWrites(cluster_.api(), "ml-dev");
  ASSERT_EQ(writes.size(), 1u) << ::testing::PrintToString(writes);
  EXPECT_NE(writes[0].find(" 409"), std::string::npos) << writes[0];
  EXPECT_EQ(Limits("ml-dev"), (json{{"nvidia.com/gpu", "1"}}));
}

// A rollback restores only what an updater signed, only in Auto.
TEST_F(ProductionGuardTest, RollbackRestoresOnlySignedValuesAndOnlyInAuto) {
  AppliedChange forged = MinuteOldChange("ml-dev", "forged");
  forged.previous_resources = {{"limits", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}}}};
  SeedFailedChange("ml-dev", "forged", forged.ToJson());  // no signature
  SeedFailedChange("ml-dev", "other-key",
                   MinuteOldChange("ml-dev", "other-key").ToSignedJson(std::string(40, 'x')));
  json edited = MinuteOldChange("ml-dev", "edited").ToSignedJson(kChangeKey);
  edited["previousResources"]["limits"]["nvidia.com/gpu"] = "8";
  SeedFailedChange("ml-dev", "edited", edited);
  SeedFailedChange("ml-dev", "mode-off",
                   MinuteOldChange("ml-dev", "mode-off").ToSignedJson(kChangeKey), "Off");
  SeedFailedChange("ml-dev", "mode-report",
                   MinuteOldChange("ml-dev", "mode-report").ToSignedJson(kChangeKey), "Report");
  SeedFailedChange("ml-dev", "good", MinuteOldChange("ml-dev", "good").ToSignedJson(kChangeKey));
  auto d = Daemon(kUpdaterToken, {}, Unlimited());
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::string all;
  for (const std::string& m : s->messages) all += m + "\n";
  for (const char* name : {"forged", "other-key", "edited", "mode-off", "mode-report"}) {
    EXPECT_TRUE(WorkloadWrites(cluster_.api(), "ml-dev", name).empty()) << name;
    EXPECT_EQ(Limits("ml-dev", name), (json{{"nvidia.com/mig-1g.20gb", "1"}})) << name;
  }
  EXPECT_NE(all.find("ml-dev/forged: rollback check: deployments.apps ml-dev/forged"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("no signature"), std::string::npos) << all;
  EXPECT_NE(all.find("ml-dev/edited: rollback check"), std::string::npos) << all;
  EXPECT_NE(all.find("the signature does not verify"), std::string::npos) << all;
  EXPECT_NE(all.find("ml-dev/mode-off: rollback due"), std::string::npos) << all;
  EXPECT_NE(all.find("mode Off: not rolled back"), std::string::npos) << all;
  EXPECT_NE(all.find("mode Report: not rolled back"), std::string::npos) << all;
  // The signed change in Auto is rolled back: the guard is not refusing everything.
  EXPECT_EQ(s->rolled_back, 1u) << all;
  EXPECT_EQ(Limits("ml-dev", "good"), (json{{"nvidia.com/gpu", "1"}}));
}

// The opt-out annotation holds on the workload and on its pod template, in any boolean
// spelling; a recognised false does not opt out.
TEST_F(ProductionGuardTest, OptOutOnTheWorkloadOrItsPodTemplateInAnySpelling) {
  std::vector<v1::Recommendation> recs;
  const std::vector<std::tuple<std::string, std::string, std::string, bool>> cases = {
      {"tmpl-true", "template", "True", true}, {"tmpl-yes", "template", "yes", true},
      {"wl-on", "workload", "ON", true},       {"wl-1", "workload", "1", true},
      {"wl-odd", "workload", "maybe", true},   {"wl-false", "workload", "False", false},
      {"tmpl-no", "template", "no", false},
  };
  for (const auto& [name, where, value, opted_out] : cases) {
    json w = KubeTestCluster::Workload("Deployment", "ml-dev", name, "main", "nvidia.com/gpu", "1");
    json& metadata = where == "template" ? w["spec"]["template"]["metadata"] : w["metadata"];
    metadata["annotations"]["gpuvpa.io/opt-out"] = value;
    cluster_.api().Seed(w);
    cluster_.api().Seed(KubeTestCluster::Gvpa("ml-dev", name, "Deployment", name, "Auto"));
    recs.push_back(Rec("ml-dev", name));
  }
  WriteRecs(recs_path_, recs);
  auto d = Daemon(kUpdaterToken, {}, Unlimited());
  Result<CycleSummary> s = d->RunCycle(UnixNowSeconds());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const auto& [name, where, value, opted_out] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(WorkloadWrites(cluster_.api(), "ml-dev", name).empty(), opted_out);
    EXPECT_EQ(Limits("ml-dev", name).contains("nvidia.com/gpu"), opted_out);
  }
}

// SIGKILL of gpuvpa-updater at random moments (between a dry run, a patch and its ledger rows
// among them), 30 times, then one run to the end: the ledger holds the same rows as one
// uninterrupted run on the same cluster state (every applied change exactly one row, written
// again from the signed annotation by the run after a kill), and the same savings.
TEST_F(ProductionGuardTest, KillsBetweenPatchAndLedgerLeaveEveryChangeRecordedOnce) {
  constexpr int kWorkloads = 24;
  std::vector<v1::Recommendation> recs;
  auto seed = [&](KubeTestCluster& cluster) {
    if (cluster.api().Get("namespaces", "", "ml-dev").is_null())
      cluster.api().Seed(KubeTestCluster::Namespace("ml-dev", {{"environment", "dev"}}));
    for (int i = 0; i < kWorkloads; ++i) {
      const std::string name = "w" + std::to_string(i);
      cluster.api().Seed(
          KubeTestCluster::Workload("Deployment", "ml-dev", name, "main", "nvidia.com/gpu", "1"));
      cluster.api().Seed(KubeTestCluster::Gvpa("ml-dev", name, "Deployment", name, "Auto"));
    }
  };
  seed(cluster_);
  for (int i = 0; i < kWorkloads; ++i) recs.push_back(Rec("ml-dev", "w" + std::to_string(i)));
  WriteRecs(recs_path_, recs);
  auto run = [&](KubeTestCluster& cluster, const std::string& ledger, int kill_after_ms) {
    pid_t pid = testing::SpawnProcess(
        {std::string(GPUVPA_BIN_DIR) + "/gpuvpa-updater", "--once", "--kubeconfig",
         cluster.Kubeconfig(kUpdaterToken, "kill.yaml"), "--recommendations", recs_path_,
         "--ledger", ledger, "--change-key-file", change_key_file_, "--identity", "kill-test",
         "--max-changes", "1000", "--max-changes-per-namespace", "1000", "--log-level", "error"},
        cluster.dir().Path("kill.log"));
    if (kill_after_ms >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
      testing::KillProcess(pid);
    } else {
      EXPECT_EQ(testing::WaitForExit(pid, std::chrono::seconds(60)), 0)
          << testing::ReadTextFile(cluster.dir().Path("kill.log"));
    }
  };
  // The uninterrupted run, on a cluster of its own, timed.
  KubeTestCluster clean;
  clean.api().AddUser(kUpdaterToken, UpdaterUser());
  seed(clean);
  const std::string clean_ledger = clean.dir().Path("clean.db");
  const auto t0 = std::chrono::steady_clock::now();
  run(clean, clean_ledger, -1);
  const int run_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  std::mt19937 rng(23);
  for (int k = 0; k < 30; ++k) run(cluster_, ledger_path_, static_cast<int>(rng() % (run_ms + 1)));
  run(cluster_, ledger_path_, -1);
  auto rows = [](const std::string& path) {
    std::vector<std::string> ids;
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT action_id, kind, status FROM actions ORDER BY action_id", -1,
                       &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
      ids.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) + " " +
                    reinterpret_cast<const char*>(sqlite3_column_text(st, 1)) + " " +
                    reinterpret_cast<const char*>(sqlite3_column_text(st, 2)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ids;
  };
  const std::vector<std::string> interrupted = rows(ledger_path_),
                                 uninterrupted = rows(clean_ledger);
  EXPECT_EQ(interrupted, uninterrupted);
  size_t applied = 0;
  for (const std::string& r : interrupted) applied += r.find(" applied_change applied") != r.npos;
  EXPECT_EQ(applied, static_cast<size_t>(kWorkloads)) << "every workload changed, each one row";
  for (int i = 0; i < kWorkloads; ++i)
    EXPECT_EQ(Limits("ml-dev", "w" + std::to_string(i)), (json{{"nvidia.com/mig-1g.20gb", "1"}}));
  auto clean_book = Ledger::Open(clean_ledger);
  ASSERT_TRUE(clean_book.ok());
  const Showback a = Ledger(), b = *(*clean_book)->QueryShowback({});
  EXPECT_EQ(a.total.savings_realised_monthly, b.total.savings_realised_monthly);
  EXPECT_EQ(a.total.savings_realised_monthly, kWorkloads * (5'022'400'000LL - 1'255'600'000LL));
  EXPECT_EQ(a.total.savings_proposed_monthly, b.total.savings_proposed_monthly);
  std::cout << "uninterrupted run " << run_ms << " ms; 30 kills within it\n";
}

}  // namespace
}  // namespace gpuvpa::updater
