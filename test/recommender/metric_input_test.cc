// Parsers and joins of the live input on the real exporter and API outputs in
// shared/data/fixtures (read unedited), plus the edge cases they do not show.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/config/config.h"
#include "core/gpu/gpu_catalog.h"
#include "core/metrics/exposition_text.h"
#include "core/metrics/prometheus_api.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/input/dcgm_ingest.h"
#include "recommender/input/kube_state.h"
#include "recommender/logic/recommender.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::recommender {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUVPA_SHARED_DATA_DIR) + "/fixtures/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PrometheusApiTest, ParsesTheRealRangeAndInstantResponses) {
  Result<PrometheusQueryResult> range = ParsePrometheusResponse(
      Fixture("prometheus-api-query-range-matrix.json"), 200, PrometheusResultType::kMatrix, "up");
  ASSERT_TRUE(range.ok()) << range.status().message();
  ASSERT_FALSE(range->series.empty());
  EXPECT_FALSE(range->series[0].points.empty());
  EXPECT_FALSE(range->series[0].metric.empty());

  Result<PrometheusQueryResult> fb =
      ParsePrometheusResponse(Fixture("prometheus-api-query-dcgm-fb-used-vector-honorlabels.json"),
                              200, PrometheusResultType::kVector, "DCGM_FI_DEV_FB_USED");
  ASSERT_TRUE(fb.ok()) << fb.status().message();
  size_t with_pod = 0;
  for (const LabeledSeries& s : fb->series) {
    EXPECT_EQ(s.metric, "DCGM_FI_DEV_FB_USED");
    ASSERT_EQ(s.points.size(), 1u);
    if (s.Label("container") == "main") {
      ++with_pod;
      EXPECT_EQ(s.points[0].value, 74166);
    }
  }
  EXPECT_EQ(with_pod, 1u);

  Result<PrometheusQueryResult> hist =
      ParsePrometheusResponse(Fixture("prometheus-api-openapi-query-range-native-histograms.json"),
                              200, PrometheusResultType::kMatrix, "http_request_duration_seconds");
  ASSERT_TRUE(hist.ok()) << hist.status().message();
  EXPECT_EQ(hist->skipped_histograms, 1u);
}

TEST(PrometheusApiTest, ErrorsNameTheQueryAndWhatWasWrong) {
  Result<PrometheusQueryResult> r =
      ParsePrometheusResponse(Fixture("prometheus-api-error-tsdb-not-ready.json"), 503,
                              PrometheusResultType::kMatrix, "DCGM_FI_DEV_FB_USED");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("TSDB not ready"), std::string::npos);
  EXPECT_NE(r.status().message().find("DCGM_FI_DEV_FB_USED"), std::string::npos);

  r = ParsePrometheusResponse(R"({"status":"error","errorType":"bad_data","error":"parse error"})",
                              400, PrometheusResultType::kMatrix, "sum(");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  r = ParsePrometheusResponse(Fixture("prometheus-api-query-instant-vector.json"), 200,
                              PrometheusResultType::kMatrix, "up");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("resultType is \"vector\", expected \"matrix\""),
            std::string::npos)
      << r.status().message();

  r = ParsePrometheusResponse("<html>502 Bad Gateway</html>", 502, PrometheusResultType::kMatrix,
                              "up");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("HTTP 502"), std::string::npos);

  // Warnings (a partial response) are kept; bad values are skipped and counted.
  r = ParsePrometheusResponse(
      R"({"status":"success","warnings":["partial response: store b down"],"data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},"values":[[1,"1"],[2,"NaN"],[3,"+Inf"],[4,"2"],["5","3"]]}]}})",
      200, PrometheusResultType::kMatrix, "x");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->series[0].points.size(), 2u);
  EXPECT_EQ(r->skipped_points, 3u);

  r = ParsePrometheusResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}})",
      200, PrometheusResultType::kMatrix, "x");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("label \"a\""), std::string::npos);
}

TEST(ExpositionTextTest, EveryDcgmAndKubeStateFixtureParses) {
  size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(GPUVPA_SHARED_DATA_DIR) + "/fixtures")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".txt" || name.rfind("NOTICE", 0) == 0 ||
        name.rfind("LICENSE", 0) == 0)
      continue;
    ++files;
    Result<ExpositionParse> p = ParseExpositionText(Fixture(name), {TimestampUnit::kAuto, 1.7e9});
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_GT(p->samples, 0u) << name;
    // Only the README's "..." elisions are not samples.
    for (const ExpositionIssue& issue : p->issues)
      EXPECT_NE(issue.message.find("does not start with a metric name"), std::string::npos)
          << name << ":" << issue.line << ": " << issue.message;
  }
  EXPECT_GE(files, 15u);
}

