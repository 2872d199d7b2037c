// The updater's CLI commands, as library functions so tests run them without a process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuvpa::updater {

// gpuvpa plan (--checkpoint FILE | --recommendations FILE) [--policy FILE] [--config FILE]
//             [--ledger FILE] [--report DIR] [--format html,md,json,csv]
// Plans every workload-container, prints one line each, writes the proposals to the ledger and
// the owner reports to DIR. Exit 0 on success, 1 on failure, 2 on bad usage.
int RunPlanCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa backtest --trace FILE [--split 0.5] [--policy FILE] [--config FILE] [--report DIR]
// Replays the first part of a trace, plans, and checks the plan against the rest.
int RunBacktestCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuvpa::updater
