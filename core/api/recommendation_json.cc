// Recommendations to and from JSON through the proto's own JSON mapping.
#include "core/api/recommendation_json.h"

#include <google/protobuf/util/json_util.h>

#include "core/api/recommendation_contract.h"

namespace gpuvpa {

std::string RecommendationsJson(const std::vector<const v1::Recommendation*>& recommendations) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out = "[";
  for (size_t i = 0; i < recommendations.size(); ++i) {
    std::string one;
    (void)google::protobuf::util::MessageToJsonString(*recommendations[i], &one, options);
    out += (i == 0 ? "\n  " : ",\n  ") + one;
  }
  out += recommendations.empty() ? "]\n" : "\n]\n";
  return out;
}

Result<std::vector<v1::Recommendation>> ParseRecommendationsJson(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first == std::string_view::npos) return InvalidArgumentError("recommendations: empty file");
  std::string wrapped = text[first] == '['
                            ? "{\"recommendations\":" + std::string(text.substr(first)) + "}"
                            : std::string(text.substr(first));
  v1::ListRecommendationsResponse list;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (auto s = google::protobuf::util::JsonStringToMessage(wrapped, &list, options); !s.ok())
    return InvalidArgumentError("recommendations: not a JSON list of recommendations: " +
                                std::string(s.message()));
  std::vector<v1::Recommendation> out(list.recommendations().begin(), list.recommendations().end());
  for (size_t i = 0; i < out.size(); ++i)
    if (Status s = ValidateRecommendation(out[i], "recommendations[" + std::to_string(i) + "]");
        !s.ok())
      return s;
  return out;
}

}  // namespace gpuvpa
