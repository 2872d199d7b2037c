// Prometheus instant-query source.
#include "scaler/sources/prometheus_source.h"

#include <cmath>

#include "core/metrics/prometheus_api.h"

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
  Result<PrometheusQueryResult> parsed = ParsePrometheusResponse(
      body, http_status, {PrometheusResultType::kVector, PrometheusResultType::kScalar}, where);
  if (!parsed.ok()) {
    // A query Prometheus refuses, or a result of the wrong shape, is the ScaledObject's error,
    // not an outage: FAILED_PRECONDITION. Transport-level and server-side failures stay
    // UNAVAILABLE.
    if (parsed.status().code() == StatusCode::kInvalidArgument)
      return FailedPreconditionError(where + ": query failed: " + parsed.status().message());
    return Status(parsed.status().code(), where + ": " + parsed.status().message());
  }
  const std::vector<LabeledSeries>& series = parsed->series;
  if (series.empty() && parsed->skipped_points == 0) {
    if (ignore_null_values) return 0.0;
    return FailedPreconditionError(where +
                                   ": the query returned no series and ignoreNullValues is false");
  }
  if (series.size() > 1)
    return FailedPreconditionError(where + ": the query returned " + std::to_string(series.size()) +
                                   " series; aggregate it to one (e.g. sum(...))");
  if (series.empty() || series[0].points.size() != 1 || !(series[0].points[0].value >= 0))
    return FailedPreconditionError(where +
                                   ": the value is not a queue depth (not a finite, "
                                   "non-negative number)");
  return series[0].points[0].value;
}

}  // namespace gpuvpa::scaler
