// gpuvpa-recommender: the long-running recommender. Reads DCGM and kube-state-metrics series
// from Prometheus on an interval, keeps its histograms across restarts (checkpoint), charges
// usage to the ledger exactly once, and serves /metrics, /healthz, /readyz and the gRPC
// RecommendationService (with grpc.health.v1).
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cli/cost_api_flags.h"
#include "core/cli/ledger_flags.h"
#include "core/cli/logging.h"
#include "core/config/config.h"
#include "core/cost/delivery.h"
#include "core/cost/ledger_rpc.h"
#include "core/net/grpc_server.h"
#include "core/net/http_server.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/daemon/recommendation_service.h"
#include "recommender/daemon/recommender_daemon.h"

namespace gpuvpa::recommender {
namespace {

// What the ledger's owner serves beside recommendations: the cost API (on a read-only
// connection of its own) and the scheduled deliveries (recorded through the daemon's ledger).
struct CostServices {
  ServedCosts costs;
  std::unique_ptr<DeliverySchedule> deliveries;
};
Result<CostServices> StartCostServices(bool serve_api, const LedgerFlags& ledger_flags,
                                       const CostApiFlags& api, const DeliveryConfig& delivery,
                                       Ledger& ledger) {
  CostServices services;
  if (serve_api) {
    Result<ServedCosts> costs = ServeCosts(ledger_flags, api);
    if (!costs.ok()) return costs.status();
    services.costs = std::move(*costs);
  }
  if (!delivery.targets.empty()) {
    Result<std::unique_ptr<DeliverySchedule>> schedule = DeliverySchedule::Start(ledger, delivery);
    if (!schedule.ok()) return schedule.status();
    services.deliveries = std::move(*schedule);
  }
  return services;
}

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string config_path, log_level = "info", listen_http, listen_grpc;
  bool once = false;
  bool accept_ledger_rows = false;
  int shard_index = -1;
  CostApiFlags cost_api;
  auto app = NewCommandApp(
      "gpuvpa-recommender", "",
      "The long-running recommender: polls Prometheus (DCGM exporter + kube-state-metrics), "
      "keeps decaying histograms across restarts, charges usage to the ledger exactly once, and "
      "serves /metrics, /healthz, /readyz and gpuvpa.v1.RecommendationService. Configured by "
      "the `recommender:` section of the gpuvpa config (README, gpuvpa-recommender). Stops on "
      "SIGTERM/SIGINT after saving the checkpoint. Exit 0 on a clean stop, 1 on failure, 2 on "
      "bad usage.");
  app->add_option("--config", config_path, "gpuvpa config file with a recommender: section")
      ->required();
  app->add_option("--listen-http", listen_http, "override recommender.listen_http (host:port)");
  app->add_option("--listen-grpc", listen_grpc, "override recommender.listen_grpc (host:port)");
  app->add_flag("--accept-ledger-rows", accept_ledger_rows,
                "also serve gpuvpa.v1.LedgerService: the updater's and the scaler's rows go into "
                "this daemon's ledger (one writer for the ledger file). Needs mTLS "
                "(recommender.client_ca_file) unless listen_grpc is a loopback address");
  app->add_option("--shard-index", shard_index,
                  "override recommender.shard.index: this replica's shard (a StatefulSet passes "
                  "its pod index); must be below shard.count")
      ->check(CLI::NonNegativeNumber);
  AddCostApiFlags(*app, cost_api, "cost-api-");
  app->add_flag("--once", once, "poll once, save the checkpoint, print the summary and exit");
  app->add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  // Before anything starts a thread (the config check's HTTP client among them): see cli.h.
  // (--once runs in the foreground and keeps the default: a signal ends it at once.)
  sigset_t stop{};
  if (!once) stop = BlockStopSignals();
  auto complain = [&](std::string_view message, int code) {
    err << "gpuvpa-recommender: " << message << "\n";
    return code;
  };
  auto fail = [&](const Status& s) { return complain(s.message(), kExitFailure); };
  if (Status s = ConfigureLogging(log_level); !s.ok())
    return complain("--log-level: " + s.message(), kExitUsage);
  Result<GpuvpaConfig> gpuvpa = LoadConfigFile(config_path);
  if (!gpuvpa.ok()) return fail(gpuvpa.status());
  Result<DaemonConfig> config = ParseDaemonConfig(gpuvpa->recommender_yaml, config_path);
  if (!config.ok()) return fail(config.status());
  if (!listen_http.empty()) config->listen_http = listen_http;
  if (!listen_grpc.empty()) config->listen_grpc = listen_grpc;
  if (shard_index >= 0) {
    if (shard_index >= config->shard_count) {
      err << "gpuvpa-recommender: --shard-index " << shard_index << " is not below " << config_path
          << " recommender.shard.count " << config->shard_count << "\n";
      return kExitUsage;
    }
    config->shard_index = shard_index;
  }
  // Ledger rows are money: only peers with a certificate this daemon trusts may append them,
  // unless nothing but this machine can reach the port.
  const bool loopback = config->listen_grpc.rfind("127.0.0.1:", 0) == 0 ||
                        config->listen_grpc.rfind("[::1]:", 0) == 0 ||
                        config->listen_grpc.rfind("localhost:", 0) == 0;
  if (accept_ledger_rows && config->client_ca_file.empty() && !loopback) {
    err << "gpuvpa-recommender: --accept-ledger-rows on " << config->listen_grpc
        << " needs mTLS: set recommender.client_ca_file (and tls_cert_file, tls_key_file), or "
           "listen on a loopback address\n";
    return kExitUsage;
  }

