// Recommendations as JSON, both directions side by side: what `gpuvpa recommend --format json`
// writes is what `gpuvpa plan --recommendations` and `gpuvpa-updater --recommendations-file`
// read (proto field names, every field printed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "proto/gpuvpa.pb.h"

namespace gpuvpa {

// A JSON array, one recommendation per line.
std::string RecommendationsJson(const std::vector<const v1::Recommendation*>& recommendations);

// A JSON array of recommendations, or an object {"recommendations": [...]}. Unknown fields and
// every ValidateRecommendation failure are errors naming the recommendation and the field.
Result<std::vector<v1::Recommendation>> ParseRecommendationsJson(std::string_view text);

}  // namespace gpuvpa
