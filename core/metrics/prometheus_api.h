// Prometheus HTTP API responses (/api/v1/query and /api/v1/query_range), parsed with simdjson.
// Every access is type-checked: a response of the wrong shape is an error naming the query and
// what was wrong, never a crash or a silent zero.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/metrics/labeled_series.h"

namespace gpuvpa {

enum class PrometheusResultType { kMatrix, kVector, kScalar, kString };

struct PrometheusQueryResult {
  PrometheusResultType type = PrometheusResultType::kMatrix;
  std::vector<LabeledSeries> series;  // scalar results: one series with no labels
  // The server's warnings (e.g. a partial response from Thanos or a federated query): the data
  // is usable but may be incomplete; callers report them with the query.
  std::vector<std::string> warnings;
  size_t skipped_points = 0;      // NaN, infinite or unparsable sample values
  size_t skipped_histograms = 0;  // native-histogram samples (not usage; skipped)
};

// Parses one API response. `http_status` and `query` are for the error messages. Errors:
// status "error" bodies → INVALID_ARGUMENT for bad_data, UNAVAILABLE for timeout, canceled,
// unavailable, execution and internal errors (a retry may help), each naming the query, the
// errorType and the server's message; a result type other than `expected` → INVALID_ARGUMENT;
// a body that is not the API's JSON (a proxy's HTML page, a truncated body) → UNAVAILABLE with
// the HTTP status and the start of the body.
Result<PrometheusQueryResult> ParsePrometheusResponse(std::string_view body, int http_status,
                                                      PrometheusResultType expected,
                                                      std::string_view query);

// /api/v1/label/<name>/values: the values, with the same error rules.
Result<std::vector<std::string>> ParsePrometheusLabelValues(std::string_view body, int http_status,
                                                            std::string_view query);

// The same, accepting any of several result types (`type` in the result says which).
Result<PrometheusQueryResult> ParsePrometheusResponse(
    std::string_view body, int http_status, std::initializer_list<PrometheusResultType> accepted,
    std::string_view query);

const char* PrometheusResultTypeName(PrometheusResultType type);

}  // namespace gpuvpa
