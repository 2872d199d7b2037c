// gpuvpa-scaler replay: the queue replay as a command.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuvpa::scaler {

// gpuvpa-scaler replay --arrivals FILE --service-seconds S [--target 5] [--activation 0]
//   [--max-replicas 10] [--poll-seconds 30] [--cooldown-seconds 300]
//   [--stabilization-seconds 300] [--cold-start-seconds 60] [--gpu-per-replica 1]
//   [--usd-per-gpu-hour P | --gpu-model M [--config FILE]]
//   [--ledger FILE --namespace NS --scaled-object NAME --cost-center CC]
int RunReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// gpuvpa-scaler demo-arrivals --out FILE: the demo's queue (GenerateDemoArrivals).
int RunDemoArrivalsCommand(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err);

}  // namespace gpuvpa::scaler
