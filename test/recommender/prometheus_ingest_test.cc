// The live input against a real Prometheus: DCGM- and kube-state-metrics-shaped history
// backfilled with promtool, read by the daemon's engine and by the real gpuvpa-recommender.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/api/recommendation_contract.h"
#include "core/base/time_format.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/gpu/gpu_catalog.h"
#include "core/net/http_client.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/daemon/recommender_daemon.h"
#include "recommender/logic/recommender.h"
#include "test/support/ledger_backends.h"
#include "test/support/process.h"
#include "test/support/prometheus_server.h"
#include "test/support/scripted_http_server.h"
#include "test/support/sockets.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::recommender {
namespace {

using std::chrono::milliseconds;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kHours = 30;  // of history, one point a minute

// The workloads' usage at minute i (deterministic, varied).
double TrainerMiB(int i) { return 20000 + (i * 37 % 600) * 10; }
double TrainerSm(int i) { return 0.2 + (i * 13 % 50) / 100.0; }
double MigMiB(int i) { return 6000 + (i * 7 % 200) * 10; }
double MigGr(int i) { return (i % 5) / 10.0; }
constexpr double kSharedDeviceMiB = 30000;
constexpr double kSharedDeviceUtil = 60;
// gpuvpa-node-agent's view of the shared device: each pod's own memory and busy time, and the
// SM share it attributed (svc-c has none: busy time only).
struct AgentPod {
  const char* pod;
  double mib, busy, sm;
  const char* method;
};
constexpr AgentPod kAgentPods[] = {{"a", 6000, 0.30, 0.05, "solo-calibrated"},
                                   {"b", 20000, 0.20, 0.15, "busy-proportional"},
                                   {"c", 4000, 0.10, -1, "busy-time-only"}};

struct Fixture {
  double start_s = 0;  // the first sample
  double end_s = 0;    // the last sample
  std::string openmetrics;
};

Fixture MakeHistory() {
  Fixture f;
  const double now = std::floor(UnixNowSeconds() / 60) * 60;
  f.end_s = now - 180;  // the daemon's lag in these tests: no lookback repeats past the end
  f.start_s = f.end_s - kHours * 3600.0;
  std::map<std::string, std::string> family;  // metric family → lines (families stay contiguous)
  auto add = [&](const std::string& metric, const std::string& labels, double v, double t) {
    char value[64];
    std::snprintf(value, sizeof value, "%.6f %.0f\n", v, t);
    family[metric] += metric + "{" + labels + "} " + value;
  };
  const std::string h100 = "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\"";
  const std::string a100 = "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node-b\"";
  const std::string trainer =
      "gpu=\"0\",UUID=\"GPU-t\"," + h100 +
      ",namespace=\"ml\",pod=\"trainer-7d9f8b6c5d-x2x4z\",container=\"main\"";
  const std::string mig = "gpu=\"0\",UUID=\"GPU-m\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\"," +
                          a100 + ",namespace=\"inf\",pod=\"embed-0\",container=\"server\"";
  // The pool allocator: the old label set, no kube-state-metrics (pod-name rule).
  const std::string pool = "gpu=\"1\",uuid=\"GPU-p\"," + h100 +
                           ",pod_namespace=\"llm\",pod_name=\"vllm-5f6b7c8d9f-x2x4z\","
                           "container_name=\"engine\"";
  for (int i = 0; i <= kHours * 60; ++i) {
    const double t = f.start_s + i * 60.0;
    const std::string n = std::to_string(i);
    // Series are written per family, each in time order: promtool needs families contiguous.
    add("DCGM_FI_DEV_FB_USED", trainer, TrainerMiB(i), t);
    add("DCGM_FI_PROF_SM_ACTIVE", trainer, TrainerSm(i), t);
    add("DCGM_FI_DEV_GPU_UTIL", trainer, TrainerSm(i) * 100, t);
    add("DCGM_FI_DEV_FB_USED", mig, MigMiB(i), t);
    add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, MigGr(i), t);
    add("DCGM_FI_DEV_FB_USED", pool, 72000, t);
    add("DCGM_FI_DEV_GPU_UTIL", pool, 5 + i % 3, t);
    for (const char* p : {"a", "b", "c"}) {
      // honorLabels: false — the workload's labels are exported_*, the target's are the exporter.
      const std::string shared = "gpu=\"2\",UUID=\"GPU-s\"," + h100 +
                                 ",exported_namespace=\"web\",exported_pod=\"svc-" + p +
                                 "-0\",exported_container=\"app\",namespace=\"gpu-operator\","
                                 "pod=\"dcgm-exporter-x\",container=\"nvidia-dcgm-exporter\"";
      add("DCGM_FI_DEV_FB_USED", shared, kSharedDeviceMiB, t);
      add("DCGM_FI_DEV_GPU_UTIL", shared, kSharedDeviceUtil, t);
    }
    // The node agent on node-a, scraped by a PodMonitor without honorLabels (the pods' labels
    // exported_*, the agent's own in their place), and a process it could not name.
    const std::string agent_target =
        "namespace=\"gpuvpa-node-agent\",pod=\"gpuvpa-node-agent-q\",container=\"agent\","
        "node=\"node-a\",gpu=\"2\",gpu_uuid=\"GPU-s\",model_name=\"NVIDIA H100 80GB HBM3\"";
    for (const AgentPod& a : kAgentPods) {
      const std::string labels = agent_target + ",exported_namespace=\"web\",exported_pod=\"svc-" +
                                 a.pod + "-0\",exported_container=\"app\",method=\"" + a.method +
                                 "\"";
      add("gpuvpa_container_gpu_memory_used_bytes", labels, a.mib * kMiB, t);
      add("gpuvpa_container_gpu_busy_ratio", labels, a.busy, t);
      if (a.sm >= 0) add("gpuvpa_container_gpu_sm_active_ratio", labels, a.sm, t);
    }
    add("gpuvpa_container_gpu_memory_used_bytes", agent_target + ",method=\"none\"", 500 * kMiB, t);
    // An idle GPU: the exporter's own labels only.
    add("DCGM_FI_DEV_FB_USED",
        "gpu=\"3\",UUID=\"GPU-i\"," + h100 +
            ",namespace=\"gpu-operator\",pod=\"dcgm-exporter-x\",container=\"nvidia-dcgm-"
            "exporter\"",
        0, t);
    if (i % 10 == 0) {  // kube-state-metrics, scraped less often
      add("kube_pod_owner",
          "namespace=\"ml\",pod=\"trainer-7d9f8b6c5d-x2x4z\",owner_kind=\"ReplicaSet\","
          "owner_name=\"trainer-7d9f8b6c5d\",owner_is_controller=\"true\",uid=\"u1\"",
          1, t);
      add("kube_replicaset_owner",
          "namespace=\"ml\",replicaset=\"trainer-7d9f8b6c5d\",owner_kind=\"Deployment\","
          "owner_name=\"trainer\",owner_is_controller=\"true\"",
          1, t);
      add("kube_pod_owner",
          "namespace=\"inf\",pod=\"embed-0\",owner_kind=\"StatefulSet\",owner_name=\"embed\","
          "owner_is_controller=\"true\",uid=\"u2\"",
          1, t);
      for (const char* p : {"a", "b", "c"})
        add("kube_pod_owner",
            std::string("namespace=\"web\",pod=\"svc-") + p +
                "-0\",owner_kind=\"StatefulSet\",owner_name=\"svc-" + p +
                "\",owner_is_controller=\"true\",uid=\"u" + p + "\"",
            1, t);
      add("kube_pod_container_resource_requests",
          "namespace=\"ml\",pod=\"trainer-7d9f8b6c5d-x2x4z\",container=\"main\","
          "resource=\"nvidia_com_gpu\",unit=\"integer\",node=\"node-a\",uid=\"u1\"",
          1, t);
      add("kube_pod_container_resource_requests",
          "namespace=\"inf\",pod=\"embed-0\",container=\"server\","
          "resource=\"nvidia_com_mig_1g_10gb\",unit=\"integer\",node=\"node-b\",uid=\"u2\"",
          1, t);
      for (const char* p : {"a", "b", "c"})
        add("kube_pod_container_resource_requests",
            std::string("namespace=\"web\",pod=\"svc-") + p +
                "-0\",container=\"app\",resource=\"nvidia_com_gpu_shared\",unit=\"integer\","
                "node=\"node-a\",uid=\"u" +
                p + "\"",
            1, t);
      add("kube_namespace_labels", "namespace=\"ml\",label_cost_center=\"research\"", 1, t);
    }
  }
  for (const auto& [metric, lines] : family)
    f.openmetrics += "# TYPE " + metric + " gauge\n" + lines;
  f.openmetrics += "# EOF\n";
  return f;
}

class PrometheusIngestTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScopedTempDir();
    server_ = new testing::PrometheusServer(dir_->dir().string());
    fixture_ = new Fixture(MakeHistory());
    std::string error;
    ok_ = server_->Backfill(fixture_->openmetrics, &error) && server_->Start(&error);
    error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    delete fixture_;
    delete error_;
  }
  void SetUp() override { ASSERT_TRUE(ok_) << *error_; }

  // The daemon's config against the test Prometheus, with state in `tmp`.
  static std::string ConfigYaml(const testing::ScopedTempDir& tmp, const std::string& url,
                                const std::string& extra = "") {
    return "ledger:\n  path: " + tmp.Path("ledger.db") +
           "\nprices:\n  - gpu_model: H100-80GB\n    usd_per_gpu_hour: 4\n"
           "  - gpu_model: A100-80GB\n    usd_per_gpu_hour: 2\n"
           "recommender:\n  prometheus:\n    server_address: " +
           url +
           "\n    step_seconds: 60\n    chunk_seconds: 21600\n    hosts_per_query: 1\n"
           "    lag_seconds: 180\n    timeout_seconds: 5\n    max_retries: 1\n"
           "  checkpoint: " +
           tmp.Path("checkpoint") +
           "\n  min_history_hours: 12\n  poll_interval_seconds: 1\n"
           "  listen_http: 127.0.0.1:0\n  listen_grpc: 127.0.0.1:0\n" +
           extra;
  }

  static std::unique_ptr<RecommenderDaemon> NewDaemon(const testing::ScopedTempDir& tmp,
                                                      const std::string& url,
                                                      const std::string& extra = "") {
    Result<GpuvpaConfig> gpuvpa = ParseConfig(ConfigYaml(tmp, url, extra));
    EXPECT_TRUE(gpuvpa.ok()) << gpuvpa.status().message();
    Result<DaemonConfig> config = ParseDaemonConfig(gpuvpa->recommender_yaml, "test");
    EXPECT_TRUE(config.ok()) << config.status().message();
    Result<std::unique_ptr<RecommenderDaemon>> d =
        RecommenderDaemon::Create(*config, *std::move(gpuvpa));
    EXPECT_TRUE(d.ok()) << d.status().message();
    return d.ok() ? std::move(d).value() : nullptr;
  }

  static const v1::Recommendation* Find(const RecommendationSnapshot& s, const std::string& ns,
                                        const std::string& kind, const std::string& name) {
    for (const auto& [key, rec] : s.by_key)
      if (rec.identity().namespace_name() == ns && rec.identity().owner_kind() == kind &&
          rec.identity().owner_name() == name)
        return &rec;
    return nullptr;
  }

  static testing::ScopedTempDir* dir_;
  static testing::PrometheusServer* server_;
  static Fixture* fixture_;
  static bool ok_;
  static std::string* error_;
};

testing::ScopedTempDir* PrometheusIngestTest::dir_ = nullptr;
testing::PrometheusServer* PrometheusIngestTest::server_ = nullptr;
Fixture* PrometheusIngestTest::fixture_ = nullptr;
bool PrometheusIngestTest::ok_ = false;
std::string* PrometheusIngestTest::error_ = nullptr;

TEST_F(PrometheusIngestTest, RecommendationsMatchTheSamplesComputedDirectly) {
  testing::ScopedTempDir tmp;
  std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, server_->url());
  ASSERT_NE(d, nullptr);
  // Polled as of the fixture's own clock (its last sample + the daemon's 180 s lag), not the
  // wall clock: a slow set-up (ASan, a loaded machine) would otherwise read a step past the last
  // sample, where Prometheus's lookback repeats it (seen in CI: 1802 samples instead of 1801).
  ASSERT_TRUE(d->PollOnce(fixture_->end_s + 180).ok());
  const auto snap = d->snapshot();

  // The trainer, owned through ReplicaSet → Deployment, cost center from the namespace label.
  const v1::Recommendation* trainer = Find(*snap, "ml", "Deployment", "trainer");
  ASSERT_NE(trainer, nullptr);
  EXPECT_EQ(trainer->identity().cost_center(), "research");
  EXPECT_EQ(trainer->identity().allocation(), "nvidia.com/gpu=1");
  EXPECT_EQ(trainer->identity().gpu_model(), "H100-80GB");
  // The same samples straight into a store: the same recommendation.
  FleetStoreOptions options;
  options.sample_period_s = 60;
  FleetStore direct(options);
  v1::WorkloadIdentity id = trainer->identity();
  AllocationUnit unit;
  unit.vram_capacity_bytes = unit.vram_limit_bytes = 80e9;
  const uint32_t row = direct.Track(id, unit);
  for (int i = 0; i <= kHours * 60; ++i)
    direct.AddSample(row,
                     {fixture_->start_s + i * 60.0, TrainerMiB(i) * kMiB, TrainerSm(i), false});
  RecommenderOptions rec_options;
  rec_options.min_history_s = 12 * 3600;
  const Recommendation expected = Recommender(rec_options).Recommend(direct, row);
  EXPECT_TRUE(trainer->has_target());
  EXPECT_DOUBLE_EQ(trainer->vram_target_bytes(), expected.vram_target_bytes);
  EXPECT_DOUBLE_EQ(trainer->vram_history_peak_bytes(), 25990 * kMiB);
  EXPECT_DOUBLE_EQ(trainer->sm_p90_ratio(), expected.sm_p90_ratio);
  EXPECT_EQ(trainer->sample_count(), static_cast<uint64_t>(kHours * 60 + 1));
  // Charged time from real Prometheus: each sample stands for the gap to the one before it (one
  // step here), the first for one step: the wall-clock time the GPU was held.
  EXPECT_DOUBLE_EQ(trainer->allocated_gpu_hours(), (kHours * 60 + 1) * 60.0 / 3600);

  // MIG: the profile from the request, SM from GR_ENGINE_ACTIVE, capped by the instance.
  const v1::Recommendation* mig = Find(*snap, "inf", "StatefulSet", "embed");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->identity().allocation(), "nvidia.com/mig-1g.10gb=1");
  EXPECT_DOUBLE_EQ(mig->vram_history_peak_bytes(), 7990 * kMiB);
  EXPECT_LE(mig->vram_target_bytes(), mig->vram_limit_bytes());
  EXPECT_NEAR(mig->sm_p99_ratio(), 0.4, 0.011);

  // The pool allocator, found through the old labels and the pod-name rule.
  const v1::Recommendation* pool = Find(*snap, "llm", "Deployment", "vllm");
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(pool->vram_set_by_allocator());

  // The shared device: three pods, each a third, adding up to the device, flagged.
  double vram_sum = 0, sm_hours_sum = 0, vram_hours_sum = 0, allocated = 0;
  for (const char* p : {"svc-a", "svc-b", "svc-c"}) {
    const v1::Recommendation* r = Find(*snap, "web", "StatefulSet", p);
    ASSERT_NE(r, nullptr) << p;
    EXPECT_TRUE(r->shared_device_estimate());
    EXPECT_EQ(r->identity().allocation(), "nvidia.com/gpu.shared=1/3");
    vram_sum += r->vram_history_peak_bytes();
    sm_hours_sum += r->used_gpu_hours_sm();
    vram_hours_sum += r->used_gpu_hours_vram();
    EXPECT_NEAR(r->sm_p90_ratio(), kSharedDeviceUtil / 100,
                0.011);  // 0.2 of the device over a 1/3 share
    allocated += r->allocated_gpu_hours();
  }
  EXPECT_DOUBLE_EQ(vram_sum, kSharedDeviceMiB * kMiB);
  // Device time: the three shares add up to one device over the history; used SM time to the
  // device's 60 %, used VRAM time to the device's 30000 MiB of its memory.
  EXPECT_NEAR(allocated, trainer->allocated_gpu_hours(), 1e-6);
  EXPECT_NEAR(sm_hours_sum, kSharedDeviceUtil / 100 * allocated, 1e-6 * allocated);
  const double device_bytes = (*GpuCatalog::BuiltIn().FindModel("H100-80GB"))->memory_bytes;
  EXPECT_NEAR(vram_hours_sum, kSharedDeviceMiB * kMiB / device_bytes * allocated, 1e-6 * allocated);
  EXPECT_FALSE(trainer->shared_device_estimate());
  // The idle GPU (exporter labels only) is nobody's workload.
  EXPECT_EQ(snap->by_key.size(), 6u);
}

// With the agent named as a source, its series win over DCGM's for the pods and device it
// reports; the rest of the fleet is read from DCGM as before.
// The per-workload series are written from the snapshot at each scrape: one line per
// recommendation and family, with the recommendation's own value, and nothing else.
TEST_F(PrometheusIngestTest, MetricsCarryEachRecommendationOnceWithItsValues) {
  testing::ScopedTempDir tmp;
  std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, server_->url());
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->PollOnce(fixture_->end_s + 180).ok());
  const auto snap = d->snapshot();
  ASSERT_GE(snap->by_key.size(), 2u);
  const std::string page = d->HandleHttp("/metrics").body;
  std::map<std::string, int> lines;  // family → series
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (line.rfind('#', 0) != 0 && line.find('{') != std::string::npos)
      ++lines[line.substr(0, line.find('{'))];
  size_t with_target = 0;
  for (const auto& [key, rec] : snap->by_key) {
    with_target += rec.has_target();
    const v1::WorkloadIdentity& id = rec.identity();
    const std::string labels = "{container=\"" + id.container() + "\",cost_center=\"" +
                               id.cost_center() + "\",namespace=\"" + id.namespace_name() +
                               "\",workload=\"" + id.owner_name() + "\",workload_kind=\"" +
                               id.owner_kind() + "\"} ";
    auto text = [](double v) {
      std::ostringstream out;
      out.precision(16);
      out << v;
      return out.str();
    };
    EXPECT_NE(
        page.find("\ngpuvpa_recommendation_confidence" + labels + text(rec.confidence()) + "\n"),
        std::string::npos)
        << key << "\n"
        << page;
    if (rec.has_target()) {
      EXPECT_NE(page.find("\ngpuvpa_recommendation_vram_target_bytes" + labels +
                          text(static_cast<double>(rec.vram_target_bytes())) + "\n"),
                std::string::npos)
          << key;
    }
  }
  EXPECT_EQ(lines["gpuvpa_recommendation_confidence"], static_cast<int>(snap->by_key.size()));
  EXPECT_EQ(lines["gpuvpa_recommendation_sm_p90_ratio"], static_cast<int>(snap->by_key.size()));
  EXPECT_EQ(lines["gpuvpa_recommendation_vram_target_bytes"], static_cast<int>(with_target));
  EXPECT_EQ(lines["gpuvpa_recommendation_vram_upper_bytes"], static_cast<int>(with_target));
  EXPECT_EQ(page.find("# TYPE gpuvpa_recommendation_confidence gauge"),
            page.rfind("# TYPE gpuvpa_recommendation_confidence gauge"))
      << "one family header";
  // A second poll publishes again: the page still carries each series once.
  ASSERT_TRUE(d->PollOnce(fixture_->end_s + 240).ok());
  const std::string again = d->HandleHttp("/metrics").body;
  size_t count = 0;
  for (size_t at = again.find("\ngpuvpa_recommendation_confidence{"); at != std::string::npos;
       at = again.find("\ngpuvpa_recommendation_confidence{", at + 1))
    ++count;
  EXPECT_EQ(count, d->snapshot()->by_key.size());
}

