// libFuzzer: the YAML config loader (prices, bounds, cost centers).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/config/config.h"
#include "core/cost/money.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuvpa::Result<gpuvpa::GpuvpaConfig> config =
      gpuvpa::ParseConfig(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!config.ok()) return 0;
  // Every accepted price is within its bound: pricing a day of it cannot overflow.
  for (const gpuvpa::GpuPrice& p : config->prices.prices()) {
    if (!(p.usd_per_gpu_hour > 0 && p.usd_per_gpu_hour <= config->prices.max_usd_per_gpu_hour()))
      std::abort();
    if (!gpuvpa::PriceGpuTime(86400 * 1000, p.usd_per_gpu_hour).ok()) std::abort();
  }
  return 0;
}