TEST(ExpositionTextTest, TimestampsSecondsForOpenMetricsMillisecondsOtherwise) {
  Result<ExpositionParse> prom = ParseExpositionText("a{x=\"1\"} 5 1700000000000\n");
  ASSERT_TRUE(prom.ok());
  ASSERT_EQ(prom->series.size(), 1u);
  EXPECT_DOUBLE_EQ(prom->series[0].points[0].time_s, 1.7e9);
  Result<ExpositionParse> om = ParseExpositionText("a{x=\"1\"} 5 1700000000.5\n# EOF\n");
  ASSERT_TRUE(om.ok());
  EXPECT_TRUE(om->openmetrics);
  EXPECT_DOUBLE_EQ(om->series[0].points[0].time_s, 1700000000.5);
  // Escapes, spaces after commas, repeated series grouped, sorted by time.
  Result<ExpositionParse> p = ParseExpositionText(
      "m{a=\"q\\\"x\", b=\"y\"} 1 3000\nm{b=\"y\",a=\"q\\\"x\"} 2 1000\nm{a=\"z\"} NaN 1000\n");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->series.size(), 1u);
  EXPECT_EQ(p->series[0].Label("a"), "q\"x");
  ASSERT_EQ(p->series[0].points.size(), 2u);
  EXPECT_EQ(p->series[0].points[0].value, 2);
  EXPECT_EQ(p->non_finite, 1u);
  // No timestamp and no scrape time: a malformed line naming why.
  Result<ExpositionParse> bare = ParseExpositionText("m 1\nm{a=\"b\" 1 2\n");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->malformed, 2u);
  EXPECT_NE(bare->issues[0].message.find("no timestamp"), std::string::npos);
  EXPECT_FALSE(ParseExpositionText(std::string("m 1\0", 4)).ok());
}

KubeState FromText(const std::string& text) {
  KubeState k;
  Result<ExpositionParse> p = ParseExpositionText(text, {TimestampUnit::kAuto, 1.7e9});
  EXPECT_TRUE(p.ok());
  for (const LabeledSeries& s : p->series) k.Add(s);
  return k;
}

TEST(KubeStateTest, OwnersRequestsAndLabelsFromTheRealOutputs) {
  KubeState k = FromText(Fixture("kube-state-metrics-pod-owner-replicaset.txt") +
                         Fixture("kube-state-metrics-replicaset-owner-deployment.txt") +
                         Fixture("kube-state-metrics-pod-owner-none.txt") +
                         Fixture("kube-state-metrics-pod-container-resources-nvidia-gpu.txt") +
                         Fixture("kube-state-metrics-namespace-labels-pre-v2.0.txt") +
                         "kube_pod_owner{namespace=\"ns1\",pod=\"web-abc\",owner_kind="
                         "\"ReplicaSet\",owner_name=\"rs1\"} 1\n");
  // ReplicaSet → Deployment through kube_replicaset_owner.
  PodOwner o = k.ResolveOwner("ns1", "web-abc");
  EXPECT_EQ(o.kind, "Deployment");
  EXPECT_EQ(o.name, "dp-name");
  EXPECT_EQ(o.source, OwnerSource::kKubeStateMetrics);
  // A ReplicaSet KSM knows no owner of, whose name is no "<deployment>-<hash>": itself.
  o = k.ResolveOwner("ns2", "pod2");
  EXPECT_EQ(o.kind, "ReplicaSet");
  EXPECT_EQ(o.name, "rs-name");
  // Empty owner labels (v2.8+): the bare pod.
  o = k.ResolveOwner("ns1", "pod1");
  EXPECT_EQ(o.kind, "Pod");
  EXPECT_EQ(o.name, "pod1");
  // The GPU request of the container that has one.
  std::optional<GpuAllocation> a = k.Request("ns1", "pod1", "pod1_con1", 0, nullptr);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ToString(), "nvidia.com/gpu=1");
  EXPECT_FALSE(k.Request("ns1", "pod1", "pod1_con2", 0, nullptr).has_value());
  // Cost center from a namespace label (KSM's sanitized key).
  CostCenterRules rules;
  rules.namespace_label_key = "app";
  EXPECT_EQ(k.CostCenter(rules, "ns2", o), "example2");
  EXPECT_EQ(k.CostCenter(rules, "ns9", o), "unallocated");
}

