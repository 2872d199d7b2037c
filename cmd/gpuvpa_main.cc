// gpuvpa: the command-line entry point over every component (the recommender's commands, and
// this folder's commands that span components). Dispatch only; all logic lives in the libraries.
#include <iostream>
#include <string>
#include <vector>

#include "cmd/commands.h"
#include "core/cli/cli.h"
#include "recommender/cmd/commands.h"

int main(int argc, char** argv) {
  const std::vector<gpuvpa::Subcommand> commands = {
      {"recommend", "replay a trace and print per-workload GPU recommendations",
       gpuvpa::recommender::RunRecommendCommand},
      {"demo-trace", "write the deterministic demo fleet trace",
       gpuvpa::recommender::RunDemoTraceCommand},
      {"plan", "plan the cheapest GPU allocation per workload; write proposals and owner reports",
       gpuvpa::cmd::RunPlanCommand},
      {"backtest", "train on the first part of a trace, check the plan against the rest",
       gpuvpa::cmd::RunBacktestCommand},
      {"showback", "per cost center (or GPU model) costs, idle tax and savings from the ledger",
       gpuvpa::cmd::RunShowbackCommand},
      {"cost-api",
       "serve the ledger: OpenCost-compatible /allocation, FOCUS /focus (bearer token, TLS)",
       gpuvpa::cmd::RunCostApiCommand},
      {"ledger", "the ledger: migrate its schema, copy it between backends (SQLite, PostgreSQL)",
       gpuvpa::cmd::RunLedgerCommand},
      {"import-openb", "load the Alibaba openb pod/node trace into the ledger",
       gpuvpa::cmd::RunImportOpenbCommand},
  };
  return gpuvpa::RunDispatcher("gpuvpa",
                               "gpuvpa: GPU rightsizing, scale-to-zero and chargeback for "
                               "Kubernetes.",
                               commands, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                               std::cerr);
}
