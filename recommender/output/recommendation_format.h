// Renders recommendations for people (an aligned table) and for programs (JSON).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "proto/gpuvpa.pb.h"

namespace gpuvpa::recommender {

enum class OutputFormat { kTable, kJson };

Result<OutputFormat> ParseOutputFormat(std::string_view text);

// Rows sorted by namespace/kind/name/container.
std::string FormatRecommendations(std::vector<v1::Recommendation> recommendations, OutputFormat format);

}  // namespace gpuvpa::recommender