TEST(KubeStateTest, MigAndSharedRequestsAndAnnotations) {
  const GpuModel* a100 = *GpuCatalog::BuiltIn().FindModel("A100-80GB");
  KubeState k = FromText(
      "kube_pod_container_resource_requests{namespace=\"n\",pod=\"p\",container=\"c\","
      "resource=\"nvidia_com_mig_1g_10gb\",unit=\"integer\"} 2\n"
      "kube_pod_container_resource_requests{namespace=\"n\",pod=\"q\",container=\"c\","
      "resource=\"nvidia_com_gpu_shared\",unit=\"integer\"} 1\n"
      "kube_pod_container_resource_requests{namespace=\"n\",pod=\"r\",container=\"c\","
      "resource=\"nvidia_com_gpu\",unit=\"integer\"} 0.5\n"
      "kube_deployment_annotations{namespace=\"n\",deployment=\"d\","
      "annotation_gpuvpa_io_cost_center=\"team-a\"} 1\n");
  EXPECT_EQ(k.Request("n", "p", "c", 0, a100)->ToString(), "nvidia.com/mig-1g.10gb=2");
  EXPECT_EQ(k.Request("n", "q", "c", 4, a100)->ToString(), "nvidia.com/gpu.shared=1/4");
  EXPECT_FALSE(k.Request("n", "r", "c", 0, a100).has_value());  // not a whole number
  EXPECT_EQ(k.CostCenter({}, "n", {"Deployment", "d", OwnerSource::kKubeStateMetrics}), "team-a");
}

TEST(KubeStateTest, ForgetsObjectsKubeStateMetricsNoLongerReports) {
  KubeState k;
  Result<ExpositionParse> p = ParseExpositionText(
      "kube_pod_owner{namespace=\"n\",pod=\"old-pod\",owner_kind=\"Job\",owner_name=\"j\"} 1 1000\n"
      "kube_pod_owner{namespace=\"n\",pod=\"new-pod\",owner_kind=\"Job\",owner_name=\"k\"} 1 5000\n"
      "kube_namespace_labels{namespace=\"n\",label_cost_center=\"a\"} 1 1000\n# EOF\n");
  ASSERT_TRUE(p.ok());
  for (const LabeledSeries& s : p->series) k.Add(s);
  EXPECT_EQ(k.ForgetBefore(2000), 2u);
  EXPECT_EQ(k.pods_known(), 1u);
  EXPECT_EQ(k.ResolveOwner("n", "old-pod").source, OwnerSource::kBarePod);
  EXPECT_EQ(k.ResolveOwner("n", "new-pod").name, "k");
}

TEST(KubeStateTest, PodNameRule) {
  EXPECT_EQ(OwnerFromPodName("web-7d9f8b6c5d-x2x4z").kind, "Deployment");
  EXPECT_EQ(OwnerFromPodName("web-7d9f8b6c5d-x2x4z").name, "web");
  EXPECT_EQ(OwnerFromPodName("db-0").kind, "StatefulSet");
  EXPECT_EQ(OwnerFromPodName("db-0").name, "db");
  EXPECT_EQ(OwnerFromPodName("my-job-abcde").kind, "Pod");  // vowels: not a generated suffix
  EXPECT_EQ(OwnerFromPodName("standalone").kind, "Pod");
}

