// Structured process logs (spdlog): one line per event on stderr, UTC timestamp with
// milliseconds, level, message. Every long-running command calls ConfigureLogging once.
#pragma once

#include <string>

#include "core/base/status.h"

namespace gpuvpa {

// `level`: trace, debug, info, warn, error, off. INVALID_ARGUMENT naming the value otherwise.
Status ConfigureLogging(const std::string& level);

}  // namespace gpuvpa
