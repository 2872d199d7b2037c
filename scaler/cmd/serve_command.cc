// Serve command: wires config, ledger and spool, backends, services, TLS, health and /metrics.
#include "scaler/cmd/serve_command.h"

#include <spdlog/spdlog.h>

#include <csignal>

#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/cli/logging.h"
#include "core/config/config.h"
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

// The serve command's flags.
struct ServeFlags {
  ServerOptions server;
  std::string metrics_listen = "0.0.0.0:9091";
  std::string health_listen;
  LedgerFlags ledger;
  std::string ledger_shown;  // where rows go, for logs
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
};

std::unique_ptr<CLI::App> ServeApp(ServeFlags& f) {
  f.server.listen_address = "0.0.0.0:9090";
  auto app = NewCommandApp("gpuvpa-scaler", "serve",
                           "Serve KEDA's ExternalScaler and QueueDepthPush over gRPC (TLS/mTLS "
                           "with certificates), grpc.health.v1, /metrics, and meter active "
                           "periods into the ledger.");
  app->add_option("--listen", f.server.listen_address, "gRPC address");
  app->add_option("--tls-cert", f.server.tls_cert_file,
                  "server certificate (PEM); with --tls-key enables TLS");
  app->add_option("--tls-key", f.server.tls_key_file, "server private key (PEM)");
  app->add_option("--client-ca", f.server.client_ca_file,
                  "CA (PEM) that client certificates must chain to (mTLS)");
  app->add_option("--metrics-listen", f.metrics_listen, "/metrics address (empty: off)");
  app->add_option("--health-listen", f.health_listen,
                  "plaintext address serving only grpc.health.v1, for Kubernetes gRPC probes "
                  "when the main port requires mTLS (empty: off)");
  app->add_option("--scaler-config", f.scaler_config_path,
                  "the backends trigger metadata may name, with their credentials, and limits "
                  "(YAML; see scaler/config/scaler_config.h). Without it only push queues work")
      ->check(CLI::ExistingFile);
  AddLedgerFlags(*app, f.ledger,
                 "the ledger for metered periods, written directly (default: none)");
  auto* ledger_file = app->get_option("--ledger");
  auto* ledger_url_file = app->get_option("--ledger-url-file");
  auto* ledger_grpc = app->add_option(
      "--ledger-service", f.ledger_service.address,
      "the ledger's owner (gpuvpa-recommender --accept-ledger-rows), host:port: metered rows go "
      "there instead of to a file");
  ledger_file->excludes(ledger_grpc);
  ledger_url_file->excludes(ledger_grpc);
  ledger_grpc->excludes(ledger_file);
  ledger_grpc->excludes(ledger_url_file);
  app->add_option("--ledger-service-ca", f.ledger_service.ca_file,
                  "CA (PEM) of the ledger service: TLS")
      ->needs(ledger_grpc);
  app->add_option("--ledger-service-cert", f.ledger_service.client_cert_file,
                  "client certificate (PEM) for the ledger service: mTLS")
      ->needs(ledger_grpc);
  app->add_option("--ledger-service-key", f.ledger_service.client_key_file,
                  "client key (PEM) for the ledger service")
      ->needs(ledger_grpc);
  app->add_option("--spool", f.spool_path,
                  "where metered rows go when the ledger refuses them, moved there once it takes "
                  "rows again (default: LEDGER.spool; none with --ledger-service)");
  app->add_option("--open-periods", f.open_periods_path,
                  "the open metered periods are saved here (atomically) so that a killed scaler "
                  "loses at most --open-periods-interval of metered time per ScaledObject; the "
                  "next start writes them as rows (default: SPOOL.open when there is a spool)");
  app->add_option("--open-periods-interval", f.open_periods_interval_s,
                  "seconds between saves of the open periods")
      ->check(NumberInRange(1, 3600));
  app->add_option("--config", f.config_path, "gpuvpa config (prices, region)")
      ->check(CLI::ExistingFile);
  app->add_option("--cache-ttl-ms", f.cache_ttl_ms, "one backend read per queue per this")
      ->check(NumberInRange(1, 3600 * 1000));
  app->add_option("--source-timeout-ms", f.source_timeout_ms, "queue read timeout")
      ->check(NumberInRange(1, 60 * 1000));
  app->add_option("--push-staleness-seconds", f.push_staleness_s,
                  "push reports older than this are UNAVAILABLE")
      ->check(NumberInRange(1, 86400));
  app->add_option("--log-level", f.log_level, "trace, debug, info, warn, error or off");
  return app;
}