TEST(DcgmIngestTest, NoValueMarkersFutureTimesUnknownModelsAndBrokenMigLabels) {
  FleetStore store;
  DcgmIngestOptions options;
  options.now_s = 1.8e9;
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), options);
  Result<ExpositionParse> p = ParseExpositionText(
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"G\",modelName=\"NVIDIA H100 80GB HBM3\",namespace="
      "\"a\",pod=\"p-0\",container=\"c\"} 9223372036854775794 1700000000\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"G\",modelName=\"NVIDIA H100 80GB HBM3\",namespace="
      "\"a\",pod=\"p-0\",container=\"c\"} 100 1700000060\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"G\",modelName=\"NVIDIA H100 80GB HBM3\",namespace="
      "\"a\",pod=\"p-0\",container=\"c\"} 100 1900000000\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"G\",modelName=\"NVIDIA H100 80GB HBM3\",namespace="
      "\"a\",pod=\"p-0\",container=\"c\"} 250 1700000060\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"H\",modelName=\"Fancy GPU 9000\",namespace=\"a\","
      "pod=\"q-0\",container=\"c\"} 100 1700000060\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"2\",UUID=\"M\",modelName=\"NVIDIA H100 80GB HBM3\","
      "GPU_I_PROFILE=\"1g.10gb\",namespace=\"a\",pod=\"r-0\",container=\"c\"} 100 1700000060\n"
      "# EOF\n");
  ASSERT_TRUE(p.ok());
  const DcgmIngestReport r = ingester.Ingest(p->series);
  EXPECT_EQ(r.accepted, 0u);
  EXPECT_EQ(r.no_value_markers, 1u);
  EXPECT_GE(r.refused, 3u);  // the future sample, the unknown model, the SM out of range
  std::string all;
  for (const std::string& i : r.issues) all += i + "\n";
  EXPECT_NE(all.find("Fancy GPU 9000"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU_I_ID"), std::string::npos) << all;
  EXPECT_NE(all.find("gpu_util 250"), std::string::npos) << all;
}

TEST(DaemonConfigTest, ErrorsNameTheFieldAndValue) {
  auto error = [](const std::string& yaml) {
    Result<DaemonConfig> c = ParseDaemonConfig(yaml, "g.yaml");
    return c.ok() ? std::string("ok") : c.status().message();
  };
  const std::string base =
      "prometheus:\n  server_address: http://127.0.0.1:9090\ncheckpoint: /tmp/c\n";
  EXPECT_EQ(error(base), "ok");
  EXPECT_NE(error("checkpoint: /tmp/c\n").find("recommender.prometheus"), std::string::npos);
  EXPECT_NE(error(base + "histroy_days: 7\n").find("unknown key \"histroy_days\""),
            std::string::npos);
  EXPECT_NE(error(base + "history_days: -1\n").find("history_days"), std::string::npos);
  EXPECT_NE(error("prometheus:\n  server_address: ftp://x\ncheckpoint: /c\n").find("ftp://x"),
            std::string::npos)
      << error("prometheus:\n  server_address: ftp://x\ncheckpoint: /c\n");
  EXPECT_NE(error("prometheus:\n  server_address: http://x\n  step_seconds: 1\n"
                  "  chunk_seconds: 86400\ncheckpoint: /c\n")
                .find("10,000 steps"),
            std::string::npos);
  EXPECT_NE(error(base + "shard: {index: 2, count: 2}\n").find("shard.index"), std::string::npos);
  EXPECT_NE(error(base + "dcgm: {pod_labels: [pod]}\n").find("same length"), std::string::npos);
  Result<DaemonConfig> renamed =
      ParseDaemonConfig(base + "dcgm: {vram_mib_metrics: [my_fb_used]}\n", "g.yaml");
  ASSERT_TRUE(renamed.ok()) << renamed.status().message();
  EXPECT_EQ(renamed->prometheus.dcgm.vram_mib, std::vector<std::string>{"my_fb_used"});
  EXPECT_NE(error(base + "node_agent: {enabled: yes please}\n").find("node_agent.enabled"),
            std::string::npos)
      << error(base + "node_agent: {enabled: yes please}\n");
  EXPECT_NE(error(base + "node_agent: {enabeld: true}\n").find("unknown key \"enabeld\""),
            std::string::npos);
  EXPECT_NE(error(base + "node_agent: {node_label: \"\"}\n").find("node_agent.node_label"),
            std::string::npos);
  Result<DaemonConfig> agent = ParseDaemonConfig(base + "node_agent: {enabled: true}\n", "g.yaml");
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  EXPECT_TRUE(agent->prometheus.dcgm.node_agent.enabled);
  EXPECT_FALSE(ParseDaemonConfig(base, "g.yaml")->prometheus.dcgm.node_agent.enabled)
      << "a source the config names";
}

TEST(DaemonConfigTest, TheShippedExampleParses) {
  std::ifstream in(std::string(GPUVPA_SOURCE_DIR) + "/deploy/config/recommender-example.yaml");
  std::stringstream text;
  text << in.rdbuf();
  Result<GpuvpaConfig> gpuvpa = ParseConfig(text.str());
  ASSERT_TRUE(gpuvpa.ok()) << gpuvpa.status().message();
  Result<DaemonConfig> c = ParseDaemonConfig(gpuvpa->recommender_yaml, "example");
  // Every key is known; only the in-cluster files (token, CA) are missing on this machine.
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/var/run/secrets/kubernetes.io/serviceaccount/"),
            std::string::npos)
      << c.status().message();
}

