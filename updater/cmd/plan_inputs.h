// What `gpuvpa plan` reads: recommendations as `gpuvpa recommend --format json` (or the
// recommender's List API) writes them, checked at the boundary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "proto/gpuvpa.pb.h"

namespace gpuvpa::updater {

// A JSON array of recommendations, or an object {"recommendations": [...]}. Unknown fields,
// invalid names, numbers that are not finite, negative or above what a device holds are errors
// naming the workload and the field.
Result<std::vector<v1::Recommendation>> ParseRecommendationsJson(std::string_view text);

}  // namespace gpuvpa::updater
