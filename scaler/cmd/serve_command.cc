// Serve command: wires config, ledger, sources, services, TLS and /metrics.
#include "scaler/cmd/serve_command.h"

#include <prometheus/exposer.h>

#include <csignal>

#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cost/config.h"
#include "core/cost/ledger.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/activity_meter.h"
#include "scaler/service/external_scaler_service.h"
#include "scaler/service/push_service.h"
#include "scaler/service/scaler_core.h"
#include "scaler/service/server.h"

namespace gpuvpa::scaler {

int RunServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServerOptions server;
  server.listen_address = "0.0.0.0:9090";
  std::string metrics_listen = "0.0.0.0:9091";
  std::string ledger_path;
  std::string config_path;
  std::string redis_password_file;
  int cache_ttl_ms = 1000;
  int source_timeout_ms = 500;
  int push_staleness_s = 300;
  auto app = NewCommandApp("gpuvpa-scaler", "serve",
                           "Serve KEDA's ExternalScaler and QueueDepthPush over gRPC (TLS/mTLS "
                           "with certificates), /metrics, and meter active periods.");
  app->add_option("--listen", server.listen_address, "gRPC address");
  app->add_option("--tls-cert", server.tls_cert_file,
                  "server certificate (PEM); with --tls-key enables TLS");
  app->add_option("--tls-key", server.tls_key_file, "server private key (PEM)");
  app->add_option("--client-ca", server.client_ca_file,
                  "CA (PEM) that client certificates must chain to (mTLS)");
  app->add_option("--metrics-listen", metrics_listen, "/metrics address (empty: off)");
  app->add_option("--ledger", ledger_path, "ledger for metered periods (default: none)");
  app->add_option("--config", config_path, "gpuvpa config (prices, region)");
  app->add_option("--redis-password-file", redis_password_file, "file holding the Redis password");
  app->add_option("--cache-ttl-ms", cache_ttl_ms, "one backend read per queue per this")
      ->check(NumberInRange(1, 3600 * 1000));
  app->add_option("--source-timeout-ms", source_timeout_ms, "queue read timeout")
      ->check(NumberInRange(1, 60 * 1000));
  app->add_option("--push-staleness-seconds", push_staleness_s,
                  "push reports older than this are UNAVAILABLE")
      ->check(NumberInRange(1, 86400));
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;

  Result<GpuvpaConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) {
    err << "gpuvpa-scaler serve: " << config.status().message() << "\n";
    return kExitFailure;
  }
  ScalerCoreOptions core_options;
  core_options.cache_ttl = std::chrono::milliseconds(cache_ttl_ms);
  core_options.source_timeout = std::chrono::milliseconds(source_timeout_ms);
  if (!redis_password_file.empty()) {
    Result<std::string> password = ReadWholeFile(redis_password_file);
    if (!password.ok()) {
      err << "gpuvpa-scaler serve: " << password.status().message() << "\n";
      return kExitFailure;
    }
    core_options.redis_password = *password;
    while (!core_options.redis_password.empty() && (core_options.redis_password.back() == '\n' ||
                                                    core_options.redis_password.back() == '\r'))
      core_options.redis_password.pop_back();
  }
  std::unique_ptr<Ledger> ledger;
  if (!ledger_path.empty()) {
    Result<std::unique_ptr<Ledger>> opened = Ledger::Open(ledger_path);
    if (!opened.ok()) {
      err << "gpuvpa-scaler serve: " << opened.status().message() << "\n";
      return kExitFailure;
    }
    ledger = std::move(opened).value();
  }

  auto registry = std::make_shared<prometheus::Registry>();
  ScalerMetrics metrics(registry);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!metrics_listen.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(metrics_listen);
      exposer->RegisterCollectable(registry);
    } catch (const std::exception& e) {
      err << "serve: cannot serve /metrics on " << metrics_listen << ": " << e.what() << "\n";
      return kExitFailure;
    }
  }
  PushDepthRegistry push{std::chrono::seconds(push_staleness_s)};
  ScalerCore core(core_options, push, &metrics);
  ActivityHub hub(core, push, core_options.cache_ttl);
  ActivityMeter meter({std::chrono::seconds(3600), std::chrono::seconds(300), config->region},
                      ledger.get(), config->prices, err, ActivityMeter::DefaultClock(), &metrics);
  ExternalScalerService scaler(core, hub, &meter, &metrics);
  QueueDepthPushService push_service(push);

  // Block the stop signals before any thread starts, then wait for one.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  Result<RunningServer> running = StartServer(server, {&scaler, &push_service});
  if (!running.ok()) {
    err << "gpuvpa-scaler serve: " << running.status().message() << "\n";
    return kExitFailure;
  }
  out << "gpuvpa-scaler: serving ExternalScaler and QueueDepthPush on port " << running->port
      << (server.tls_cert_file.empty()    ? " (plaintext)"
          : server.client_ca_file.empty() ? " (TLS)"
                                          : " (mTLS)")
      << (metrics_listen.empty() ? "" : ", /metrics on " + metrics_listen) << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  out << "gpuvpa-scaler: signal " << signal << ", shutting down" << std::endl;
  running->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  meter.FlushAll();
  return 0;
}

}  // namespace gpuvpa::scaler