TEST(DcgmIngestTest, RenamedMetricsAndLabelsAreRead) {
  FleetStore store;
  DcgmIngestOptions options;
  options.now_s = 1.8e9;
  options.names.vram_mib = {"my_fb_used"};
  options.names.gpu_util_percent = {"my_util"};
  options.names.pod_labels = {"k8s_pod"};
  options.names.namespace_labels = {"k8s_ns"};
  options.names.container_labels = {"k8s_container"};
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), options);
  Result<ExpositionParse> p = ParseExpositionText(
      "my_fb_used{gpu=\"0\",UUID=\"G\",modelName=\"Tesla T4\",k8s_ns=\"a\",k8s_pod=\"p-0\","
      "k8s_container=\"c\"} 1000 1700000000\n"
      "my_util{gpu=\"0\",UUID=\"G\",modelName=\"Tesla T4\",k8s_ns=\"a\",k8s_pod=\"p-0\","
      "k8s_container=\"c\"} 50 1700000000\n# EOF\n");
  ASSERT_TRUE(p.ok());
  const DcgmIngestReport r = ingester.Ingest(p->series);
  EXPECT_EQ(r.accepted, 1u);
  ASSERT_EQ(store.size(), 1u);
  EXPECT_EQ(store.state(0).identity.owner_kind(), "StatefulSet");
  EXPECT_DOUBLE_EQ(store.state(0).vram_history_peak_bytes, 1000.0 * 1024 * 1024);
}

// gpuvpa-node-agent's series for the shared phase below, as Prometheus stores them when a
// PodMonitor without honorLabels scrapes the agent: its namespace/pod/container labels moved to
// exported_*, the target's own in their place. A's SM is solo-calibrated (26 % of the device);
// B's (38 %) busy-proportional for 5 minutes, then solo-calibrated (two series). A process the
// agent could not name carries only the target's labels.
std::string AgentSeries(int i, const std::string& t) {
  const std::string target =
      "namespace=\"gpuvpa-node-agent\",pod=\"gpuvpa-node-agent-x7\","
      "container=\"agent\",node=\"n1\",gpu=\"0\",gpu_uuid=\"GPU-5a1e\","
      "gpu_instance=\"\",model_name=\"NVIDIA H200\"";
  auto of = [&](const char* pod, const std::string& method) {
    return "{" + target + ",exported_namespace=\"ml\",exported_pod=\"" + pod +
           "\",exported_container=\"main\",method=\"" + method + "\"} ";
  };
  const std::string a = of("a-0", "solo-calibrated");
  const std::string b = of("b-0", i < 5 ? "busy-proportional" : "solo-calibrated");
  std::string text;
  text += "gpuvpa_container_gpu_memory_used_bytes" + a + std::to_string(9523.0 * 1048576) + t;
  text += "gpuvpa_container_gpu_busy_ratio" + a + "0.30" + t;
  text += "gpuvpa_container_gpu_sm_active_ratio" + a + "0.26" + t;
  text += "gpuvpa_container_gpu_memory_used_bytes" + b + std::to_string(43110.0 * 1048576) + t;
  text += "gpuvpa_container_gpu_busy_ratio" + b + "0.44" + t;
  text += "gpuvpa_container_gpu_sm_active_ratio" + b + "0.38" + t;
  text += "gpuvpa_container_gpu_memory_used_bytes{" + target + ",method=\"none\"} 1048576" + t;
  return text;
}

