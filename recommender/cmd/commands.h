// The recommender's CLI commands, as library functions so tests run them without a process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuvpa::recommender {

// gpuvpa recommend --trace FILE [--checkpoint FILE] [--format table|json] [--min-history-hours H]
//                  [--sample-period-seconds S] [--ledger FILE] [--config FILE]
// Loads the checkpoint if there is one, replays the trace, charges usage since the last charge
// to the ledger, saves the checkpoint, prints one row per workload-container. Exit code 0 on
// success, 1 on failure, 2 on bad usage.
int RunRecommendCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa demo-trace --out FILE [--days N] [--seed N]
int RunDemoTraceCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuvpa::recommender
