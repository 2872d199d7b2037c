// spdlog configuration.
#include "core/cli/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace gpuvpa {

Status ConfigureLogging(const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    return InvalidArgumentError("--log-level \"" + level +
                                "\" is not one of trace, debug, info, warn, error, off");
  auto logger =
      std::make_shared<spdlog::logger>("gpuvpa", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
  return OkStatus();
}

}  // namespace gpuvpa
