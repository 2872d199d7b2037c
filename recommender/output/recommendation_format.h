// Renders recommendations for people (an aligned table) and for programs (JSON).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/cost/money.h"
#include "core/cost/price_book.h"
#include "recommender/logic/recommendation.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

enum class OutputFormat { kTable, kJson };

Result<OutputFormat> ParseOutputFormat(std::string_view text);

struct FormatOptions {
  OutputFormat format = OutputFormat::kTable;
  // The table fits kTableWidth columns unless wide (every column, nothing cut).
  bool wide = false;
  // Money is shown where the GPU model has a price; null: GPU-hours only.
  const PriceBook* prices = nullptr;
  std::string region;
};

inline constexpr size_t kTableWidth = 120;

// Rows sorted by idle-tax cost, largest first (GPU-hours where there is no price), then name.
struct PricedMoney {
  MicroUsd idle_tax_vram = 0;
  MicroUsd allocated = 0;
};
// The wire form, with idle tax and allocated cost in dollars where the model has a price
// (`priced` says so); `money` gets the exact amounts.
v1::Recommendation PricedRecommendation(const Recommendation& r, const FleetStore& store,
                                        const PriceBook* prices, const std::string& region,
                                        PricedMoney* money = nullptr);

// The charts of a store row (what the owner reports draw): its histograms' buckets that hold
// weight, normalised, and its latest week of activity by hour.
v1::WorkloadCharts ChartsOf(const FleetStore& store, uint32_t row);

std::string FormatRecommendations(const std::vector<Recommendation>& recommendations,
                                  const FleetStore& store, const FormatOptions& options);

}  // namespace gpuvpa::recommender
