// libFuzzer: the ScaledObject trigger metadata parser. The input is split into key/value pairs
// at NUL and '=' bytes, the way KEDA hands the scaler a map of strings.
#include <cstdint>
#include <string>
#include <string_view>

#include "scaler/metadata/scaled_object_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuvpa::scaler::TriggerMetadata metadata;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view pair = text.substr(start, end - start);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos)
      metadata[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
    start = end + 1;
  }
  (void)gpuvpa::scaler::ParseScaledObjectConfig("so", "ns", metadata);
  return 0;
}
