// The commands of the `gpuvpa` tool that span components, as library functions so tests run
// them without a process. Each returns 0 on success, 1 on failure, 2 on bad usage. The
// recommender's own commands (recommend, demo-trace) are in recommender/cmd/commands.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuvpa::cmd {

// gpuvpa plan (--checkpoint FILE | --recommendations FILE) [--policy FILE] [--config FILE]
//             [--ledger FILE] [--report DIR] [--format html,md,json,csv]
// Plans every workload-container, prints one line each, writes the proposals to the ledger and
// the owner reports to DIR. A checkpoint is read by the recommender's code and gives the
// reports their charts.
int RunPlanCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa backtest --trace FILE [--split 0.5] [--policy FILE] [--config FILE] [--report DIR]
// Replays the first part of a trace, plans, and checks the plan against the rest.
int RunBacktestCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa ledger migrate|copy: the ledger's schema; copying a ledger between backends.
int RunLedgerCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa showback (--ledger FILE | --ledger-url-file FILE) [--from T --to T] [--cluster NAME]
//                 [--group-by cost-center|gpu-model|cluster]
//                 [--format table|csv|json|md|summary]
int RunShowbackCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa cost-api (--ledger FILE | --ledger-url-file FILE) --token-file FILE [--listen ADDR]
//                 [--tls-cert-file F --tls-key-file F [--client-ca-file F]]
// Serves /allocation, /allocation/compute, /focus and /healthz until SIGTERM or SIGINT.
int RunCostApiCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa import-openb --pods FILE --nodes FILE --ledger FILE [--config FILE]
int RunImportOpenbCommand(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);

}  // namespace gpuvpa::cmd
