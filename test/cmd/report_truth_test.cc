// The owner reports tell the truth (issue 24): every YAML document of a change is its own
// block with its own command, and each applies (kubectl patch --local against the rendered
// workload; a new ScaledObject passes KEDA's released schema and the scaler's own parser); a
// ScaledObject meters a replica at the share the plan priced and exists only for a known
// queue; CUDA OOMs show in every format and raise the risk; a multi-GPU pod states its SM need
// per GPU and in total; the Markdown fits a pull-request comment whatever the fleet.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cmd/commands.h"
#include "core/base/atomic_file.h"
#include "core/cost/price_book.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/cmd/commands.h"
#include "scaler/metadata/scaled_object_config.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/process.h"
#include "test/support/temp_dir.h"
#include "updater/report/report.h"

namespace gpuvpa::updater {
namespace {

using cmd::RunPlanCommand;

using nlohmann::json;

class ReportTruthTest : public ::testing::Test {
 protected:
  // The demo fleet planned with the demo's policy (the nightly trainer consumes a known queue,
  // the notebook none): the report in every format under dir_/r.
  void PlanDemo(const std::string& policy_path = std::string(GPUVPA_SOURCE_DIR) +
                                                 "/deploy/config/demo-policy.yaml") {
    std::ostringstream out, err;
    ASSERT_EQ(recommender::RunDemoTraceCommand({"--out", dir_.Path("demo.csv")}, out, err), 0);
    ASSERT_EQ(recommender::RunRecommendCommand(
                  {"--trace", dir_.Path("demo.csv"), "--checkpoint", dir_.Path("ckpt")}, out, err),
              0)
        << err.str();
    ASSERT_EQ(RunPlanCommand({"--checkpoint", dir_.Path("ckpt"), "--policy", policy_path,
                              "--report", dir_.Path("r"), "--format", "html,md,json,csv"},
                             out, err),
              0)
        << err.str();
    report_ = json::parse(*ReadWholeFile(dir_.Path("r/report.json")));
    for (const json& cc : report_["cost_centers"])
      for (const json& ns : cc["namespaces"])
        for (const json& w : ns["workloads"]) workloads_[w["owner_name"].get<std::string>()] = w;
  }

