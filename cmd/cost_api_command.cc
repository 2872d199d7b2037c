// gpuvpa cost-api: serves the ledger's OpenCost-compatible allocation API and FOCUS export.
#include <spdlog/spdlog.h>

#include "cmd/commands.h"
#include "core/cli/cli.h"
#include "core/cli/cost_api_flags.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/ledger.h"

namespace gpuvpa::cmd {

int RunCostApiCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const sigset_t stop = BlockStopSignals();
  LedgerFlags ledger_flags;
  CostApiFlags flags;
  auto app = NewCommandApp(
      "gpuvpa", "cost-api",
      "Serve the ledger over HTTP: OpenCost's /allocation (and /allocation/compute) with gpuvpa's "
      "extension, /focus (FOCUS 1.2 CSV), /healthz. Requests need 'Authorization: Bearer "
      "<token>'. The ledger is opened read-only; give it a read-only database role (PostgreSQL) "
      "or a read-only mount (SQLite) too.");
  AddLedgerFlags(*app, ledger_flags, "the ledger to serve", LedgerAccess::kRead);
  app->add_option("--listen", flags.options.listen_address, "host:port to serve on (port 0: any)")
      ->capture_default_str();
  AddCostApiFlags(*app, flags, "");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  if (Result<bool> asked = CostApiRequested(*app, flags); !asked.ok()) {
    err << "gpuvpa cost-api: " << asked.status().message() << "\n";
    return kExitUsage;
  }
  if (!ledger_flags.given()) {
    err << "gpuvpa cost-api: --ledger or --ledger-url-file is required\n";
    return kExitUsage;
  }
  Result<ServedCosts> served = ServeCosts(ledger_flags, flags);
  if (!served.ok()) {
    err << "gpuvpa cost-api: " << served.status().message() << "\n";
    return served.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  spdlog::info("serving {} on port {}: /allocation /allocation/compute /focus /healthz",
               LedgerShownAs(ledger_flags), served->api->port());
  out << "gpuvpa cost-api: " << (flags.options.tls ? "https" : "http") << " port "
      << served->api->port() << std::endl;
  const int signal = WaitForStopSignal(stop);
  spdlog::info("signal {}: stopping", signal);
  return kExitOk;
}

}  // namespace gpuvpa::cmd
