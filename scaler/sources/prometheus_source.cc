// Prometheus instant-query source.
#include "scaler/sources/prometheus_source.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/net/http_client.h"

namespace gpuvpa::scaler {

Result<double> PrometheusQueueSource::ReadDepth() {
  std::string base = config_.server_address;
  while (!base.empty() && base.back() == '/') base.pop_back();
  Result<HttpResponse> http =
      HttpGet(base + "/api/v1/query?query=" + UrlEncode(config_.query), timeout_);
  if (!http.ok()) return Status(StatusCode::kUnavailable, http.status().message());
  const std::string where = Describe();
  nlohmann::json doc = nlohmann::json::parse(http->body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return UnavailableError(where + ": HTTP " + std::to_string(http->status) +
                            " with a body that is not JSON");
  if (doc.value("status", "") != "success")
    return FailedPreconditionError(
        where + ": query failed: " + doc.value("error", "HTTP " + std::to_string(http->status)));
  const nlohmann::json& data = doc["data"];
  const std::string type = data.value("resultType", "");
  nlohmann::json value;
  if (type == "scalar") {
    value = data["result"];
  } else if (type == "vector") {
    const nlohmann::json& result = data["result"];
    if (result.empty()) {
      if (config_.ignore_null_values) return 0.0;
      return FailedPreconditionError(
          where + ": the query returned no series and ignoreNullValues is false");
    }
    if (result.size() > 1)
      return FailedPreconditionError(where + ": the query returned " +
                                     std::to_string(result.size()) +
                                     " series; aggregate it to one (e.g. sum(...))");
    value = result[0]["value"];
  } else {
    return FailedPreconditionError(where + ": result type \"" + type +
                                   "\" is neither vector nor scalar");
  }
  if (!value.is_array() || value.size() != 2 || !value[1].is_string())
    return UnavailableError(where + ": unexpected sample shape");
  const std::string text = value[1].get<std::string>();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v < 0)
    return FailedPreconditionError(where + ": value \"" + text + "\" is not a queue depth");
  return v;
}

}  // namespace gpuvpa::scaler
