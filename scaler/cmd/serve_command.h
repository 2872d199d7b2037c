// gpuvpa-scaler serve: the KEDA external scaler service.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuvpa::scaler {

// Serves until SIGTERM or SIGINT, then flushes metering to the ledger.
int RunServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuvpa::scaler