// The real H200's shared phase (DESIGN.md "Metric sources"): pod A held 9.3 GiB busy 30 %,
// pod B 42.1 GiB busy 44 %, time-sliced on one device reading 52 GiB, util.gpu 72 %, GPM SM
// active 64 %. dcgm-exporter's per-pod mode gives each pod its own FB_USED and GPU_UTIL; the
// profiling metric stays the device's (on a pod-less series, or copied to each pod's labels).
// Without that mode, the device's counters copied to each pod are split equally.
std::string SharedH200(const std::string& mode) {
  const std::string dev = "gpu=\"0\",UUID=\"GPU-5a1e\",modelName=\"NVIDIA H200\",Hostname=\"n1\"";
  auto pod = [&](const char* name) {
    return dev + ",namespace=\"ml\",pod=\"" + name + "\",container=\"main\"";
  };
  std::string text;
  for (int i = 0; i < 10; ++i) {
    const std::string t = " " + std::to_string(1700000000 + 60 * i) + "\n";
    if (mode == "equal" || mode == "agent") {
      for (const char* p : {"a-0", "b-0"}) {
        text += "DCGM_FI_DEV_FB_USED{" + pod(p) + "} 53248" + t;
        text += "DCGM_FI_DEV_GPU_UTIL{" + pod(p) + "} 72" + t;
        text += "DCGM_FI_PROF_SM_ACTIVE{" + pod(p) + "} 0.64" + t;
      }
      if (mode == "agent") text += AgentSeries(i, t);
      continue;
    }
    text += "DCGM_FI_DEV_FB_USED{" + pod("a-0") + "} 9523" + t;
    text += "DCGM_FI_DEV_FB_USED{" + pod("b-0") + "} 43110" + t;
    text += "DCGM_FI_DEV_GPU_UTIL{" + pod("a-0") + "} 30" + t;
    text += "DCGM_FI_DEV_GPU_UTIL{" + pod("b-0") + "} 44" + t;
    if (mode == "per-pod, device series") text += "DCGM_FI_PROF_SM_ACTIVE{" + dev + "} 0.64" + t;
    if (mode == "per-pod, copied")
      for (const char* p : {"a-0", "b-0"})
        text += "DCGM_FI_PROF_SM_ACTIVE{" + pod(p) + "} 0.64" + t;
  }
  return text + "# EOF\n";
}

struct PodFigures {
  double vram_mib = 0, sm_share = 0;  // sm_share: of the whole device
  bool split = false, per_process = false;
  SmBasis basis = SmBasis::kMeasured;
  double vram_target_bytes = 0, sm_p90 = 0;  // the recommendation
  std::string report;                        // the table `gpuvpa recommend` prints
};

std::map<std::string, PodFigures> IngestShared(const std::string& mode, bool agent = false,
                                               DcgmIngestReport* report = nullptr) {
  FleetStore store;
  DcgmIngestOptions options;
  options.now_s = 1.8e9;
  options.names.node_agent.enabled = agent;
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), options);
  Result<ExpositionParse> p = ParseExpositionText(SharedH200(mode));
  EXPECT_TRUE(p.ok()) << p.status().message();
  const DcgmIngestReport r = ingester.Ingest(p->series);
  if (report != nullptr) *report = r;
  EXPECT_EQ(r.accepted, 20u) << mode;
  std::map<std::string, PodFigures> out;
  for (uint32_t row = 0; row < store.size(); ++row) {
    const WorkloadState& st = store.state(row);
    PodFigures& f = out[st.identity.owner_name()];
    f.vram_mib = st.vram_history_peak_bytes / (1024.0 * 1024.0);
    // Used SM GPU-seconds over allocated ones is the share of the allocation; times the
    // allocation's share of the device, the share of the device.
    f.sm_share = st.used_sm_gpu_seconds / st.observed_seconds;
    f.split = st.shared_device_estimate;
    f.per_process = st.per_process_usage;
    f.basis = st.sm_basis;
    RecommenderOptions rec_options;
    rec_options.min_history_s = 0;
    const Recommendation rec = Recommender(rec_options).Recommend(store, row);
    f.vram_target_bytes = rec.vram_target_bytes;
    f.sm_p90 = rec.sm_p90_ratio;
    FormatOptions wide;
    wide.wide = true;
    f.report = FormatRecommendations({rec}, store, wide);
  }
  return out;
}

