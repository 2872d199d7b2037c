// gpuvpa-scaler: the KEDA external scaler (serve) and the arrival-trace replay. Flags and wiring
// live in the commands; all logic is in the libraries.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "scaler/cmd/replay_command.h"
#include "scaler/cmd/serve_command.h"

namespace {

constexpr const char* kUsage =
    "usage: gpuvpa-scaler COMMAND [flags]\n"
    "commands:\n"
    "  serve   the KEDA external scaler (gRPC ExternalScaler + QueueDepthPush, /metrics)\n"
    "  replay  replay a request-arrival trace through a simulated queue: metered vs reserved\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  if (command == "serve") return gpuvpa::scaler::RunServeCommand(args, std::cout, std::cerr);
  if (command == "replay") return gpuvpa::scaler::RunReplayCommand(args, std::cout, std::cerr);
  if (command == "help" || command == "--help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << kUsage;
  return 2;
}