// The ledger metered rows go to (a file, or the ledger's owner over gRPC; none: null). Sets the
// spool's default path and the ledger's name in logs.
Result<std::unique_ptr<LedgerSink>> OpenLedger(ServeFlags& f) {
  if (f.ledger.given()) {
    if (!f.ledger_service.address.empty())
      return InvalidArgumentError(
          "--ledger (or --ledger-url-file) and --ledger-service: rows go to one of them");
    const std::string sqlite_path = SqlitePathOf(f.ledger);
    if (f.spool_path.empty() && sqlite_path.empty())
      return InvalidArgumentError(
          "--spool is required with --ledger-url-file: rows wait there while the database is "
          "unreachable");
    Result<std::unique_ptr<Ledger>> opened = OpenLedger(f.ledger);
    if (!opened.ok()) return opened.status();
    if (f.spool_path.empty()) f.spool_path = sqlite_path + ".spool";
    f.ledger_shown = LedgerShownAs(f.ledger);
    return std::unique_ptr<LedgerSink>(std::move(opened).value());
  }
  if (f.ledger_service.address.empty()) return std::unique_ptr<LedgerSink>();
  // Short: a row is written on a gRPC thread when a period closes; a ledger that is slow to
  // answer sends the row to the spool instead of holding KEDA's call.
  Result<std::unique_ptr<RemoteLedger>> remote =
      RemoteLedger::Connect(f.ledger_service, std::chrono::seconds(2));
  if (!remote.ok()) return remote.status();
  f.ledger_shown = "service " + f.ledger_service.address;
  return std::unique_ptr<LedgerSink>(std::move(remote).value());
}

ActivityMeterOptions MeterOptions(const ServeFlags& f, const GpuvpaConfig& config,
                                  const ScalerLimits& limits) {
  ActivityMeterOptions o;
  o.region = config.region;
  o.spool_path = f.spool_path;
  o.max_meters = limits.max_scaled_objects;
  o.idle = limits.idle;
  o.open_periods_path = !f.open_periods_path.empty() ? f.open_periods_path
                        : f.spool_path.empty()       ? std::string()
                                                     : f.spool_path + ".open";
  o.open_periods_interval = std::chrono::seconds(f.open_periods_interval_s);
  return o;
}

// What an earlier run left: rows it could only spool go to the ledger first (a spool that
// cannot be moved now stays and is tried again by the housekeeping), and periods it left open
// (it was killed) are closed as of its last save.
void SettleEarlierRuns(ActivityMeter& meter, const ServeFlags& f) {
  if (Result<size_t> moved = meter.MoveSpooled(); !moved.ok())
    spdlog::error("spool {} not replayed yet (kept): {}", f.spool_path, moved.status().message());
  else if (*moved > 0)
    spdlog::info("replayed {} spooled metered rows into the ledger {}", *moved, f.ledger_shown);
  if (Result<size_t> recovered = meter.RecoverOpenPeriods(); !recovered.ok())
    spdlog::error("open metering periods: {}", recovered.status().message());
  else if (*recovered > 0)
    spdlog::info("wrote {} metered periods an earlier run left open", *recovered);
}

// Health NOT_SERVING, streams ended with OK (KEDA resets its reconnect backoff), in-flight
// reads given the source timeout, then every open period written.
int StopServing(const ServeFlags& f, RunningServer& running, RunningServer& health_server,
                HealthOnlyService& health_only, ActivityHub& hub, ActivityMeter& meter) {
  for (RunningServer* r : {&running, &health_server})
    if (r->server)
      if (grpc::HealthCheckServiceInterface* health = r->server->GetHealthCheckService())
        health->Shutdown();
  health_only.SetNotServing();
  hub.Shutdown();
  running.server->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(f.source_timeout_ms + 500));
  if (health_server.server) health_server.server->Shutdown();
  if (Status flushed = meter.FlushAll(); !flushed.ok()) {
    spdlog::error("metered rows lost: {}", flushed.message());
    return kExitFailure;
  }
  if (meter.spooled_rows() > 0 && (!meter.MoveSpooled().ok() || FileExists(f.spool_path)))
    spdlog::warn("metered rows are in the spool {}; they go to the ledger at the next start",
                 f.spool_path);
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace

int RunServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServeFlags f;
  auto app = ServeApp(f);
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  // Before anything starts a thread (clients, bulkheads, the metrics server): see cli.h.
  const sigset_t stop = BlockStopSignals();
  if (Status s = ConfigureLogging(f.log_level); !s.ok()) {
    err << "gpuvpa-scaler serve: " << s.message() << "\n";
    return kExitUsage;
  }
  auto fail = [&](const Status& s) {
    spdlog::error("{}", s.message());
    return kExitFailure;
  };
  Result<GpuvpaConfig> config = LoadConfigFile(f.config_path);
  if (!config.ok()) return fail(config.status());
  Result<ScalerConfig> scaler_config = LoadScalerConfig(f.scaler_config_path);
  if (!scaler_config.ok()) return fail(scaler_config.status());
  Result<std::unique_ptr<Backends>> backends = Backends::Create(*scaler_config);
  if (!backends.ok()) return fail(backends.status());
  if (f.ledger.cluster.empty()) f.ledger.cluster = config->cluster;  // rows name this cluster
  Result<std::unique_ptr<LedgerSink>> ledger = OpenLedger(f);
  if (!ledger.ok()) return fail(ledger.status());
  auto registry = std::make_shared<prometheus::Registry>();
  ScalerMetrics metrics(registry, scaler_config->cost_centers);
  RegisterBuildInfo(*registry, "scaler");
  const ScalerLimits& limits = scaler_config->limits;
  PushDepthRegistry push{std::chrono::seconds(f.push_staleness_s), limits.max_push_queues};
  ScalerCoreOptions core_options;
  core_options.cache_ttl = std::chrono::milliseconds(f.cache_ttl_ms);
  core_options.source_timeout = std::chrono::milliseconds(f.source_timeout_ms);
  core_options.limits = limits;
  ScalerCore core(core_options, **backends, push, &metrics);
  ActivityMeter meter(MeterOptions(f, *config, limits), ledger->get(), config->prices,
                      ActivityMeter::DefaultClock(), &metrics);
  // /metrics once the meter exists (its spool counts are read at each scrape).
  LedgerSpoolMetrics spool_metrics(*registry, "scaler");
  Result<std::unique_ptr<HttpServer>> metrics_server =
      StartMetricsServer(f.metrics_listen, *registry, spool_metrics, meter);
  if (!metrics_server.ok()) return fail(metrics_server.status());
  SettleEarlierRuns(meter, f);
  ActivityHub hub(
      core, push, core_options.cache_ttl,
      [&] {
        core.EvictIdle();
        meter.EvictIdle();
        push.EvictIdle(std::chrono::duration_cast<std::chrono::milliseconds>(limits.idle));
      },
      std::chrono::seconds(std::min(10, f.open_periods_interval_s)));
  ExternalScalerService scaler(core, hub, &meter, &metrics);
  QueueDepthPushService push_service(push);
  Result<RunningServer> running = StartServer(f.server, {&scaler, &push_service});
  if (!running.ok()) return fail(running.status());
  Result<RunningServer> health_server = RunningServer{};
  HealthOnlyService health_only;
  if (!f.health_listen.empty()) {
    ServerOptions plain;
    plain.listen_address = f.health_listen;
    plain.max_threads = 4;
    plain.default_health_service = false;
    health_server = StartServer(plain, {&health_only});
    if (!health_server.ok()) return fail(health_server.status());
  }
  spdlog::info("serving ExternalScaler, QueueDepthPush and grpc.health.v1 on port {} ({}){}",
               running->port,
               f.server.tls_cert_file.empty()    ? "plaintext"
               : f.server.client_ca_file.empty() ? "TLS"
                                                 : "mTLS",
               f.metrics_listen.empty() ? std::string() : ", /metrics on " + f.metrics_listen);
  out << "gpuvpa-scaler: listening on port " << running->port << std::endl;
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: ending open streams with OK and shutting down", signal);
  return StopServing(f, *running, *health_server, health_only, hub, meter);
}

}  // namespace gpuvpa::scaler
