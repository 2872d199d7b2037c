// Prometheus instant-query source.
#include "scaler/sources/prometheus_source.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpuvpa::scaler {

PrometheusBackend::PrometheusBackend(std::string address, std::shared_ptr<HttpClient> client,
                                     int workers, size_t max_pending)
    : address_(std::move(address)),
      client_(std::move(client)),
      bulkhead_(std::make_unique<Bulkhead>("prometheus " + address_, workers, max_pending)) {}

Result<std::unique_ptr<PrometheusBackend>> PrometheusBackend::Create(
    const PrometheusBackendConfig& config, size_t max_pending) {
  HttpClientOptions http = config.http;
  http.max_idle_connections = static_cast<size_t>(config.max_concurrent_reads);
  http.max_response_bytes = 4u << 20;  // one aggregated sample; anything near this is wrong
  Result<std::shared_ptr<HttpClient>> client = HttpClient::Create(std::move(http));
  if (!client.ok()) return client.status();
  return std::unique_ptr<PrometheusBackend>(new PrometheusBackend(
      config.server_address, std::move(client).value(), config.max_concurrent_reads, max_pending));
}

Result<double> PrometheusQueueSource::ReadDepth(int, Deadline deadline) {
  Result<HttpResponse> http =
      backend_.client().Get("/api/v1/query?query=" + UrlEncode(config_.query), deadline);
  if (!http.ok()) return Status(StatusCode::kUnavailable, http.status().message());
  return ParsePrometheusDepth(http->body, http->status, config_.ignore_null_values, Describe());
}

Result<double> ParsePrometheusDepth(std::string_view body, int http_status, bool ignore_null_values,
                                    const std::string& where) {
  // Every access checks the type first: a body from a broken or hostile server may hold anything
  // (nlohmann's const operator[] on a missing key and value() on a wrong type are not safe).
  static const nlohmann::json kNull;
  auto member = [](const nlohmann::json& object, const char* key) -> const nlohmann::json& {
    if (!object.is_object()) return kNull;
    auto it = object.find(key);
    return it == object.end() ? kNull : *it;
  };
  auto text = [](const nlohmann::json& j) {
    return j.is_string() ? j.get<std::string>() : std::string();
  };
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return UnavailableError(where + ": HTTP " + std::to_string(http_status) +
                            " with a body that is not JSON");
  const nlohmann::json& data = member(doc, "data");
  if (text(member(doc, "status")) != "success" || !data.is_object()) {
    const std::string error = text(member(doc, "error"));
    return FailedPreconditionError(
        where + ": query failed: " +
        (error.empty() ? "HTTP " + std::to_string(http_status) : error.substr(0, 500)));
  }
  const std::string type = text(member(data, "resultType"));
  const nlohmann::json& result = member(data, "result");
  const nlohmann::json* value = &kNull;
  if (type == "scalar") {
    value = &result;
  } else if (type == "vector" && result.is_array()) {
    if (result.empty()) {
      if (ignore_null_values) return 0.0;
      return FailedPreconditionError(
          where + ": the query returned no series and ignoreNullValues is false");
    }
    if (result.size() > 1)
      return FailedPreconditionError(where + ": the query returned " +
                                     std::to_string(result.size()) +
                                     " series; aggregate it to one (e.g. sum(...))");
    value = &member(result[0], "value");
  } else {
    return FailedPreconditionError(where + ": result type \"" + type.substr(0, 80) +
                                   "\" is neither vector nor scalar");
  }
  if (!value->is_array() || value->size() != 2 || !(*value)[1].is_string())
    return UnavailableError(where + ": unexpected sample shape");
  const std::string sample = (*value)[1].get<std::string>();
  char* end = nullptr;
  const double v = std::strtod(sample.c_str(), &end);
  if (end == sample.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    return FailedPreconditionError(where + ": value \"" + sample.substr(0, 80) +
                                   "\" is not a queue depth");
  return v;
}

}  // namespace gpuvpa::scaler
