// The API double's realism, judged by a real client: Debian's kubectl 1.20 (extracted by
// deploy/setup-deps.sh --with-browser into build-tools/) pointed at the double through a
// kubeconfig gets, describes and patches deployments and GpuVerticalPodAutoscalers, using the
// double's discovery and server-side Table printing.
#include <gtest/gtest.h>

#include <filesystem>

#include "test/support/kube_test_cluster.h"

namespace gpuvpa {
namespace {

using json = nlohmann::json;
using testing::KubeTestCluster;

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(KubeTestCluster::KubectlPath()))
        << KubeTestCluster::KubectlPath() << " is missing: run deploy/setup-deps.sh --with-browser";
    cluster_.api().Seed(KubeTestCluster::Namespace("ml-dev"));
    cluster_.api().Seed(
        KubeTestCluster::Workload("Deployment", "ml-dev", "web", "model", "nvidia.com/gpu", "1"));
    json gvpa = KubeTestCluster::Gvpa("ml-dev", "web", "Deployment", "web", "Auto");
    gvpa["status"] = {
        {"summary",
         {{"action", "mig_profile"}, {"monthlySavings", "$1635.20"}, {"confidence", "4.0"}}}};
    cluster_.api().Seed(gvpa);
  }

  std::string Kubectl(const std::string& args, int* rc) { return cluster_.Kubectl(args, rc); }

  KubeTestCluster cluster_;
};

TEST_F(KubectlTest, GetsDeployments) {
  int rc;
  const std::string out = Kubectl("-n ml-dev get deployments", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("NAME"), std::string::npos) << out;
  EXPECT_NE(out.find("web"), std::string::npos) << out;
}

TEST_F(KubectlTest, GetGvpaShowsThePrinterColumns) {
  int rc;
  const std::string out = Kubectl("-n ml-dev get gvpa", &rc);
  ASSERT_EQ(rc, 0) << out;
  for (const char* column : {"NAME", "MODE", "ACTION", "SAVINGS/MO", "CONFIDENCE", "AGE"})
    EXPECT_NE(out.find(column), std::string::npos) << column << " in\n" << out;
  for (const char* cell : {"web", "Auto", "mig_profile", "$1635.20", "4.0"})
    EXPECT_NE(out.find(cell), std::string::npos) << cell << " in\n" << out;
  // The wide output adds the priority-1 column.
  const std::string wide = Kubectl("-n ml-dev get gpuverticalpodautoscalers -o wide", &rc);
  ASSERT_EQ(rc, 0) << wide;
  EXPECT_NE(wide.find("APPLIED"), std::string::npos) << wide;
}

TEST_F(KubectlTest, DescribesAGvpa) {
  int rc;
  const std::string out = Kubectl("-n ml-dev describe gvpa web", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("GpuVerticalPodAutoscaler"), std::string::npos) << out;
  EXPECT_NE(out.find("Update Mode:"), std::string::npos) << out;
  EXPECT_NE(out.find("mig_profile"), std::string::npos) << out;
}

TEST_F(KubectlTest, PatchesAGvpaAndADeployment) {
  int rc;
  std::string out = Kubectl(
      "-n ml-dev patch gvpa web --type merge -p '{\"spec\":{\"updatePolicy\":{\"updateMode\":"
      "\"Off\"}}}'",
      &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("patched"), std::string::npos) << out;
  EXPECT_EQ(cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev",
                               "web")["spec"]["updatePolicy"]["updateMode"],
            "Off");
  // kubectl's default patch type for a built-in kind is a strategic merge: containers merge
  // by name.
  out = Kubectl(
      "-n ml-dev patch deployment web -p '{\"spec\":{\"template\":{\"spec\":{\"containers\":"
      "[{\"name\":\"model\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}}}'",
      &rc);
  ASSERT_EQ(rc, 0) << out;
  const json d = cluster_.api().Get("deployments", "ml-dev", "web");
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            "2");
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["image"], "registry.example/web:1");
  // The double refuses what the real API refuses, and kubectl reports it.
  out = Kubectl(
      "-n ml-dev patch gvpa web --type merge -p "
      "'{\"spec\":{\"updatePolicy\":{\"updateMode\":\"Always\"}}}'",
      &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("Unsupported value"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuvpa
