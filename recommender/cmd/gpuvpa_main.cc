// gpuvpa: the command-line entry point. Dispatches subcommands; all logic lives in libraries.
#include <iostream>
#include <string>
#include <vector>

#include "core/openb_import.h"
#include "core/showback.h"
#include "recommender/cmd/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: gpuvpa COMMAND [flags]\n"
    "commands:\n"
    "  recommend   replay a trace and print per-workload GPU recommendations\n"
    "  demo-trace  write the deterministic demo fleet trace\n"
    "  showback    per cost center (or GPU model) costs, idle tax and savings from the ledger\n"
    "  import-openb  load the Alibaba openb pod/node trace into the ledger as allocated usage\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "recommend")
    return gpuvpa::recommender::RunRecommendCommand(args, std::cout, std::cerr);
  if (command == "demo-trace")
    return gpuvpa::recommender::RunDemoTraceCommand(args, std::cout, std::cerr);
  if (command == "showback") return gpuvpa::RunShowbackCommand(args, std::cout, std::cerr);
  if (command == "import-openb") return gpuvpa::RunImportOpenbCommand(args, std::cout, std::cerr);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "gpuvpa: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