TEST_F(PrometheusIngestTest, TheNodeAgentsSeriesWinOverDcgmWhenTheConfigNamesThem) {
  testing::ScopedTempDir tmp;
  std::unique_ptr<RecommenderDaemon> d =
      NewDaemon(tmp, server_->url(), "  node_agent: {enabled: true}\n");
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->PollOnce(fixture_->end_s + 180).ok());
  const auto snap = d->snapshot();
  double vram_sum = 0, sm_hours_sum = 0, busy_sum = 0;
  for (const AgentPod& a : kAgentPods) {
    const std::string name = std::string("svc-") + a.pod;
    const v1::Recommendation* r = Find(*snap, "web", "StatefulSet", name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_TRUE(r->per_process_usage()) << name;
    EXPECT_FALSE(r->shared_device_estimate()) << name;
    EXPECT_EQ(r->identity().allocation(), "nvidia.com/gpu.shared=1/3");
    EXPECT_DOUBLE_EQ(r->vram_history_peak_bytes(), a.mib * kMiB) << name;
    EXPECT_EQ(r->sample_count(), static_cast<uint64_t>(kHours * 60 + 1)) << name;
    // SM relative to the pod's third of the device.
    EXPECT_NEAR(r->sm_p90_ratio(), 3 * (a.sm >= 0 ? a.sm : a.busy), 0.011) << name;
    vram_sum += r->vram_history_peak_bytes();
    sm_hours_sum += r->used_gpu_hours_sm();
    busy_sum += a.sm >= 0 ? a.sm : a.busy;
  }
  EXPECT_EQ(Find(*snap, "web", "StatefulSet", "svc-a")->sm_basis(), "sm_active_solo_calibrated");
  EXPECT_EQ(Find(*snap, "web", "StatefulSet", "svc-b")->sm_basis(), "sm_active_by_busy_share");
  EXPECT_EQ(Find(*snap, "web", "StatefulSet", "svc-c")->sm_basis(), "busy_time");
  EXPECT_DOUBLE_EQ(vram_sum, kSharedDeviceMiB * kMiB) << "the agent's pods add up to the device";
  const v1::Recommendation* trainer = Find(*snap, "ml", "Deployment", "trainer");
  ASSERT_NE(trainer, nullptr);
  EXPECT_NEAR(sm_hours_sum, busy_sum * trainer->allocated_gpu_hours(), 1e-6);
  // DCGM's series for everything the agent does not report; the unnamed process is nobody's.
  EXPECT_DOUBLE_EQ(trainer->vram_history_peak_bytes(), 25990 * kMiB);
  EXPECT_FALSE(trainer->per_process_usage());
  EXPECT_EQ(snap->by_key.size(), 6u);
}

TEST_F(PrometheusIngestTest, RestartReadsNoHistoryTwiceAndChargesNothingTwice) {
  testing::ScopedTempDir tmp;
  const double now = UnixNowSeconds();
  double through = 0;
  std::map<std::string, double> first_costs;
  {
    std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, server_->url());
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->PollOnce(now).ok());
    ASSERT_TRUE(d->SaveCheckpointNow(now).ok());
    const std::vector<QueriedRange> ranges = d->source().queried_ranges();
    ASSERT_FALSE(ranges.empty());
    // Chunks of at most 6 h, host batches of one host, no overlap between chunks.
    for (const QueriedRange& r : ranges) EXPECT_LE(r.end_s - r.start_s, 6 * 3600 - 60 + 1e-6);
    through = ranges.back().end_s;
    for (const auto& [key, rec] : d->snapshot()->by_key) first_costs[key] = rec.allocated_usd();
    // The cost counters accrue what the ledger was charged, by cost center: their sum over
    // kind="allocated" is the ledger's allocated total.
    const std::string metrics = d->HandleHttp("/metrics").body;
    double allocated = 0, idle = 0;
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("gpuvpa_cost_usd_total{", 0) != 0) continue;
      const double v = std::stod(line.substr(line.rfind(' ') + 1));
      if (line.find("kind=\"allocated\"") != std::string::npos) allocated += v;
      if (line.find("kind=\"idle\"") != std::string::npos) idle += v;
    }
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
    const Showback charged = *ledger->QueryShowback({});
    EXPECT_NEAR(allocated, MicroToUsd(charged.total.allocated), 1e-6) << metrics;
    EXPECT_GT(idle, 0);
    EXPECT_LE(idle, allocated);
    EXPECT_NE(metrics.find("gpuvpa_recommender_unallocated_workloads_ratio "), std::string::npos);
  }
  auto totals = [](const std::string& ledger_path) {
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(ledger_path)).value();
    Result<Showback> showback = ledger->QueryShowback({});
    EXPECT_TRUE(showback.ok());
    return std::tuple{*ledger->CountRows(), showback->total.allocated,
                      showback->total.allocated_gpu_time};
  };
  const auto [rows0, usd0, gpu0] = totals(tmp.Path("ledger.db"));
  EXPECT_GT(usd0, 0);
  // Restart, same time: nothing to read, nothing charged, same recommendations.
  std::unique_ptr<RecommenderDaemon> again = NewDaemon(tmp, server_->url());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->snapshot()->by_key.size(), first_costs.size());
  ASSERT_TRUE(again->PollOnce(now).ok());
  EXPECT_TRUE(again->source().queried_ranges().empty());
  for (const auto& [key, rec] : again->snapshot()->by_key)
    EXPECT_DOUBLE_EQ(rec.allocated_usd(), first_costs[key]) << key;
  EXPECT_EQ(totals(tmp.Path("ledger.db")), std::tuple(rows0, usd0, gpu0));
  // Later: only what is new since the high-water mark is asked for.
  ASSERT_TRUE(again->PollOnce(now + 300).ok());
  for (const QueriedRange& r : again->source().queried_ranges()) EXPECT_GT(r.start_s, through);
  // Inside the charge interval (an hour by default) the new usage stays pending, uncharged...
  EXPECT_EQ(totals(tmp.Path("ledger.db")), std::tuple(rows0, usd0, gpu0));
  // ...and is kept in the checkpoint: the next start's first poll charges it.
  ASSERT_TRUE(again->SaveCheckpointNow(now + 300).ok());
  again.reset();
  std::unique_ptr<RecommenderDaemon> third = NewDaemon(tmp, server_->url());
  ASSERT_NE(third, nullptr);
  ASSERT_TRUE(third->PollOnce(now + 300).ok());
  EXPECT_TRUE(third->source().queried_ranges().empty());
  // The interrupted run charged what one uninterrupted poll charges: the same GPU time, and the
  // same money up to the rounding of each charged row to a micro-dollar.
  testing::ScopedTempDir once;
  std::unique_ptr<RecommenderDaemon> single = NewDaemon(once, server_->url());
  ASSERT_NE(single, nullptr);
  ASSERT_TRUE(single->PollOnce(now + 300).ok());
  const auto [rows2, usd2, gpu2] = totals(tmp.Path("ledger.db"));
  const auto [rows1, usd1, gpu1] = totals(once.Path("ledger.db"));
  EXPECT_EQ(gpu2, gpu1);
  EXPECT_LE(std::llabs(usd2 - usd1), rows2);
  EXPECT_GT(rows2, rows1);  // two charge periods per workload instead of one
}

