// gpuvpa cost-api: serves the ledger's OpenCost-compatible allocation API and FOCUS export.
#include <spdlog/spdlog.h>

#include "cmd/commands.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/cost_api.h"
#include "core/cost/ledger.h"

namespace gpuvpa::cmd {

int RunCostApiCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const sigset_t stop = BlockStopSignals();
  LedgerFlags ledger_flags;
  CostApiOptions options;
  HttpServerTls tls;
  auto app = NewCommandApp(
      "gpuvpa", "cost-api",
      "Serve the ledger over HTTP: OpenCost's /allocation (and /allocation/compute) with gpuvpa's "
      "extension, /focus (FOCUS 1.2 CSV), /healthz. Requests need 'Authorization: Bearer "
      "<token>'. Give it a read-only database role (PostgreSQL) or a read-only mount (SQLite).");
  AddLedgerFlags(*app, ledger_flags, "the ledger to serve", LedgerAccess::kRead);
  app->add_option("--listen", options.listen_address, "host:port to serve on (port 0: any)")
      ->capture_default_str();
  app->add_option("--token-file", options.token_file,
                  "file whose first line is the bearer token clients must send (required)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--tls-cert-file", tls.cert_file, "PEM certificate: serve HTTPS")
      ->check(CLI::ExistingFile);
  app->add_option("--tls-key-file", tls.key_file, "PEM key of --tls-cert-file")
      ->check(CLI::ExistingFile);
  app->add_option("--client-ca-file", tls.client_ca_file,
                  "PEM CA: require client certificates it signed (mTLS)")
      ->check(CLI::ExistingFile);
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  if (tls.cert_file.empty() != tls.key_file.empty() ||
      (!tls.client_ca_file.empty() && tls.cert_file.empty())) {
    err << "gpuvpa cost-api: --tls-cert-file and --tls-key-file go together, and "
           "--client-ca-file needs them\n";
    return kExitUsage;
  }
  if (!tls.cert_file.empty()) options.tls = tls;
  if (!ledger_flags.given()) {
    err << "gpuvpa cost-api: --ledger or --ledger-url-file is required\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<Ledger>> ledger =
      OpenLedger(ledger_flags, /*must_exist=*/true, /*read_only=*/true);
  if (!ledger.ok()) {
    err << "gpuvpa cost-api: " << ledger.status().message() << "\n";
    return ledger.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  Result<std::unique_ptr<CostApi>> api = CostApi::Start(**ledger, options);
  if (!api.ok()) {
    err << "gpuvpa cost-api: " << api.status().message() << "\n";
    return api.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const std::string scheme = options.tls ? "https" : "http";
  spdlog::info("serving {} on port {}: /allocation /allocation/compute /focus /healthz",
               LedgerShownAs(ledger_flags), (*api)->port());
  out << "gpuvpa cost-api: " << scheme << " port " << (*api)->port() << std::endl;
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: stopping", signal);
  return kExitOk;
}

}  // namespace gpuvpa::cmd
