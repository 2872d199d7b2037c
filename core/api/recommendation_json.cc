// Recommendations to and from JSON in the proto's own JSON mapping: written by ProtoJsonWriter
// (protobuf's printer's bytes, ~15x faster: recommend_command_bench), read by protobuf's parser.
#include "core/api/recommendation_json.h"

#include <google/protobuf/util/json_util.h>

#include "core/api/proto_json.h"
#include "core/api/recommendation_contract.h"

namespace gpuvpa {

std::string RecommendationsJson(const std::vector<const v1::Recommendation*>& recommendations) {
  ProtoJsonWriter writer;
  std::string out = "[";
  for (size_t i = 0; i < recommendations.size(); ++i) {
    out += i == 0 ? "\n  " : ",\n  ";
    writer.Append(*recommendations[i], out);
    // Room for the rest at the first one's size, not a doubling at every power of two.
    if (i == 0) out.reserve(out.size() * recommendations.size() * 9 / 8);
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
