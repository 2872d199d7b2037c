// Serve command: wires config, ledger and spool, backends, services, TLS, health and /metrics.
#include "scaler/cmd/serve_command.h"

#include <spdlog/spdlog.h>

#include <csignal>

#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cli/logging.h"
#include "core/cost/config.h"
#include "core/cost/ledger.h"
#include "core/cost/ledger_rpc.h"
#include "core/net/grpc_server.h"
#include "core/net/metrics_page.h"
#include "scaler/config/scaler_config.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/activity_meter.h"
#include "scaler/service/external_scaler_service.h"
#include "scaler/service/push_service.h"
#include "scaler/service/scaler_core.h"
#include "scaler/sources/backends.h"

namespace gpuvpa::scaler {
namespace {

// /metrics of `registry` on `listen` (none when empty), the meter's spool counts read at each
// scrape.
Result<std::unique_ptr<HttpServer>> StartMetricsServer(const std::string& listen,
                                                       prometheus::Registry& registry,
                                                       LedgerSpoolMetrics& spool,
                                                       const ActivityMeter& meter) {
  if (listen.empty()) return std::unique_ptr<HttpServer>();
  return HttpServer::Start(listen, [&](const std::string& path) {
    if (path != "/metrics")
      return HttpServerResponse{404, "text/plain; charset=utf-8", "not found\n"};
    spool.Sync(meter.spooled_rows(), meter.dead_lettered_rows());
    return MetricsPage(registry);
  });
}

}  // namespace

int RunServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServerOptions server;
  server.listen_address = "0.0.0.0:9090";
  std::string metrics_listen = "0.0.0.0:9091";
  std::string health_listen;
  std::string ledger_path;
  ClientChannelOptions ledger_service;
  std::string spool_path;
  std::string open_periods_path;
  int open_periods_interval_s = 10;
  std::string config_path;
  std::string scaler_config_path;
  std::string log_level = "info";
  int cache_ttl_ms = 1000;
  int source_timeout_ms = 500;
  int push_staleness_s = 300;
  auto app = NewCommandApp("gpuvpa-scaler", "serve",
                           "Serve KEDA's ExternalScaler and QueueDepthPush over gRPC (TLS/mTLS "
                           "with certificates), grpc.health.v1, /metrics, and meter active "
                           "periods into the ledger.");
  app->add_option("--listen", server.listen_address, "gRPC address");
  app->add_option("--tls-cert", server.tls_cert_file,
                  "server certificate (PEM); with --tls-key enables TLS");
  app->add_option("--tls-key", server.tls_key_file, "server private key (PEM)");
  app->add_option("--client-ca", server.client_ca_file,
                  "CA (PEM) that client certificates must chain to (mTLS)");
  app->add_option("--metrics-listen", metrics_listen, "/metrics address (empty: off)");
  app->add_option("--health-listen", health_listen,
                  "plaintext address serving only grpc.health.v1, for Kubernetes gRPC probes "
                  "when the main port requires mTLS (empty: off)");
  app->add_option("--scaler-config", scaler_config_path,
                  "the backends trigger metadata may name, with their credentials, and limits "
                  "(YAML; see scaler/config/scaler_config.h). Without it only push queues work")
      ->check(CLI::ExistingFile);
  auto* ledger_file =
      app->add_option("--ledger", ledger_path, "ledger file for metered periods (default: none)");
  auto* ledger_grpc = app->add_option(
      "--ledger-service", ledger_service.address,
      "the ledger's owner (gpuvpa-recommender --accept-ledger-rows), host:port: metered rows go "
      "there instead of to a file");
  ledger_file->excludes(ledger_grpc);
  ledger_grpc->excludes(ledger_file);
  app->add_option("--ledger-service-ca", ledger_service.ca_file,
                  "CA (PEM) of the ledger service: TLS")
      ->needs(ledger_grpc);
  app->add_option("--ledger-service-cert", ledger_service.client_cert_file,
                  "client certificate (PEM) for the ledger service: mTLS")
      ->needs(ledger_grpc);
  app->add_option("--ledger-service-key", ledger_service.client_key_file,
                  "client key (PEM) for the ledger service")
      ->needs(ledger_grpc);
  app->add_option("--spool", spool_path,
                  "where metered rows go when the ledger refuses them, moved there once it takes "
                  "rows again (default: LEDGER.spool; none with --ledger-service)");
  app->add_option("--open-periods", open_periods_path,
                  "the open metered periods are saved here (atomically) so that a killed scaler "
                  "loses at most --open-periods-interval of metered time per ScaledObject; the "
                  "next start writes them as rows (default: SPOOL.open when there is a spool)");
  app->add_option("--open-periods-interval", open_periods_interval_s,
                  "seconds between saves of the open periods")
      ->check(NumberInRange(1, 3600));
  app->add_option("--config", config_path, "gpuvpa config (prices, region)")
      ->check(CLI::ExistingFile);
  app->add_option("--cache-ttl-ms", cache_ttl_ms, "one backend read per queue per this")
      ->check(NumberInRange(1, 3600 * 1000));
  app->add_option("--source-timeout-ms", source_timeout_ms, "queue read timeout")
      ->check(NumberInRange(1, 60 * 1000));
  app->add_option("--push-staleness-seconds", push_staleness_s,
                  "push reports older than this are UNAVAILABLE")
      ->check(NumberInRange(1, 86400));
  app->add_option("--log-level", log_level, "trace, debug, info, warn, error or off");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  // Before anything starts a thread (clients, bulkheads, the metrics server): see cli.h.
  const sigset_t stop = BlockStopSignals();
  if (Status s = ConfigureLogging(log_level); !s.ok()) {
    err << "gpuvpa-scaler serve: " << s.message() << "\n";
    return kExitUsage;
  }
  auto fail = [&](const Status& s) {
    spdlog::error("{}", s.message());
    return kExitFailure;
  };

