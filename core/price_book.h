// The price book: USD per GPU-hour per GPU model (and optionally per region), and the prices
// derived from it for MIG instances, shared replicas and fractional claims.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_allocation.h"
#include "core/gpu_catalog.h"
#include "core/status.h"

namespace gpuvpa {

struct GpuPrice {
  std::string gpu_model;  // catalog name, or a name outside the catalog given verbatim
  std::string region;     // empty: any region
  double usd_per_gpu_hour = 0;
  std::string source;  // where the figure comes from
};

class PriceBook {
 public:
  // Defaults from public on-demand list prices (see price_book.cc for each source). Models
  // without a sourced default (H200, L40S, A30, P100, ...) have no price until configured.
  static PriceBook BuiltInDefaults();

  explicit PriceBook(const GpuCatalog& catalog = GpuCatalog::BuiltIn()) : catalog_(&catalog) {}

  // Adds or replaces a price. Negative, NaN or infinite prices are refused naming the value. A
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

 private:
  std::string CanonicalModel(std::string_view gpu_model) const;

  const GpuCatalog* catalog_;
  std::vector<GpuPrice> prices_;
};

}  // namespace gpuvpa
