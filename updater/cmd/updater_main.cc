// gpuvpa-updater: the long-running updater. Watches GpuVerticalPodAutoscaler objects, plans
// from the recommender's recommendations, writes their status, applies Auto changes in
// non-production namespaces (dry run first, ledger and Events for every step), rolls back
// changes that end in CUDA OOM or CrashLoopBackOff, writes the owner reports on an interval,
// and acts only while it holds its Lease. Serves /metrics, /healthz and /readyz.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cli/logging.h"
#include "core/config/config.h"
#include "core/kube/kube_client.h"
#include "core/net/http_server.h"
#include "updater/daemon/updater_daemon.h"

namespace gpuvpa::updater {
namespace {

std::string DefaultIdentity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0')
    return std::string(host) + "-" + std::to_string(::getpid());
  return "gpuvpa-updater-" + std::to_string(::getpid());
}

// gpuvpa-updater's flags.
struct UpdaterFlags {
  UpdaterDaemonOptions o;
  std::string kubeconfig, context, config_path, policy_path, listen_http = "127.0.0.1:0";
  std::string log_level = "info";
  bool once = false;
  std::string max_mode = "Auto";
};

std::unique_ptr<CLI::App> UpdaterApp(UpdaterFlags& f) {
  f.o.lease.identity = DefaultIdentity();
  auto app = NewCommandApp(
      "gpuvpa-updater", "",
      "The long-running updater: watches GpuVerticalPodAutoscaler objects, plans the cheapest "
      "GPU allocation that fits each workload from the recommender's recommendations, writes "
      "their status, applies Auto changes in non-production namespaces (server-side dry run, "
      "then a patch of the Deployment/StatefulSet pod template; every step in the ledger and as "
      "an Event), rolls back changes that end in CUDA OOM or CrashLoopBackOff, and writes the "
      "owner reports. Only the replica holding the Lease acts. Stops on SIGTERM/SIGINT, giving "
      "the lease up. Exit 0 on a clean stop, 1 on failure, 2 on bad usage.");
  app->add_option("--kubeconfig", f.kubeconfig,
                  "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)");
  app->add_option("--context", f.context, "kubeconfig context (default: current-context)");
  auto* source = app->add_option_group("recommendations", "where recommendations come from");
  source->add_option("--recommender", f.o.recommender.address,
                     "gpuvpa-recommender gRPC address (host:port); with recommender shards, "
                     "every shard's, comma-separated (each answers for its own workloads)");
  source->add_option("--recommendations", f.o.recommendations_file,
                     "a file as `gpuvpa recommend --format json` writes it (re-read each cycle)");
  source->require_option(1);
  app->add_option("--recommender-ca", f.o.recommender.ca_file, "CA file: TLS to the recommender");
  app->add_option("--recommender-cert", f.o.recommender.client_cert_file,
                  "client certificate (PEM) for the recommender: mTLS");
  app->add_option("--recommender-key", f.o.recommender.client_key_file,
                  "client key (PEM) for the recommender");
  app->add_option("--config", f.config_path, "gpuvpa config (prices, cost centers)");
  app->add_option("--policy", f.policy_path,
                  "update policy YAML (namespace defaults, production selector, thresholds)");
  AddLedgerFlags(*app, f.o.ledger, "the ledger for proposals, changes and rollbacks");
  app->add_option("--ledger-service", f.o.ledger_service.address,
                  "the ledger's owner (gpuvpa-recommender --accept-ledger-rows), host:port: rows "
                  "go there instead of to a file");
  app->add_option("--ledger-service-ca", f.o.ledger_service.ca_file,
                  "CA (PEM) of the ledger service: TLS");
  app->add_option("--ledger-service-cert", f.o.ledger_service.client_cert_file,
                  "client certificate (PEM) for the ledger service: mTLS");
  app->add_option("--ledger-service-key", f.o.ledger_service.client_key_file,
                  "client key (PEM) for the ledger service");
  app->add_option("--spool", f.o.spool_path,
                  "rows the ledger (service) refuses wait in this file, fsync'd, and are moved "
                  "to it once it answers (default: none)");
  app->add_option("--change-key-file", f.o.change_key_file,
                  "key (at least 32 bytes; a mounted Secret, the same for every replica) that "
                  "signs the applied-change annotation: a rollback restores only signed values")
      ->check(CLI::ExistingFile);
  app->add_option("--max-mode", f.max_mode,
                  "the highest mode any namespace, GVPA or policy entry gets: Report never "
                  "patches or rolls back a workload (the report-only install), Off plans nothing")
      ->check(CLI::IsMember({"Off", "Report", "Auto"}));
  app->add_option("--report-dir", f.o.report_dir, "write the owner reports into this directory");
  app->add_option("--report-format", f.o.report_formats, "report formats: html,md,json,csv");
  app->add_option("--report-interval", f.o.report_interval_s, "seconds between report writes")
      ->check(PositiveNumber());
  app->add_option("--interval", f.o.interval_s, "seconds between cycles")->check(PositiveNumber());
  app->add_option("--identity", f.o.lease.identity, "this replica's name in the Lease and Events");
  app->add_option("--lease-namespace", f.o.lease.ns, "namespace of the Lease");
  app->add_option("--lease-name", f.o.lease.name, "name of the Lease");
  app->add_option("--lease-duration", f.o.lease.duration_s,
                  "seconds a leader's lease lasts without renewal")
      ->check(NumberInRange(1, 3600));
  app->add_option(
         "--rollback-window", f.o.rollback_window_s,
         "seconds after a change during which a CUDA OOM or CrashLoopBackOff rolls it back")
      ->check(NonNegativeNumber());
  app->add_option("--rollback-hold", f.o.rollback_hold_s,
                  "seconds of new history needed before a rolled-back workload changes again")
      ->check(NonNegativeNumber());
  app->add_option("--max-changes-per-namespace", f.o.limits.per_namespace_per_hour,
                  "changes per namespace per hour")
      ->check(CLI::Range(0, 100000));
  app->add_option("--max-changes", f.o.limits.per_cluster_per_hour,
                  "changes per hour, cluster-wide")
      ->check(CLI::Range(0, 1000000));
  app->add_option("--listen-http", f.listen_http, "host:port for /metrics, /healthz, /readyz");
  app->add_flag("--once", f.once, "run one cycle (taking the lease if free), print it and exit");
  app->add_option("--log-level", f.log_level, "trace, debug, info, warn, error, off");
  return app;
}

// --once: one cycle, printed; exit 1 when a step failed.
int RunOnce(UpdaterDaemon& d, std::ostream& out, std::ostream& err) {
  Result<CycleSummary> s = d.RunCycle(UnixNowSeconds());
  if (!s.ok()) {
    err << "gpuvpa-updater: " << s.status().message() << "\n";
    return kExitFailure;
  }
  for (const std::string& m : s->messages) out << m << "\n";
  out << "gpuvpa-updater: " << (s->leading ? "leader" : "standby") << ", " << s->gvpas
      << " GpuVerticalPodAutoscalers, " << s->planned << " planned, " << s->applied << " applied, "
      << s->rolled_back << " rolled back, " << s->failed << " failed\n";
  return s->failed == 0 ? kExitOk : kExitFailure;
}

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  UpdaterFlags f;
  auto app = UpdaterApp(f);
  UpdaterDaemonOptions& o = f.o;
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  o.lease.renew_deadline_s = o.lease.duration_s * 2 / 3;
  sigset_t stop{};
  if (!f.once) stop = BlockStopSignals();
  if (Status s = ConfigureLogging(f.log_level); !s.ok()) {
    err << "gpuvpa-updater: --log-level: " << s.message() << "\n";
    return kExitUsage;
  }
  auto fail = [&](const Status& s) {
    err << "gpuvpa-updater: " << s.message() << "\n";
    return kExitFailure;
  };
  Result<GpuvpaConfig> config = LoadConfigFile(f.config_path);
  if (!config.ok()) return fail(config.status());
  Result<UpdaterPolicy> policy = LoadUpdaterPolicy(f.policy_path);
  if (!policy.ok()) return fail(policy.status());
  policy->max_mode = *ParseUpdateMode(f.max_mode);
  if (policy->max_mode != UpdateMode::kAuto)
    spdlog::info("--max-mode {}: no workload is patched or rolled back", f.max_mode);
  Result<KubeConnection> connection = ResolveKubeConnection(f.kubeconfig, f.context);
  if (!connection.ok()) return fail(connection.status());
  Result<std::unique_ptr<KubeClient>> client = KubeClient::Create(*connection);
  if (!client.ok()) return fail(client.status());
  Result<std::unique_ptr<UpdaterDaemon>> daemon = UpdaterDaemon::Create(
      o, std::move(config).value(), std::move(policy).value(), std::move(client).value());
  if (!daemon.ok()) return fail(daemon.status());
  UpdaterDaemon& d = **daemon;
  if (f.once) return RunOnce(d, out, err);
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      f.listen_http, [&d](const std::string& path) { return d.HandleHttp(path); });
  if (!http.ok()) return fail(http.status());
  spdlog::info("gpuvpa-updater {} on {}; /metrics /healthz /readyz on port {}", o.lease.identity,
               (*connection).source, (*http)->port());
  out << "gpuvpa-updater: identity " << o.lease.identity << ", http port " << (*http)->port()
      << std::endl;
  std::thread loop([&d] { d.Run(); });
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: finishing the current cycle, giving the lease up", signal);
  d.Stop();
  loop.join();
  return kExitOk;
}

}  // namespace
}  // namespace gpuvpa::updater

int main(int argc, char** argv) {
  return gpuvpa::updater::Run(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                              std::cerr);
}
