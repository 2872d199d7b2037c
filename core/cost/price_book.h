// The price book: USD per GPU-hour per GPU model (and optionally per region), and the prices
// derived from it for MIG instances, shared replicas and fractional claims.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"

namespace gpuvpa {

struct GpuPrice {
  std::string gpu_model;  // catalog name, or a name outside the catalog given verbatim
  std::string region;     // empty: any region
  double usd_per_gpu_hour = 0;
  std::string source;  // where the figure comes from
};

// Prices are bounded: a typo such as 1e300 would otherwise overflow every sum it enters.
inline constexpr double kDefaultMaxUsdPerGpuHour = 1000;
// The largest bound a configuration may set: a year of a 100,000-GPU fleet at this price still
// fits in int64 micro-dollars many times over.
inline constexpr double kMaxPriceBoundUsdPerGpuHour = 1e6;

class PriceBook {
 public:
  // Defaults from public on-demand list prices (see price_book.cc for each source). Models
  // without a sourced default (H200, L40S, A30, P100, ...) have no price until configured.
  static PriceBook BuiltInDefaults();

  explicit PriceBook(const GpuCatalog& catalog = GpuCatalog::BuiltIn()) : catalog_(&catalog) {}

  // Adds or replaces a price. Prices outside (0, max] are refused naming the value. A
  // model the catalog does not know is kept under its own name (an in-house or new model).
  Status SetPrice(std::string_view gpu_model, std::string_view region, double usd_per_gpu_hour,
                  std::string source);

  // The price of one whole GPU-hour: the region's own price, else the model's default. An
  // unpriced model is an error naming it; nothing is ever priced at 0 by omission.
  Result<double> GpuHourPrice(std::string_view gpu_model, std::string_view region = {}) const;

  // The hourly price of a whole allocation: count x device fraction x GPU price (a MIG 3g.40gb
  // instance is 4/8 of the GPU price, a replica of a 4-way shared GPU 1/4, gpu-milli=460 0.46).
  Result<double> AllocationHourPrice(const GpuAllocation& allocation, std::string_view gpu_model,
                                     std::string_view region = {}) const;

  const std::vector<GpuPrice>& prices() const { return prices_; }
  // The largest accepted price (default kDefaultMaxUsdPerGpuHour); refused below a price
  // already set.
  Status SetMaxPrice(double usd_per_gpu_hour);
  double max_usd_per_gpu_hour() const { return max_usd_per_gpu_hour_; }

  // The catalog's name for `gpu_model` (a product name resolves to it), or `gpu_model` itself.
  std::string CanonicalModel(std::string_view gpu_model) const;
  // Whether the GPU catalog knows `gpu_model` (by its name or a product name for it).
  bool KnowsModel(std::string_view gpu_model) const;

 private:
  const GpuCatalog* catalog_;
  std::vector<GpuPrice> prices_;
  double max_usd_per_gpu_hour_ = kDefaultMaxUsdPerGpuHour;
};

}  // namespace gpuvpa