  testing::ScopedTempDir dir_;
  json report_;
  std::map<std::string, json> workloads_;
};

TEST_F(ReportTruthTest, EachChangeDocumentIsOneObjectWithItsOwnCommandAndApplies) {
  PlanDemo();
  int patches = 0, created = 0;
  for (const auto& [name, w] : workloads_) {
    if (w["action"] == "no_change") {
      EXPECT_TRUE(w["changes"].empty()) << name;
      continue;
    }
    for (const json& change : w["changes"]) {
      const std::string yaml = change["yaml"], command = change["command"];
      const std::vector<YAML::Node> docs = YAML::LoadAll(yaml);
      ASSERT_EQ(docs.size(), 1u) << name << ": one document per block\n" << yaml;
      const std::string file = dir_.Path(change["file"].get<std::string>());
      std::ofstream(file) << yaml;
      int rc = 0;
      if (command.find(" patch ") != std::string::npos) {
        ++patches;
        // The workload as the API holds it today, patched locally by kubectl with exactly the
        // command's patch type.
        Result<GpuAllocation> from = ParseGpuAllocation(w["from"]["allocation"].get<std::string>());
        ASSERT_TRUE(from.ok());
        const GpuResourceRequest before = ResourceRequestOf(*from);
        const json object = testing::KubeTestCluster::Workload(
            w["owner_kind"], w["namespace"], name, w["container"], before.name, before.quantity);
        std::ofstream(dir_.Path(name + ".json")) << object.dump();
        EXPECT_NE(
            command.find("--type strategic --patch-file " + change["file"].get<std::string>()),
            std::string::npos)
            << command;
        const std::string patched = testing::RunShell(
            "KUBECONFIG=/dev/null '" + testing::KubeTestCluster::RenderingKubectlPath() +
                "' patch --local -f '" + dir_.Path(name + ".json") +
                "' --type strategic --patch-file '" + file + "' -o json",
            &rc);
        ASSERT_EQ(rc, 0) << name << ": " << patched;
        const json result = json::parse(patched.substr(patched.find('{')));
        const json limits =
            result["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
        Result<GpuAllocation> to = ParseGpuAllocation(w["to"]["allocation"].get<std::string>());
        ASSERT_TRUE(to.ok());
        const GpuResourceRequest after = ResourceRequestOf(*to);
        EXPECT_EQ(limits, (json{{after.name, after.quantity}})) << name << ": " << limits;
      } else {
        ++created;
        EXPECT_EQ(command, "kubectl apply -f " + change["file"].get<std::string>());
        // A new object: KEDA's released ScaledObject schema, and the scaler's own parser.
        const std::string out =
            testing::RunShell("GPUVPA_MANIFEST_CHECK_DIR='" + std::string(GPUVPA_SOURCE_DIR) +
                                  "/build-tools/manifest-check' node '" + GPUVPA_SOURCE_DIR +
                                  "/test/deploy/validate_manifests.mjs' '" + file + "'",
                              &rc);
        EXPECT_EQ(rc, 0) << out;
        const YAML::Node so = docs[0];
        EXPECT_EQ(so["kind"].as<std::string>(), "ScaledObject");
        scaler::TriggerMetadata metadata;
        for (const auto& kv : so["spec"]["triggers"][0]["metadata"])
          metadata[kv.first.as<std::string>()] = kv.second.as<std::string>();
        Result<scaler::ScaledObjectConfig> config = scaler::ParseScaledObjectConfig(
            so["metadata"]["name"].as<std::string>(), so["metadata"]["namespace"].as<std::string>(),
            metadata);
        ASSERT_TRUE(config.ok()) << config.status().message();
        EXPECT_DOUBLE_EQ(config->gpu_per_replica, w["cost"]["gpu_per_replica"].get<double>());
        EXPECT_EQ(metadata["listName"], w["queue_list"]) << "the known queue, never a made-up one";
      }
    }
  }
  EXPECT_GE(patches, 3);
  EXPECT_EQ(created, 1) << "only the trainer has a known queue";
  // The notebook has no queue: an idle-timeout scale-down, said so, and no ScaledObject.
  const json& notebook = workloads_.at("notebook-alice");
  EXPECT_EQ(notebook["action"], "scale_to_zero");
  EXPECT_NE(notebook["action_label"].get<std::string>().find("shared GPU"), std::string::npos);
  EXPECT_NE(notebook["action_label"].get<std::string>().find("idle-timeout scale-down"),
            std::string::npos);
  for (const json& change : notebook["changes"])
    EXPECT_EQ(change["yaml"].get<std::string>().find("ScaledObject"), std::string::npos);
  const std::string md = *ReadWholeFile(dir_.Path("r/report.md"));
  EXPECT_NE(md.find("```sh\nkubectl -n agents patch deployment agent-loop --type strategic"),
            std::string::npos);
  EXPECT_EQ(md.find("\n---\n"), std::string::npos) << "never two documents in one block";
}

// A 1/4 share that scales to zero on a queue: named as both, and its ScaledObject meters a
// replica at a quarter of a GPU, the price the plan shows.
TEST_F(ReportTruthTest, AShareThatScalesToZeroIsNamedAsBothAndMeteredAtTheSharesPrice) {
  const std::string policy = dir_.Path("policy.yaml");
  std::ofstream(policy) << "default_mode: Report\nworkload_annotations:\n"
                           "  ml-team/StatefulSet/notebook-alice: {gpuvpa.io/queue-list: alice}\n";
  PlanDemo(policy);
  const json& notebook = workloads_.at("notebook-alice");
  EXPECT_EQ(notebook["action_label"], "shared GPU " +
                                          notebook["to"]["allocation"].get<std::string>() +
                                          " + scale to zero on queue alice");
  ASSERT_EQ(notebook["changes"].size(), 2u);
  const YAML::Node so = YAML::Load(notebook["changes"][1]["yaml"].get<std::string>());
  const double per_replica =
      std::stod(so["spec"]["triggers"][0]["metadata"]["gpuPerReplica"].as<std::string>());
  Result<GpuAllocation> to = ParseGpuAllocation(notebook["to"]["allocation"].get<std::string>());
  ASSERT_TRUE(to.ok());
  const std::string model = notebook["to"]["gpu_model"];
  const PriceBook prices = PriceBook::BuiltInDefaults();
  Result<double> share_hour = prices.AllocationHourPrice(*to, model, "");
  Result<GpuAllocation> whole = ParseGpuAllocation("nvidia.com/gpu=1");
  Result<double> gpu_hour = prices.AllocationHourPrice(*whole, model, "");
  ASSERT_TRUE(share_hour.ok() && gpu_hour.ok());
  EXPECT_DOUBLE_EQ(per_replica, 0.25);
  EXPECT_NEAR(per_replica * *gpu_hour, *share_hour, 1e-9)
      << "metering charges per replica what the plan priced";
}

TEST_F(ReportTruthTest, CudaOomShowsInEveryFormatAndRaisesTheRisk) {
  PlanDemo();
  const json& agent = workloads_.at("agent-loop");
  ASSERT_GT(agent["evidence"]["cuda_oom_count"].get<int>(), 0);
  EXPECT_EQ(agent["risk"]["level"], "high");
  EXPECT_NE(agent["risk"]["reason"].get<std::string>().find("CUDA out-of-memory"),
            std::string::npos);
  const std::string md = *ReadWholeFile(dir_.Path("r/report.md"));
  EXPECT_NE(md.find("| high (1 CUDA OOM) |"), std::string::npos) << md;
  EXPECT_NE(md.find("- CUDA out-of-memory: 1 in the history"), std::string::npos);
  const std::string html = *ReadWholeFile(dir_.Path("r/report.html"));
  EXPECT_NE(html.find("<td class=\"oom\">1 in the history</td>"), std::string::npos);
  const std::string csv = *ReadWholeFile(dir_.Path("r/report.csv"));
  const std::string header = csv.substr(0, csv.find("\r\n"));
  EXPECT_NE(header.find(",cuda_oom_count,"), std::string::npos) << header;
  // The trainer (4 GPUs) states its SM need per GPU and in total.
  const json& trainer = workloads_.at("nightly-train");
  EXPECT_EQ(trainer["evidence"]["gpus_per_pod"], 4);
  EXPECT_NEAR(trainer["evidence"]["sm_need_gpus_total"].get<double>(),
              4 * trainer["evidence"]["sm_need_gpu_fraction"].get<double>(), 1e-12);
  EXPECT_NE(md.find("of each of 4 GPUs ("), std::string::npos);
}

// A fleet of 400 workloads: the Markdown stays under GitHub's 65,536-character comment limit,
// shows the largest changes in full, and names where the rest is.
TEST_F(ReportTruthTest, MarkdownForAPullRequestStaysUnderTheCommentLimitForAnyFleet) {
  PlanDemo();
  ReportInput input;
  const PriceBook prices = PriceBook::BuiltInDefaults();
  UpdaterPolicy policy;
  const Planner planner(GpuCatalog::BuiltIn(), prices, "", policy);
  for (int i = 0; i < 400; ++i) {
    v1::Recommendation r;
    v1::WorkloadIdentity* id = r.mutable_identity();
    id->set_namespace_name("team-" + std::to_string(i % 23));
    id->set_owner_kind("Deployment");
    id->set_owner_name("inference-server-with-a-long-name-" + std::to_string(i));
    id->set_container("main");
    id->set_gpu_model("H100-80GB");
    id->set_allocation("nvidia.com/gpu=1");
    id->set_cost_center("cost-center-" + std::to_string(i % 17));
    r.set_has_target(true);
    r.set_vram_target_bytes((8 + i % 30) * 1024.0 * 1024 * 1024);
    r.set_vram_lower_bytes(r.vram_target_bytes() * 0.9);
    r.set_vram_upper_bytes(r.vram_target_bytes() * 1.1);
    r.set_vram_history_peak_bytes(r.vram_target_bytes() * 0.95);
    r.set_vram_limit_bytes(80 * 1024.0 * 1024 * 1024);
    r.set_sm_p90_ratio(0.05 + (i % 5) * 0.05);
    r.set_active_duty_ratio(0.9);
    r.set_confidence(7);
    r.set_history_s(7 * 86400);
    r.set_sample_count(10000);
    r.set_busy_devices(1);
    r.set_average_pods(1);
    input.actions.push_back(planner.Plan(r));
  }
  input.generated_at_s = input.as_of_s = 1'790'000'000;
  input.source = "test";
  Result<std::string> md = RenderMarkdownReport(input);
  ASSERT_TRUE(md.ok());
  EXPECT_LT(md->size(), 65'536u);
  EXPECT_NE(md->find("more changes are in report.html"), std::string::npos);
  EXPECT_NE(md->find("<details><summary>"), std::string::npos);
  // The summary table's rows are narrow: every column of a change row is visible in a comment.
  std::istringstream lines(*md);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("| team-", 0) == 0) {
      EXPECT_LT(line.size(), 200u) << line;
    }
  // A small fleet is shown whole.
  Result<std::string> demo_md = ReadWholeFile(dir_.Path("r/report.md"));
  EXPECT_EQ(demo_md->find("more changes are in"), std::string::npos);
}

// More than 10 % of the workloads without a cost center: every format says so at the top, and
// how to fix it; at 10 % or less, none does.
TEST(ReportWarningTest, WorkloadsWithoutACostCenterAreFlaggedAboveTenPercent) {
  for (const int unallocated : {1, 2}) {
    ReportInput input;
    for (int i = 0; i < 10; ++i) {
      PlannedAction a;
      v1::WorkloadIdentity* id = a.evidence.mutable_identity();
      id->set_namespace_name("ns");
      id->set_owner_kind("Deployment");
      id->set_owner_name("w" + std::to_string(i));
      id->set_container("main");
      id->set_cost_center(i < unallocated ? "unallocated" : "team");
      input.actions.push_back(a);
    }
    const bool warn = unallocated == 2;
    const std::string expected =
        std::to_string(unallocated) + " of 10 GPU workloads have no cost center";
    Result<std::string> html = RenderHtmlReport(input), md = RenderMarkdownReport(input),
                        doc = RenderJsonReport(input);
    ASSERT_TRUE(html.ok() && md.ok() && doc.ok());
    EXPECT_EQ(html->find(expected) != std::string::npos, warn) << unallocated;
    EXPECT_EQ(md->find("> **Warning:** " + expected) != std::string::npos, warn) << unallocated;
    const std::string warning = json::parse(*doc)["warning"];
    EXPECT_EQ(warning.find("--metric-labels-allowlist") != std::string::npos, warn);
  }
}

}  // namespace
}  // namespace gpuvpa::updater
