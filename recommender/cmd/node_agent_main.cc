// gpuvpa-node-agent: per-process GPU truth on one node (a DaemonSet): NVML through dlopen, each
// process joined to its owner, the figures on /metrics for Prometheus (and so the
// recommender), /healthz and /readyz (not ready while NVML is missing or a GPU is lost).
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/cli/cli.h"
#include "core/cli/logging.h"
#include "core/kube/kube_config.h"
#include "core/net/http_server.h"
#include "recommender/agent/node_agent.h"

namespace gpuvpa::agent {
namespace {

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  NodeAgentOptions options;
  std::string listen_http = "0.0.0.0:9401", log_level = "info", label_by = "cgroup";
  std::string kubeconfig, context;
  const char* node_env = std::getenv("NODE_NAME");
  std::string node_name = node_env != nullptr ? node_env : "";
  auto app = NewCommandApp(
      "gpuvpa-node-agent", "",
      "Per-process GPU readings on this node: NVML (dlopen'ed libnvidia-ml.so.1) for each "
      "device's memory, busy time and GPM SM activity and each process's memory and busy time; "
      "processes joined to their pod by cgroup and named through the Kubernetes API (pods of "
      "this node only) and the kubelet's pod-resources API; served on /metrics with /healthz and "
      "/readyz. "
      "Stops on SIGTERM/SIGINT. Exit 0 on a clean stop, 1 on failure, 2 on bad usage.");
  app->add_option("--nvml-library", options.nvml_library,
                  "NVML to load (a soname searched as dlopen does, or a path)");
  app->add_option("--listen-http", listen_http, "/metrics, /healthz, /readyz (host:port)");
  app->add_option("--interval", options.interval_s,
                  "seconds between NVML passes (NVML keeps about 1 s of process samples)")
      ->check(NumberInRange(0.1, 10));
  app->add_option("--label-by", label_by,
                  "pid: label each process by its pid (no kubelet, e.g. a bare GPU machine); "
                  "cgroup: by the pod UID and container id of /proc/<pid>/cgroup")
      ->check(CLI::IsMember({"pid", "cgroup"}));
  app->add_option("--proc-root", options.proc_root,
                  "the host's /proc (the pod needs hostPID: true)");
  app->add_option("--node-name", node_name,
                  "this node, whose pods name the processes and whose name is the Hostname "
                  "label of every series (default: $NODE_NAME, set from spec.nodeName by the "
                  "DaemonSet)");
  app->add_option("--kubeconfig", kubeconfig,
                  "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)");
  app->add_option("--context", context, "kubeconfig context (default: current-context)");
  app->add_option("--pod-resources-socket", options.pod_resources_socket,
                  "the kubelet's pod-resources socket "
                  "(/var/lib/kubelet/pod-resources/kubelet.sock): which container holds which "
                  "device; empty: not asked");
  app->add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  options.label_by = label_by == "pid" ? LabelBy::kPid : LabelBy::kCgroup;
  options.node_name = node_name;
  const sigset_t stop = BlockStopSignals();
  if (Status s = ConfigureLogging(log_level); !s.ok()) {
    err << "gpuvpa-node-agent: --log-level: " << s.message() << "\n";
    return kExitUsage;
  }
  std::unique_ptr<PodDirectory> pods;
  if (options.label_by == LabelBy::kCgroup) {
    if (node_name.empty()) {
      err << "gpuvpa-node-agent: --node-name: empty (and $NODE_NAME is not set): the agent names "
             "only the pods of its own node\n";
      return kExitUsage;
    }
    Result<KubeConnection> connection = ResolveKubeConnection(kubeconfig, context);
    Result<std::unique_ptr<KubeClient>> client =
        connection.ok() ? KubeClient::Create(*connection)
                        : Result<std::unique_ptr<KubeClient>>(connection.status());
    if (!client.ok()) {
      err << "gpuvpa-node-agent: " << client.status().message() << "\n";
      return kExitFailure;
    }
    spdlog::info("naming the pods of node {} through {}", node_name, connection->source);
    pods = std::make_unique<PodDirectory>(std::move(client).value(), node_name);
  }
  NodeAgent agent(options, std::move(pods));
  // NVML may come later (the driver container starting after us): not ready until it loads.
  if (Status s = agent.Start(); !s.ok()) spdlog::warn("{}; retrying every 10 s", s.message());
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      listen_http, [&agent](const std::string& path) { return agent.HandleHttp(path); });
  if (!http.ok()) {
    err << "gpuvpa-node-agent: " << http.status().message() << "\n";
    return kExitFailure;
  }
  out << "gpuvpa-node-agent: http port " << (*http)->port() << std::endl;
  std::thread loop([&agent] { agent.Run(); });
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: stopping", signal);
  agent.Stop();
  loop.join();
  return kExitOk;
}

}  // namespace
}  // namespace gpuvpa::agent

int main(int argc, char** argv) {
  return gpuvpa::agent::Run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