TEST(DcgmIngestTest, PerPodSeriesOfASharedDeviceAreUsedInsteadOfTheEqualSplit) {
  // Equal split: 26 GiB and 32 % of the device each, flagged as an estimate.
  std::map<std::string, PodFigures> equal = IngestShared("equal");
  ASSERT_EQ(equal.size(), 2u);
  for (const auto& [name, f] : equal) {
    EXPECT_DOUBLE_EQ(f.vram_mib, 26624) << name;
    EXPECT_NEAR(f.sm_share, 0.32, 1e-9) << name;
    EXPECT_TRUE(f.split);
    EXPECT_FALSE(f.per_process);
    EXPECT_EQ(f.basis, SmBasis::kMeasured);
    EXPECT_NE(f.report.find("usage split between pods (estimate)"), std::string::npos) << f.report;
  }
  EXPECT_DOUBLE_EQ(equal["a"].vram_target_bytes, equal["b"].vram_target_bytes);
  // Per-pod mode, the device's SM activity on a pod-less series or copied to each pod: each
  // pod's own VRAM, and 64 % of the device shared by busy time (30 : 44).
  for (const char* mode : {"per-pod, device series", "per-pod, copied"}) {
    std::map<std::string, PodFigures> per_pod = IngestShared(mode);
    ASSERT_EQ(per_pod.size(), 2u) << mode;
    const PodFigures& a = per_pod["a"];
    const PodFigures& b = per_pod["b"];
    EXPECT_DOUBLE_EQ(a.vram_mib, 9523) << mode;
    EXPECT_DOUBLE_EQ(b.vram_mib, 43110) << mode;
    EXPECT_NEAR(a.sm_share, 0.64 * 30 / 74, 1e-9) << mode;
    EXPECT_NEAR(b.sm_share, 0.64 * 44 / 74, 1e-9) << mode;
    EXPECT_NEAR(a.sm_share + b.sm_share, 0.64, 1e-9) << "the device's activity, all of it";
    for (const PodFigures* f : {&a, &b}) {
      EXPECT_FALSE(f->split) << mode;
      EXPECT_TRUE(f->per_process) << mode;
      EXPECT_EQ(f->basis, SmBasis::kSmActiveByBusyShare) << mode;
      EXPECT_NE(f->report.find("per-pod (per-process) readings"), std::string::npos) << f->report;
      EXPECT_NE(f->report.find("SM activity split by busy time"), std::string::npos) << f->report;
    }
    // Different recommendations: A's VRAM target is sized on its 9.3 GiB, below the equal
    // split's 26 GiB; B's on its 42.1 GiB, above it (the equal split would have OOMed B).
    EXPECT_LT(a.vram_target_bytes, 0.5 * equal["a"].vram_target_bytes) << mode;
    EXPECT_GT(b.vram_target_bytes, 1.5 * equal["b"].vram_target_bytes) << mode;
    EXPECT_GE(b.vram_target_bytes, 43110.0 * 1024 * 1024) << mode;
    EXPECT_LT(a.sm_p90, b.sm_p90) << mode;
  }
  // GPU_UTIL alone: busy time stands in for SM activity, and says so.
  std::map<std::string, PodFigures> busy = IngestShared("per-pod, busy only");
  EXPECT_NEAR(busy["a"].sm_share, 0.30, 1e-9);
  EXPECT_NEAR(busy["b"].sm_share, 0.44, 1e-9);
  EXPECT_EQ(busy["a"].basis, SmBasis::kBusyTime);
  EXPECT_TRUE(busy["b"].per_process);
  EXPECT_NE(busy["a"].report.find("SM figures are busy time (GPU_UTIL), not SM coverage"),
            std::string::npos)
      << busy["a"].report;
}

TEST(DcgmIngestTest, TheNodeAgentsSeriesWinOverDcgmForTheContainersItReports) {
  // Not named as a source: the agent's series are not read, DCGM's are split equally.
  DcgmIngestReport ignored;
  std::map<std::string, PodFigures> off = IngestShared("agent", false, &ignored);
  EXPECT_DOUBLE_EQ(off["a"].vram_mib, 26624);
  EXPECT_TRUE(off["a"].split);
  EXPECT_EQ(ignored.agent_samples, 0u);
  // Named: each pod's own VRAM and the agent's SM attribution, DCGM's points superseded.
  DcgmIngestReport r;
  std::map<std::string, PodFigures> on = IngestShared("agent", true, &r);
  ASSERT_EQ(on.size(), 2u);
  EXPECT_EQ(r.agent_samples, 20u);
  EXPECT_EQ(r.superseded_by_agent, 20u) << "both pods' DCGM points";
  EXPECT_EQ(r.no_pod, 10u) << "the unnamed process: the agent's own labels are no pod";
  EXPECT_TRUE(r.issues.empty()) << r.issues.front();
  const PodFigures& a = on["a"];
  const PodFigures& b = on["b"];
  EXPECT_DOUBLE_EQ(a.vram_mib, 9523);
  EXPECT_DOUBLE_EQ(b.vram_mib, 43110);
  EXPECT_NEAR(a.sm_share, 0.26, 1e-9);
  EXPECT_NEAR(b.sm_share, 0.38, 1e-9);
  for (const PodFigures* f : {&a, &b}) {
    EXPECT_FALSE(f->split);
    EXPECT_TRUE(f->per_process);
    EXPECT_NE(f->report.find("per-pod (per-process) readings"), std::string::npos) << f->report;
  }
  EXPECT_EQ(a.basis, SmBasis::kSmActiveSoloCalibrated);
  EXPECT_NE(a.report.find("busy time x coverage learned alone"), std::string::npos) << a.report;
  EXPECT_EQ(b.basis, SmBasis::kSmActiveByBusyShare) << "the weakest of its samples";
  // Different from DCGM's per-pod mode (64 % x 30:44 = 25.9 % and 38.1 %) only by the agent's
  // figures; from the equal split by far.
  EXPECT_LT(a.vram_target_bytes, 0.5 * off["a"].vram_target_bytes);
  EXPECT_GE(b.vram_target_bytes, 43110.0 * 1024 * 1024);
}

