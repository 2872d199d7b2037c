// gpuvpa-scaler: the KEDA external scaler (serve) and the arrival-trace replay. Flags and wiring
// live in the commands; all logic is in the libraries.
#include <iostream>
#include <string>
#include <vector>

#include "core/cli/cli.h"
#include "scaler/cmd/replay_command.h"
#include "scaler/cmd/serve_command.h"

int main(int argc, char** argv) {
  const std::vector<gpuvpa::Subcommand> commands = {
      {"serve", "the KEDA external scaler (gRPC ExternalScaler + QueueDepthPush, /metrics)",
       gpuvpa::scaler::RunServeCommand},
      {"replay", "replay a request-arrival trace through a simulated queue: metered vs reserved",
       gpuvpa::scaler::RunReplayCommand},
      {"demo-arrivals", "write the demo's queue-arrival trace (nightly training jobs)",
       gpuvpa::scaler::RunDemoArrivalsCommand},
  };
  return gpuvpa::RunDispatcher(
      "gpuvpa-scaler", "gpuvpa-scaler: KEDA external scaler for GPU scale-to-zero.", commands,
      std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
