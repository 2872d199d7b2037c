// libFuzzer: timestamp parsing and formatting; a parsed time formats without fault.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/base/time_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuvpa::Result<double> t =
      gpuvpa::ParseTimestamp(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) return 0;
  if (!std::isfinite(*t)) std::abort();
  if (std::abs(*t) < 1e12) (void)gpuvpa::FormatTimestamp(*t);
  return 0;
}
