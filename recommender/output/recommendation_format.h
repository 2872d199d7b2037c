// Renders recommendations for people (an aligned table) and for programs (JSON).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "recommender/logic/recommendation.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

enum class OutputFormat { kTable, kJson };

Result<OutputFormat> ParseOutputFormat(std::string_view text);

// Rows sorted by namespace/kind/name/container.
std::string FormatRecommendations(const std::vector<Recommendation>& recommendations,
                                  const FleetStore& store, OutputFormat format);

}  // namespace gpuvpa::recommender
