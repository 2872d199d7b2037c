// gpuvpa: the command-line entry point over every component (the recommender's and the updater's
// commands, the cost layer's showback and import). Dispatch only; all logic lives in the libraries.
// Built by the top-level CMakeLists.txt, the level that owns all components.
#include <iostream>
#include <string>
#include <vector>

#include "core/cli/cli.h"
#include "core/cost/openb_import.h"
#include "core/cost/showback.h"
#include "recommender/cmd/commands.h"
#include "updater/cmd/commands.h"

int main(int argc, char** argv) {
  const std::vector<gpuvpa::Subcommand> commands = {
      {"recommend", "replay a trace and print per-workload GPU recommendations",
       gpuvpa::recommender::RunRecommendCommand},
      {"demo-trace", "write the deterministic demo fleet trace",
       gpuvpa::recommender::RunDemoTraceCommand},
      {"plan", "plan the cheapest GPU allocation per workload; write proposals and owner reports",
       gpuvpa::updater::RunPlanCommand},
      {"backtest", "train on the first part of a trace, check the plan against the rest",
       gpuvpa::updater::RunBacktestCommand},
      {"showback", "per cost center (or GPU model) costs, idle tax and savings from the ledger",
       gpuvpa::RunShowbackCommand},
      {"import-openb", "load the Alibaba openb pod/node trace into the ledger",
       gpuvpa::RunImportOpenbCommand},
  };
  return gpuvpa::RunDispatcher("gpuvpa",
                               "gpuvpa: GPU rightsizing, scale-to-zero and chargeback for "
                               "Kubernetes.",
                               commands, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                               std::cerr);
}