TEST_F(PrometheusIngestTest, ADownOrFailingPrometheusKeepsTheLastRecommendationsAndRecovers) {
  testing::ScopedTempDir tmp;
  {
    std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, server_->url());
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->PollOnce(UnixNowSeconds()).ok());
    ASSERT_TRUE(d->SaveCheckpointNow(UnixNowSeconds()).ok());
  }
  // Down: a port nobody listens on.
  const std::string down = "http://127.0.0.1:" + std::to_string(testing::FreeLocalPort());
  std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, down);
  ASSERT_NE(d, nullptr);
  const size_t tracked = d->snapshot()->by_key.size();
  const Status s = d->PollOnce(UnixNowSeconds() + 600);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("Prometheus query"), std::string::npos) << s.message();
  EXPECT_EQ(d->snapshot()->by_key.size(), tracked);
  EXPECT_EQ(d->HandleHttp("/readyz").status, 503);
  EXPECT_NE(d->HandleHttp("/metrics").body.find("gpuvpa_recommender_query_errors_total 1"),
            std::string::npos);
  // An error body names the query and the server's message.
  testing::ScriptedHttpServer failing(
      testing::HttpBehaviour::kOk,
      R"({"status":"error","errorType":"execution","error":"query timed out in expression evaluation"})");
  std::unique_ptr<RecommenderDaemon> e = NewDaemon(tmp, failing.url());
  ASSERT_NE(e, nullptr);
  const Status se = e->PollOnce(UnixNowSeconds() + 600);
  EXPECT_EQ(se.code(), StatusCode::kUnavailable);
  EXPECT_NE(se.message().find("query timed out"), std::string::npos) << se.message();
  EXPECT_EQ(e->snapshot()->by_key.size(), tracked);
  // Back up: it resumes and is ready.
  std::unique_ptr<RecommenderDaemon> f = NewDaemon(tmp, server_->url());
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->PollOnce(UnixNowSeconds()).ok());
  EXPECT_EQ(f->HandleHttp("/readyz").status, 200);
}

// Readiness follows the last polls: 503 after unready_after_failed_polls (3) failures in a row,
// naming the error, and 200 again at the next success; the ledger's readiness does not depend
// on Prometheus at all.
// Usage goes to the ledger once per charge interval (and at the first poll, and at stop), one
// row per workload-container; between charges it is pending, and nothing of it is lost.
TEST_F(PrometheusIngestTest, UsageIsChargedOncePerChargeIntervalAndAtStop) {
  testing::ScopedTempDir tmp, whole;
  std::unique_ptr<RecommenderDaemon> d =
      NewDaemon(tmp, server_->url(), "  charge_interval_seconds: 600\n");
  ASSERT_NE(d, nullptr);
  auto rows = [](const std::string& path) {
    return *std::move(Ledger::Open(path)).value()->CountRows();
  };
  auto gpu_time = [](const std::string& path) {
    return std::move(Ledger::Open(path)).value()->QueryShowback({})->total.allocated_gpu_time;
  };
  const double t0 = fixture_->end_s + 180 - 1800;
  ASSERT_TRUE(d->PollOnce(t0).ok());
  const size_t first = rows(tmp.Path("ledger.db"));
  EXPECT_GT(first, 0u) << "the first poll charges";
  ASSERT_TRUE(d->PollOnce(t0 + 300).ok());
  EXPECT_EQ(rows(tmp.Path("ledger.db")), first) << "300 s after the last charge: pending";
  ASSERT_TRUE(d->PollOnce(t0 + 600).ok());
  const size_t second = rows(tmp.Path("ledger.db"));
  EXPECT_EQ(second, 2 * first) << "600 s: one row per workload for the whole interval";
  ASSERT_TRUE(d->PollOnce(t0 + 900).ok());
  EXPECT_EQ(rows(tmp.Path("ledger.db")), second);
  ASSERT_TRUE(d->ChargeAndCheckpointNow(t0 + 900).ok());
  EXPECT_EQ(rows(tmp.Path("ledger.db")), 3 * first) << "at stop, what is pending is charged";
  // The same GPU time as one poll over the whole span.
  std::unique_ptr<RecommenderDaemon> single = NewDaemon(whole, server_->url());
  ASSERT_NE(single, nullptr);
  ASSERT_TRUE(single->PollOnce(t0 + 900).ok());
  EXPECT_EQ(gpu_time(tmp.Path("ledger.db")), gpu_time(whole.Path("ledger.db")));
  // charge_interval_seconds: 0 charges at every poll.
  testing::ScopedTempDir every;
  std::unique_ptr<RecommenderDaemon> e =
      NewDaemon(every, server_->url(), "  charge_interval_seconds: 0\n");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->PollOnce(t0).ok());
  ASSERT_TRUE(e->PollOnce(t0 + 300).ok());
  EXPECT_EQ(rows(every.Path("ledger.db")), 2 * first);
}

TEST_F(PrometheusIngestTest, ReadinessFollowsTheLastPollsAndTheLedgerStaysReady) {
  testing::ScopedTempDir tmp;
  const std::string empty_vector =
      R"({"status":"success","data":{"resultType":"vector","result":[]}})";
  testing::ScriptedHttpServer prometheus(testing::HttpBehaviour::kOk, empty_vector);
  prometheus.SetBodyFor("/api/v1/label/", R"({"status":"success","data":[]})");
  prometheus.SetBodyFor("/api/v1/query_range",
                        R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  std::unique_ptr<RecommenderDaemon> d = NewDaemon(tmp, prometheus.url());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->HandleHttp("/readyz").status, 503);
  EXPECT_EQ(d->HandleHttp("/readyz/ledger").status, 200);
  double now = UnixNowSeconds();
  ASSERT_TRUE(d->PollOnce(now).ok());
  EXPECT_EQ(d->HandleHttp("/readyz").status, 200);
  // Prometheus answers errors now (the later body for a prefix wins).
  prometheus.SetBodyFor(
      "/api/v1/query",
      R"({"status":"error","errorType":"bad_data","error":"parse error at char 1"})");
  for (int i = 1; i <= 3; ++i) {
    EXPECT_FALSE(d->PollOnce(now += 60).ok());
    EXPECT_EQ(d->HandleHttp("/readyz").status, i < 3 ? 200 : 503) << "after " << i << " failures";
    EXPECT_EQ(d->HandleHttp("/readyz/ledger").status, 200);
  }
  const HttpServerResponse unready = d->HandleHttp("/readyz");
  EXPECT_NE(unready.body.find("the last 3 polls failed"), std::string::npos) << unready.body;
  EXPECT_NE(unready.body.find("parse error at char 1"), std::string::npos) << unready.body;
  prometheus.SetBodyFor("/api/v1/query", empty_vector);
  ASSERT_TRUE(d->PollOnce(now += 60).ok());
  EXPECT_EQ(d->HandleHttp("/readyz").status, 200);
}