  Result<GpuvpaConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) return fail(config.status());
  Result<ScalerConfig> scaler_config = LoadScalerConfig(scaler_config_path);
  if (!scaler_config.ok()) return fail(scaler_config.status());
  Result<std::unique_ptr<Backends>> backends = Backends::Create(*scaler_config);
  if (!backends.ok()) return fail(backends.status());
  std::unique_ptr<LedgerSink> ledger;
  if (!ledger_path.empty()) {
    Result<std::unique_ptr<Ledger>> opened = Ledger::Open(ledger_path);
    if (!opened.ok()) return fail(opened.status());
    ledger = std::move(opened).value();
    if (spool_path.empty()) spool_path = ledger_path + ".spool";
  } else if (!ledger_service.address.empty()) {
    // Short: a row is written on a gRPC thread when a period closes; a ledger that is slow to
    // answer sends the row to the spool instead of holding KEDA's call.
    Result<std::unique_ptr<RemoteLedger>> remote =
        RemoteLedger::Connect(ledger_service, std::chrono::seconds(2));
    if (!remote.ok()) return fail(remote.status());
    ledger = std::move(remote).value();
    ledger_path = "service " + ledger_service.address;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  ScalerMetrics metrics(registry, scaler_config->cost_centers);
  RegisterBuildInfo(*registry, "scaler");
  const ScalerLimits& limits = scaler_config->limits;
  PushDepthRegistry push{std::chrono::seconds(push_staleness_s), limits.max_push_queues};
  ScalerCoreOptions core_options;
  core_options.cache_ttl = std::chrono::milliseconds(cache_ttl_ms);
  core_options.source_timeout = std::chrono::milliseconds(source_timeout_ms);
  core_options.limits = limits;
  ScalerCore core(core_options, **backends, push, &metrics);
  ActivityMeterOptions meter_options;
  meter_options.region = config->region;
  meter_options.spool_path = spool_path;
  meter_options.max_meters = limits.max_scaled_objects;
  meter_options.idle = limits.idle;
  meter_options.open_periods_path =
      !open_periods_path.empty() ? open_periods_path
                                 : (spool_path.empty() ? std::string() : spool_path + ".open");
  meter_options.open_periods_interval = std::chrono::seconds(open_periods_interval_s);
  ActivityMeter meter(meter_options, ledger.get(), config->prices, ActivityMeter::DefaultClock(),
                      &metrics);
  // /metrics once the meter exists (its spool counts are read at each scrape).
  LedgerSpoolMetrics spool_metrics(*registry, "scaler");
  Result<std::unique_ptr<HttpServer>> metrics_server =
      StartMetricsServer(metrics_listen, *registry, spool_metrics, meter);
  if (!metrics_server.ok()) return fail(metrics_server.status());
  // Rows a previous run could only spool go to the ledger first; a spool that cannot be moved
  // now stays where it is and is tried again by the housekeeping.
  if (Result<size_t> moved = meter.MoveSpooled(); !moved.ok())
    spdlog::error("spool {} not replayed yet (kept): {}", spool_path, moved.status().message());
  else if (*moved > 0)
    spdlog::info("replayed {} spooled metered rows into the ledger {}", *moved, ledger_path);
  // Periods an earlier run left open (it was killed) are closed as of its last save.
  if (Result<size_t> recovered = meter.RecoverOpenPeriods(); !recovered.ok())
    spdlog::error("open metering periods: {}", recovered.status().message());
  else if (*recovered > 0)
    spdlog::info("wrote {} metered periods an earlier run left open", *recovered);
  ActivityHub hub(
      core, push, core_options.cache_ttl,
      [&] {
        core.EvictIdle();
        meter.EvictIdle();
        push.EvictIdle(std::chrono::duration_cast<std::chrono::milliseconds>(limits.idle));
      },
      std::chrono::seconds(std::min(10, open_periods_interval_s)));
  ExternalScalerService scaler(core, hub, &meter, &metrics);
  QueueDepthPushService push_service(push);

  Result<RunningServer> running = StartServer(server, {&scaler, &push_service});
  if (!running.ok()) return fail(running.status());
  Result<RunningServer> health_server = RunningServer{};
  HealthOnlyService health_only;
  if (!health_listen.empty()) {
    ServerOptions plain;
    plain.listen_address = health_listen;
    plain.max_threads = 4;
    plain.default_health_service = false;
    health_server = StartServer(plain, {&health_only});
    if (!health_server.ok()) return fail(health_server.status());
  }
  spdlog::info("serving ExternalScaler, QueueDepthPush and grpc.health.v1 on port {} ({}){}",
               running->port,
               server.tls_cert_file.empty()    ? "plaintext"
               : server.client_ca_file.empty() ? "TLS"
                                               : "mTLS",
               metrics_listen.empty() ? std::string() : ", /metrics on " + metrics_listen);
  out << "gpuvpa-scaler: listening on port " << running->port << std::endl;
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: ending open streams with OK and shutting down", signal);
  for (RunningServer* r : {&*running, &*health_server})
    if (r->server)
      if (grpc::HealthCheckServiceInterface* health = r->server->GetHealthCheckService())
        health->Shutdown();
  health_only.SetNotServing();
  hub.Shutdown();  // streams end with OK: KEDA resets its reconnect backoff
  // In-flight reads end by the source timeout; after that (and a margin) the rest is cancelled.
  running->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::milliseconds(source_timeout_ms + 500));
  if (health_server->server) health_server->server->Shutdown();
  if (Status flushed = meter.FlushAll(); !flushed.ok()) {
    spdlog::error("metered rows lost: {}", flushed.message());
    return kExitFailure;
  }
  if (meter.spooled_rows() > 0 && (!meter.MoveSpooled().ok() || FileExists(spool_path)))
    spdlog::warn("metered rows are in the spool {}; they go to the ledger at the next start",
                 spool_path);
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace gpuvpa::scaler
