// gpuvpa-updater's cycle at fleet scale, against the Kubernetes API double over HTTPS as
// deployed (the shipped RBAC): N namespaces' worth of Deployments, each with a
// GpuVerticalPodAutoscaler in Report mode and its recommendation in the recommendations file.
// One cycle (lease, recommendations, the GVPA list, namespaces, a plan per object, statuses,
// proposals to the ledger) is timed per N, three times: the first cycle, a full relist, and the
// steady state behind a watch. Prints
// seconds per cycle and per GVPA, so the scaling across N is read off one run.
//
//   updater_cycle_bench [N ...]        (default: 1000 10000)
#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/time_format.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/recommendation_builders.h"
#include "updater/daemon/updater_daemon.h"

namespace gpuvpa::updater {
namespace {

using testing::KubeTestCluster;
constexpr size_t kNamespaces = 200;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int Run(size_t n) {
  KubeTestCluster cluster;
  cluster.api().AddUser("updater-token", KubeTestCluster::UserFromManifests("gpuvpa-updater"));
  v1::ListRecommendationsResponse list;
  for (size_t ns = 0; ns < kNamespaces; ++ns)
    cluster.api().Seed(
        KubeTestCluster::Namespace("team-" + std::to_string(ns), {{"environment", "dev"}}));
  for (size_t i = 0; i < n; ++i) {
    const std::string ns = "team-" + std::to_string(i % kNamespaces);
    const std::string name = "server-" + std::to_string(i);
    cluster.api().Seed(
        KubeTestCluster::Workload("Deployment", ns, name, "main", "nvidia.com/gpu", "1"));
    cluster.api().Seed(KubeTestCluster::Gvpa(ns, name, "Deployment", name, "Report"));
    *list.add_recommendations() = testing::MigFittingH100Recommendation(ns, name);
  }
  const std::string recs_path = cluster.dir().Path("recs.json");
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(list, &text).ok()) return 1;
  std::ofstream(recs_path) << text;

  Result<KubeConnection> c =
      KubeconfigConnection(cluster.Kubeconfig("updater-token", "updater.yaml"));
  Result<std::unique_ptr<KubeClient>> client =
      c.ok() ? KubeClient::Create(*c) : Result<std::unique_ptr<KubeClient>>(c.status());
  Result<GpuvpaConfig> config = LoadConfigFile("");
  if (!client.ok() || !config.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  UpdaterDaemonOptions o;
  o.recommendations_file = recs_path;
  o.ledger.ledger = cluster.dir().Path("ledger.db");
  o.lease.identity = "updater-bench";
  auto daemon = UpdaterDaemon::Create(o, *config, {}, std::move(client).value());
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  const double t0 = UnixNowSeconds();
  cluster.api().ClearRequests();
  // Cycle 1 finds every status unwritten; cycle 2 lists everything again (as `--once` or a
  // restarted replica does); cycle 3 is the daemon's steady state: its informer watches for
  // 1 s (the window that is also its wait between cycles; the seconds include it).
  const char* const kinds[] = {"first", "relist", "watch"};
  for (int cycle = 0; cycle < 3; ++cycle) {
    const auto start = std::chrono::steady_clock::now();
    Result<CycleSummary> s = (*daemon)->RunCycle(t0 + 60 * cycle, cycle == 2 ? 1 : 0);
    const double took = Seconds(start);
    if (!s.ok() || s->gvpas != n) {
      std::fprintf(
          stderr, "cycle failed: %s\n",
          s.ok() ? ("gvpas " + std::to_string(s->gvpas)).c_str() : s.status().ToString().c_str());
      return 1;
    }
    // What the cycle asked of the API: requests per verb and resource.
    std::map<std::string, size_t> asked;
    for (const testing::KubeRequestRecord& r : cluster.api().requests()) {
      // .../namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]: a list, or one object (by resource).
      const size_t ns_at = r.path.find("/namespaces/");
      std::string what = r.path.substr(r.path.find_last_of('/') + 1);
      if (ns_at != std::string::npos) {
        std::vector<std::string> parts;
        std::stringstream rest(r.path.substr(ns_at + 12));
        for (std::string part; std::getline(rest, part, '/');) parts.push_back(part);
        what = parts.size() == 1   ? "one namespaces"
               : parts.size() == 2 ? "list " + parts[1]
                                   : "one " + parts[1] + (parts.size() > 3 ? "/" + parts[3] : "");
      }
      ++asked[r.method + " " + what];
    }
    cluster.api().ClearRequests();
    std::string requests;
    for (const auto& [what, count] : asked) requests += " [" + what + "]=" + std::to_string(count);
    std::printf("gvpas=%zu cycle=%d (%s) seconds=%.3f us_per_gvpa=%.1f planned=%zu requests:%s\n",
                n, cycle + 1, kinds[cycle], took, took / static_cast<double>(n) * 1e6, s->planned,
                requests.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace gpuvpa::updater

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || n == 0) {
      std::fprintf(stderr,
                   "usage: updater_cycle_bench [N ...]   (GVPAs per run; \"%s\" is not a "
                   "positive number)\n",
                   argv[i]);
      return 2;
    }
    sizes.push_back(n);
  }
  if (sizes.empty()) sizes = {1000, 10000};
  for (size_t n : sizes)
    if (int rc = gpuvpa::updater::Run(n); rc != 0) return rc;
  return 0;
}