// The PostgreSQL ledger end to end: two recommender shard processes of cluster "east" and the
// scaler of cluster "west" write one database directly (each process its own connection, no
// LedgerService). Showback across clusters and per cluster equals the sums of the rows, to the
// micro-dollar, and a second pass of the shards adds nothing.
TEST_F(PrometheusIngestTest, TwoShardsAndAScalerOfAnotherClusterWriteOnePostgresLedger) {
  testing::ScopedTempDir tmp;
  testing::LedgerPlace pg(testing::LedgerBackend::kPostgres);
  std::string error;
  ASSERT_TRUE(pg.Prepare(&error)) << error;
  const std::string url_file = tmp.Path("ledger-url");
  std::ofstream(url_file) << pg.url() << "\n";
  auto run_shards = [&] {
    std::vector<pid_t> pids;
    for (int shard = 0; shard < 2; ++shard) {
      const std::string dir = tmp.Path("shard" + std::to_string(shard));
      std::filesystem::create_directories(dir);
      std::string yaml = ConfigYaml(tmp, server_->url());
      const std::string sqlite_ledger = "ledger:\n  path: " + tmp.Path("ledger.db");
      yaml.replace(yaml.find(sqlite_ledger), sqlite_ledger.size(),
                   "cluster: east\nledger:\n  url_file: " + url_file);
      yaml.replace(yaml.find(tmp.Path("checkpoint")), tmp.Path("checkpoint").size(),
                   dir + "/checkpoint");
      // One config for every replica, as a StatefulSet has: the shard is the pod's index.
      yaml += "  shard:\n    index: 0\n    count: 2\n";
      std::ofstream(dir + "/gpuvpa.yaml") << yaml;
      pids.push_back(testing::SpawnProcess(
          {std::string(GPUVPA_BIN_DIR) + "/gpuvpa-recommender", "--config", dir + "/gpuvpa.yaml",
           "--once", "--shard-index", std::to_string(shard)},
          dir + "/run.log"));
    }
    for (int shard = 0; shard < 2; ++shard)
      EXPECT_EQ(testing::WaitForExit(pids[static_cast<size_t>(shard)], std::chrono::seconds(60)), 0)
          << testing::ReadTextFile(tmp.Path("shard" + std::to_string(shard)) + "/run.log");
  };
  run_shards();
  // The scaler writes its metered period for another cluster into the same database.
  const std::string scaler = std::string(GPUVPA_BIN_DIR) + "/gpuvpa-scaler";
  int rc = 0;
  const std::string arrivals = tmp.Path("arrivals.csv");
  testing::RunShell(scaler + " demo-arrivals --out " + arrivals, &rc);
  ASSERT_EQ(rc, 0);
  const std::string replay = testing::RunShell(
      scaler + " replay --arrivals " + arrivals +
          " --service-column service_seconds --target 5 --max-replicas 1 --gpu-per-replica 4"
          " --gpu-model H100-80GB --namespace research --scaled-object nightly-train"
          " --cost-center research --cluster west --ledger-url-file " +
          url_file,
      &rc);
  ASSERT_EQ(rc, 0) << replay;

  auto sum = [&](const std::string& column, const std::string& where) {
    return std::stoll(pg.postgres()->Query(
        "ledger", "SELECT COALESCE(SUM(" + column + "), 0) FROM actions" + where));
  };
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(pg.url())).value();
  ShowbackQuery by_cluster;
  by_cluster.group_by = ShowbackGroup::kCluster;
  const Showback all = *ledger->QueryShowback(by_cluster);
  ASSERT_EQ(all.groups.size(), 2u);
  EXPECT_EQ(all.groups[0].group, "east");
  EXPECT_EQ(all.groups[1].group, "west");
  EXPECT_GT(all.groups[0].allocated, 0) << "the shards charged usage";
  EXPECT_GT(all.groups[1].metered, 0) << "the scaler metered its period";
  EXPECT_EQ(all.total.allocated, sum("allocated_micro_usd", ""));
  EXPECT_EQ(all.total.metered, sum("metered_micro_usd", ""));
  for (const char* cluster : {"east", "west"}) {
    ShowbackQuery one;
    one.cluster = cluster;
    const Showback s = *ledger->QueryShowback(one);
    const std::string where = std::string(" WHERE cluster = '") + cluster + "'";
    EXPECT_EQ(s.total.allocated, sum("allocated_micro_usd", where)) << cluster;
    EXPECT_EQ(s.total.metered, sum("metered_micro_usd", where)) << cluster;
    EXPECT_EQ(s.total.reserved, sum("reserved_micro_usd", where)) << cluster;
  }
  // Both shards wrote: the usage rows name all six workloads, each charged by one shard.
  EXPECT_EQ(pg.postgres()->Query("ledger",
                                 "SELECT COUNT(DISTINCT namespace || '/' || workload) FROM actions "
                                 "WHERE cluster = 'east' AND kind = 'allocated_usage'"),
            "6");
  const int64_t rows = *ledger->CountRows();
  run_shards();
  EXPECT_EQ(*ledger->CountRows(), rows) << "a second pass charges nothing twice";
}

// Two replicas, each its shard (a stable hash of the workload key), run as two processes at
// once: disjoint, and together the whole fleet; each checkpoints only its own workloads.
TEST_F(PrometheusIngestTest, TwoShardProcessesSplitTheFleetWithoutOverlap) {
  testing::ScopedTempDir tmp;
  std::vector<pid_t> pids;
  for (int shard = 0; shard < 2; ++shard) {
    const std::string dir = tmp.Path("shard" + std::to_string(shard));
    std::filesystem::create_directories(dir);
    std::string yaml = ConfigYaml(tmp, server_->url());
    // Each replica its own ledger and checkpoint, and its shard.
    for (const std::string name : {"ledger.db", "checkpoint"}) {
      const size_t at = yaml.find(tmp.Path(name));
      yaml.replace(at, tmp.Path(name).size(), dir + "/" + name);
    }
    yaml += "  shard:\n    index: " + std::to_string(shard) + "\n    count: 2\n";
    std::ofstream(dir + "/gpuvpa.yaml") << yaml;
    pids.push_back(testing::SpawnProcess({std::string(GPUVPA_BIN_DIR) + "/gpuvpa-recommender",
                                          "--config", dir + "/gpuvpa.yaml", "--once"},
                                         dir + "/run.log"));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> seen;
  size_t total = 0;
  for (int shard = 0; shard < 2; ++shard) {
    FleetStore store;
    Result<CheckpointLoad> load =
        LoadCheckpoint(tmp.Path("shard" + std::to_string(shard)) + "/checkpoint", store);
    ASSERT_TRUE(load.ok()) << load.status().message();
    EXPECT_GT(store.size(), 0u) << "shard " << shard;  // six workloads split both ways here
    for (uint32_t row = 0; row < store.size(); ++row) {
      const v1::WorkloadIdentity& id = store.state(row).identity;
      EXPECT_EQ(WorkloadShard(id, 2), shard);
      seen.insert(id.namespace_name() + "/" + id.owner_kind() + "/" + id.owner_name());
      ++total;
    }
  }
  EXPECT_EQ(total, 6u);
  EXPECT_EQ(seen.size(), 6u);
}

TEST(PrometheusSourceRetryTest, ThrottlingIsRetriedABoundedNumberOfTimesThenNamed) {
  testing::ScriptedHttpServer throttled(
      testing::HttpBehaviour::kTooManyRequests,
      R"({"status":"error","errorType":"unavailable","error":"too many queries"})");
  PrometheusSourceOptions options;
  options.http.base_url = throttled.url();
  options.max_retries = 2;
  options.backoff_initial_s = 0.01;
  options.backoff_max_s = 0.05;
  Result<std::unique_ptr<PrometheusSource>> source = PrometheusSource::Create(options);
  ASSERT_TRUE(source.ok());
  const double now = UnixNowSeconds();
  const PollResult poll =
      (*source)->Poll(now - 3600, now, [](std::span<const LabeledSeries>, double) {});
  EXPECT_EQ(poll.error.code(), StatusCode::kUnavailable);
  EXPECT_NE(poll.error.message().find("HTTP 429 after 3 attempts"), std::string::npos)
      << poll.error.message();
  EXPECT_NE(poll.error.message().find("kube_pod_owner"), std::string::npos);
  EXPECT_EQ(throttled.requests().size(), 3u);
  EXPECT_EQ(poll.retries, 2u);
  EXPECT_EQ(poll.through_s, now - 3600);  // nothing read: the next poll starts there again
}

TEST(PrometheusSourceRetryTest, AStopEndsThePollBeforeItsNextRequest) {
  testing::ScriptedHttpServer throttled(
      testing::HttpBehaviour::kTooManyRequests,
      R"({"status":"error","errorType":"unavailable","error":"too many queries"})");
  PrometheusSourceOptions options;
  options.http.base_url = throttled.url();
  options.max_retries = 10;
  options.backoff_initial_s = 5;  // a stop must not wait for it
  options.backoff_max_s = 5;
  Result<std::unique_ptr<PrometheusSource>> source = PrometheusSource::Create(options);
  ASSERT_TRUE(source.ok());
  std::atomic<bool> stop{false};
  (*source)->set_stop_flag(&stop);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(300));
    stop = true;
  });
  const double now = UnixNowSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  const PollResult poll =
      (*source)->Poll(now - 3600, now, [](std::span<const LabeledSeries>, double) {});
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_NE(poll.error.message().find("shutting down"), std::string::npos) << poll.error.message();
  EXPECT_EQ(throttled.requests().size(), 1u);
}

