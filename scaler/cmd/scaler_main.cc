// gpuvpa-scaler: the scaler's entry point. Today it offers the queue replay; the KEDA external
// scaler service is not built yet (see scaler/README.md).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "scaler/cmd/replay_command.h"

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  if (command == "replay") return gpuvpa::scaler::RunReplayCommand(args, std::cout, std::cerr);
  std::cerr << "usage: gpuvpa-scaler replay --arrivals FILE --service-seconds S [flags]\n";
  return command == "help" || command == "--help" ? 0 : 2;
}