  const Result<bool> serve_costs = CostApiRequested(*app, cost_api);
  if (!serve_costs.ok()) return complain(serve_costs.status().message(), kExitUsage);
  const LedgerFlags ledger_flags = WithConfigDefaults({}, *gpuvpa);
  const Result<DeliveryConfig> delivery = ParseDeliveryConfig(gpuvpa->delivery_yaml);
  if (!delivery.ok()) return fail(delivery.status());
  Result<std::unique_ptr<RecommenderDaemon>> daemon =
      RecommenderDaemon::Create(*config, *std::move(gpuvpa));
  if (!daemon.ok()) return fail(daemon.status());
  RecommenderDaemon& d = **daemon;
  if (once) {
    const Status polled = d.PollOnce(UnixNowSeconds());
    if (Status s = d.SaveCheckpointNow(UnixNowSeconds()); !s.ok()) return fail(s);
    const auto snap = d.snapshot();
    out << "gpuvpa-recommender: " << snap->by_key.size() << " recommendations; checkpoint saved to "
        << config->checkpoint_path << "\n";
    return polled.ok() ? kExitOk : fail(polled);
  }
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      config->listen_http, [&d](const std::string& path) { return d.HandleHttp(path); });
  if (!http.ok()) return fail(http.status());
  Result<CostServices> costs =
      StartCostServices(*serve_costs, ledger_flags, cost_api, *delivery, d.ledger());
  if (!costs.ok()) return fail(costs.status());
  RecommendationServiceImpl service(d);
  LedgerServiceImpl ledger_service(d.ledger());
  std::vector<grpc::Service*> services = {&service};
  if (accept_ledger_rows) services.push_back(&ledger_service);
  ServerOptions grpc_options;
  grpc_options.listen_address = config->listen_grpc;
  grpc_options.tls_cert_file = config->tls_cert_file;
  grpc_options.tls_key_file = config->tls_key_file;
  grpc_options.client_ca_file = config->client_ca_file;
  grpc_options.max_threads = 32;
  Result<RunningServer> grpc_server = StartServer(grpc_options, services);
  if (!grpc_server.ok()) return fail(grpc_server.status());
  spdlog::info(
      "serving RecommendationService{} and grpc.health.v1 on port {}, /metrics /healthz "
      "/readyz on port {}; shard {}/{}",
      accept_ledger_rows ? ", LedgerService" : "", grpc_server->port, (*http)->port(),
      config->shard_index, config->shard_count);
  out << "gpuvpa-recommender: grpc port " << grpc_server->port << ", http port " << (*http)->port();
  if (costs->costs.api) out << ", cost API port " << costs->costs.api->port();
  out << std::endl;
  std::thread loop([&d] { d.Run(); });
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: finishing the current poll, saving the checkpoint", signal);
  if (grpc::HealthCheckServiceInterface* health = grpc_server->server->GetHealthCheckService())
    health->Shutdown();
  d.Stop();  // Watch streams end with OK
  loop.join();
  grpc_server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return kExitOk;
}

}  // namespace
}  // namespace gpuvpa::recommender

int main(int argc, char** argv) {
  return gpuvpa::recommender::Run(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                  std::cerr);
}