// A server that answers with points outside the asked window (a day before it, in the
// future) has them dropped and counted: only points inside the window are ingested (and so
// charged); the in-window ones all arrive.
TEST(PrometheusSourceWindowTest, PointsOutsideTheAskedWindowAreNotIngested) {
  testing::ScriptedHttpServer hostile(
      testing::HttpBehaviour::kOk,
      R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  const double now = std::floor(UnixNowSeconds() / 60) * 60;
  const double from = now - 600, until = now;  // asks (from, until]: from + 60 .. until
  std::string values;
  for (double t : {946684800.0, from - 3600, from + 60, from + 61, from + 62, until, until + 200}) {
    values += std::string(values.empty() ? "" : ",") + "[" +
              std::to_string(static_cast<int64_t>(t)) + ",\"1024\"]";
  }
  hostile.SetBodyFor("/api/v1/label/", R"({"status":"success","data":["n1"]})");
  hostile.SetBodyFor(
      "/api/v1/query_range",
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":)"
      R"("DCGM_FI_DEV_FB_USED","gpu":"0","UUID":"GPU-1","Hostname":"n1","namespace":"ml",)"
      R"("pod":"p","container":"c","modelName":"NVIDIA H100 80GB HBM3"},"values":[)" +
          values + "]}]}}");
  PrometheusSourceOptions options;
  options.http.base_url = hostile.url();
  options.step_s = 60;
  Result<std::unique_ptr<PrometheusSource>> source = PrometheusSource::Create(options);
  ASSERT_TRUE(source.ok()) << source.status().message();
  std::vector<double> times;
  const PollResult poll =
      (*source)->Poll(from, until, [&](std::span<const LabeledSeries> batch, double) {
        for (const LabeledSeries& s : batch)
          for (const MetricPoint& p : s.points) times.push_back(p.time_s);
      });
  ASSERT_TRUE(poll.error.ok()) << poll.error.message();
  EXPECT_EQ(times, (std::vector<double>{from + 60, from + 61, from + 62, until}));
  EXPECT_EQ(poll.outside_window, 3u);
  EXPECT_EQ(poll.points, 4u);
}

TEST(PrometheusSourceRetryTest, ASlowServerCostsTheTimeoutPerAttemptAndIsNamed) {
  testing::ScriptedHttpServer silent(testing::HttpBehaviour::kSilent);
  PrometheusSourceOptions options;
  options.http.base_url = silent.url();
  options.request_timeout_s = 0.3;
  options.max_retries = 1;
  options.backoff_initial_s = 0.01;
  Result<std::unique_ptr<PrometheusSource>> source = PrometheusSource::Create(options);
  ASSERT_TRUE(source.ok());
  const double now = UnixNowSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  const PollResult poll =
      (*source)->Poll(now - 3600, now, [](std::span<const LabeledSeries>, double) {});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(poll.error.code(), StatusCode::kUnavailable);
  EXPECT_NE(poll.error.message().find("kube_pod_owner"), std::string::npos) << poll.error.message();
  EXPECT_EQ(poll.retries, 1u);
  EXPECT_LT(took, 5.0);  // two attempts of 0.3 s each, not a hang (a generous bound)
}

// The real binary: /metrics (promtool-clean), gRPC List/Get/Watch, SIGTERM, restart.
TEST_F(PrometheusIngestTest, DaemonServesMetricsAndTheApiAndSurvivesARestart) {
  testing::ScopedTempDir tmp;
  const int http_port = testing::FreeLocalPort();
  const int grpc_port = testing::FreeLocalPort();
  const int cost_port = testing::FreeLocalPort();
  std::ofstream(tmp.Path("gpuvpa.yaml")) << ConfigYaml(tmp, server_->url());
  std::ofstream(tmp.Path("token")) << "cost-api-token\n";
  auto start = [&] {
    return testing::SpawnProcess(
        {std::string(GPUVPA_BIN_DIR) + "/gpuvpa-recommender", "--config", tmp.Path("gpuvpa.yaml"),
         "--listen-http", "127.0.0.1:" + std::to_string(http_port), "--listen-grpc",
         "127.0.0.1:" + std::to_string(grpc_port), "--cost-api-listen",
         "127.0.0.1:" + std::to_string(cost_port), "--cost-api-token-file", tmp.Path("token")},
        tmp.Path("daemon.log"));
  };
  auto log = [&] {
    std::ifstream in(tmp.Path("daemon.log"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto wait_ready = [&] {
    for (int i = 0; i < 300; ++i) {
      Result<HttpResponse> r =
          HttpGet("http://127.0.0.1:" + std::to_string(http_port) + "/readyz", milliseconds(500));
      if (r.ok() && r->status == 200) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  };
  auto stop = [&](pid_t& pid) {
    ::kill(pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200 && ::waitpid(pid, &status, WNOHANG) != pid; ++i)
      std::this_thread::sleep_for(milliseconds(50));
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  pid_t pid = start();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_ready()) << log();
  Result<HttpResponse> metrics =
      HttpGet("http://127.0.0.1:" + std::to_string(http_port) + "/metrics", milliseconds(2000));
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("gpuvpa_recommendation_vram_target_bytes{container=\"main\","
                               "cost_center=\"research\",namespace=\"ml\",workload=\"trainer\""),
            std::string::npos)
      << metrics->body.substr(0, 2000);
  EXPECT_NE(metrics->body.find("gpuvpa_recommender_samples_ingested_total"), std::string::npos);
  std::ofstream(tmp.Path("metrics.txt")) << metrics->body;
  EXPECT_EQ(std::system(("promtool check metrics < " + tmp.Path("metrics.txt") + " > " +
                         tmp.Path("promtool.log") + " 2>&1")
                            .c_str()),
            0)
      << std::ifstream(tmp.Path("promtool.log")).rdbuf();

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::RecommendationService::NewStub(channel);
  v1::ListRecommendationsResponse list;
  {
    grpc::ClientContext ctx;
    v1::ListRecommendationsRequest req;
    ASSERT_TRUE(stub->List(&ctx, req, &list).ok());
    EXPECT_EQ(list.recommendations_size(), 6);
    for (const v1::Recommendation& r : list.recommendations())
      EXPECT_FALSE(r.has_charts()) << "charts only when asked for";
  }
  {
    // Asked for, each recommendation carries its charts, and they pass the contract's checks.
    grpc::ClientContext ctx;
    v1::ListRecommendationsRequest req;
    req.set_include_charts(true);
    v1::ListRecommendationsResponse charted;
    ASSERT_TRUE(stub->List(&ctx, req, &charted).ok());
    ASSERT_EQ(charted.recommendations_size(), 6);
    for (int i = 0; i < charted.recommendations_size(); ++i) {
      const v1::Recommendation& r = charted.recommendations(i);
      ASSERT_TRUE(r.has_charts()) << r.identity().owner_name();
      EXPECT_FALSE(r.charts().vram().empty());
      EXPECT_EQ(r.charts().hourly_samples_size(), 168);
      EXPECT_TRUE(ValidateRecommendation(r, "recommendations[" + std::to_string(i) + "]").ok());
      v1::Recommendation plain = r;
      plain.clear_charts();
      EXPECT_EQ(plain.SerializeAsString(), list.recommendations(i).SerializeAsString());
    }
  }
  {
    grpc::ClientContext ctx;
    v1::ListRecommendationsRequest req;
    req.set_cost_center("research");
    v1::ListRecommendationsResponse only;
    ASSERT_TRUE(stub->List(&ctx, req, &only).ok());
    ASSERT_EQ(only.recommendations_size(), 1);
    EXPECT_EQ(only.recommendations(0).identity().owner_name(), "trainer");
  }
  {
    grpc::ClientContext ctx;
    v1::GetRecommendationRequest req;
    req.set_namespace_name("ml");
    req.set_owner_kind("Deployment");
    req.set_owner_name("trainer");
    req.set_container("main");
    v1::Recommendation rec;
    ASSERT_TRUE(stub->Get(&ctx, req, &rec).ok());
    EXPECT_TRUE(rec.has_target());
    req.set_owner_name("nobody");
    grpc::ClientContext ctx2;
    EXPECT_EQ(stub->Get(&ctx2, req, &rec).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListRecommendationsRequest req;
    req.set_namespace_name("web");
    auto reader = stub->Watch(&ctx, req);
    v1::RecommendationUpdate update;
    ASSERT_TRUE(reader->Read(&update));
    EXPECT_EQ(update.changed_size(), 3);
    ctx.TryCancel();
  }
  {
    // The ledger's owner serves the cost API through a read-only connection of its own: by cost
    // center, the billed cost is the ledger's showback, to the micro-dollar.
    std::unique_ptr<Ledger> reader =
        std::move(Ledger::Open(tmp.Path("ledger.db"), {.read_only = true})).value();
    bool compared = false;
    for (int attempt = 0; attempt < 20 && !compared; ++attempt) {
      const Showback before = *reader->QueryShowback({});
      int rc = 0;
      const std::string body = testing::RunShell(
          "curl -sS -H 'Authorization: Bearer cost-api-token' "
          "'http://127.0.0.1:" +
              std::to_string(cost_port) +
              "/allocation?window=0,4102444799&aggregate=costCenter&accumulate=true'",
          &rc);
      ASSERT_EQ(rc, 0) << body;
      const Showback after = *reader->QueryShowback({});
      if (before.total.billed != after.total.billed || before.total.billed == 0) {
        std::this_thread::sleep_for(milliseconds(200));  // still charging
        continue;
      }
      const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
      ASSERT_FALSE(doc.is_discarded()) << body;
      ASSERT_EQ(doc["data"].size(), 1u) << body;
      ASSERT_EQ(doc["data"][0].size(), after.groups.size()) << body;
      for (const ShowbackRow& g : after.groups)
        EXPECT_EQ(doc["data"][0][g.group]["gpuvpa"]["billedMicroUsd"], g.billed) << g.group;
      compared = true;
    }
    EXPECT_TRUE(compared) << "the ledger kept changing, or nothing was charged";
    int rc = 0;
    EXPECT_EQ(testing::RunShell("curl -s -o /dev/null -w '%{http_code}' 'http://127.0.0.1:" +
                                    std::to_string(cost_port) + "/allocation?window=7d'",
                                &rc),
              "401");
  }
  EXPECT_EQ(stop(pid), 0) << log();
  // Restart: the same recommendations from the checkpoint, before and after the first poll.
  pid = start();
  ASSERT_TRUE(wait_ready()) << log();
  auto channel2 = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                      grpc::InsecureChannelCredentials());
  auto stub2 = v1::RecommendationService::NewStub(channel2);
  grpc::ClientContext ctx;
  v1::ListRecommendationsResponse after;
  ASSERT_TRUE(stub2->List(&ctx, {}, &after).ok());
  ASSERT_EQ(after.recommendations_size(), list.recommendations_size());
  for (int i = 0; i < after.recommendations_size(); ++i) {
    EXPECT_EQ(after.recommendations(i).identity().SerializeAsString(),
              list.recommendations(i).identity().SerializeAsString());
    EXPECT_DOUBLE_EQ(after.recommendations(i).vram_target_bytes(),
                     list.recommendations(i).vram_target_bytes());
  }
  EXPECT_EQ(stop(pid), 0) << log();
}

}  // namespace
}  // namespace gpuvpa::recommender

namespace gpuvpa::recommender {
namespace {

// Ledger rows are money: a LedgerService reachable from other machines requires mTLS.
TEST_F(PrometheusIngestTest, AcceptingLedgerRowsNeedsMtlsUnlessOnLoopback) {
  testing::ScopedTempDir tmp;
  std::ofstream(tmp.Path("gpuvpa.yaml")) << ConfigYaml(tmp, server_->url());
  int rc = 0;
  const std::string out = testing::RunShell(
      "'" + std::string(GPUVPA_BIN_DIR) + "/gpuvpa-recommender' --config '" +
          tmp.Path("gpuvpa.yaml") + "' --accept-ledger-rows --listen-grpc 0.0.0.0:0",
      &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--accept-ledger-rows on 0.0.0.0:0 needs mTLS: set "
                     "recommender.client_ca_file"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace gpuvpa::recommender