TEST(DcgmIngestTest, TheNodeAgentsMethodGivesTheBasisAndAnUnknownOneIsNamed) {
  FleetStore store;
  DcgmIngestOptions options;
  options.now_s = 1.8e9;
  options.names.node_agent.enabled = true;
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), options);
  auto series = [](const std::string& pod, const std::string& method, double sm,
                   const std::string& mig = "") {
    const std::string l = "{namespace=\"ml\",pod=\"" + pod +
                          "\",container=\"main\",node=\"n1\",gpu=\"0\",gpu_uuid=\"GPU-5a1e\","
                          "model_name=\"NVIDIA H200\",method=\"" +
                          method + "\"" + mig + "} ";
    return "gpuvpa_container_gpu_memory_used_bytes" + l + "1073741824 1700000000\n" +
           "gpuvpa_container_gpu_busy_ratio" + l + "0.5 1700000000\n" +
           "gpuvpa_container_gpu_sm_active_ratio" + l + std::to_string(sm) + " 1700000000\n";
  };
  // A MIG instance's series (its own device, SM a ratio of the instance), and one without the
  // profile (left to DCGM).
  const std::string mig = ",gpu_instance=\"7\",mig_profile=\"1g.18gb\"";
  Result<ExpositionParse> p =
      ParseExpositionText(series("a-0", "guess", 0.1) + series("m-0", "mps-equal-split", 0.2) +
                          series("g-0", "alone", 0.3, mig) +
                          series("x-0", "alone", 0.3, ",gpu_instance=\"8\"") + "# EOF\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const DcgmIngestReport r = ingester.Ingest(p->series);
  EXPECT_EQ(r.accepted, 3u);
  EXPECT_EQ(r.agent_mig_series, 1u);
  ASSERT_EQ(store.size(), 3u);
  const WorkloadState& g = store.state(2);
  EXPECT_EQ(g.identity.owner_name(), "g");
  EXPECT_EQ(g.identity.allocation(), "nvidia.com/mig-1g.18gb=1");
  EXPECT_DOUBLE_EQ(g.used_sm_gpu_seconds / g.observed_seconds, 0.3 * g.unit.device_fraction);
  EXPECT_FALSE(g.shared_device_estimate) << "alone on its instance";
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_NE(r.issues[0].find("method \"guess\" is not alone, idle, solo-calibrated"),
            std::string::npos)
      << r.issues[0];
  for (uint32_t row = 0; row < 2; ++row) {
    const WorkloadState& st = store.state(row);
    EXPECT_DOUBLE_EQ(st.vram_history_peak_bytes, 1073741824.0);
    EXPECT_TRUE(st.per_process_usage);
    if (st.identity.owner_name() == "a") {
      EXPECT_EQ(st.sm_basis, SmBasis::kBusyTime) << "the unknown method's busy time";
      EXPECT_FALSE(st.shared_device_estimate);
    } else {
      // MPS clients share the device's measured activity equally: an estimate, flagged.
      EXPECT_EQ(st.sm_basis, SmBasis::kMeasured);
      EXPECT_TRUE(st.shared_device_estimate);
    }
  }
}

TEST(DcgmIngestTest, TheBasisOfTheFiguresSurvivesACheckpointAndABadOneIsRefused) {
  FleetStore store;
  DcgmIngestOptions options;
  options.now_s = 1.8e9;
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), options);
  Result<ExpositionParse> p = ParseExpositionText(SharedH200("per-pod, busy only"));
  ASSERT_TRUE(p.ok());
  ingester.Ingest(p->series);
  Result<FleetStore> back = DecodeCheckpoint(EncodeCheckpoint(store, 1.8e9), {});
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_TRUE(back->state(0).per_process_usage);
  EXPECT_EQ(back->state(0).sm_basis, SmBasis::kBusyTime);
  store.mutable_state(0).sm_basis = static_cast<SmBasis>(9);
  Result<FleetStore> bad = DecodeCheckpoint(EncodeCheckpoint(store, 1.8e9), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sm_basis 9"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace gpuvpa::recommender
