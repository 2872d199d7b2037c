// Prometheus API response parsing on simdjson's DOM: one pass builds the tape (gigabytes per
// second), then the walk below checks every type it reads.
#include "core/metrics/prometheus_api.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>

namespace gpuvpa {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string Quoted(std::string_view query) { return "query \"" + std::string(query) + "\""; }

std::string BodyStart(std::string_view body) {
  constexpr size_t kShown = 120;
  std::string shown(body.substr(0, kShown));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return "\"" + shown + (body.size() > kShown ? "...\"" : "\"");
}

// A sample value is a JSON string ("1.5", "NaN", "+Inf"). True and the value when finite.
bool ParseSampleValue(std::string_view text, double& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out);
}

// [time, "value"] → a point; false when the pair is malformed or the value not finite.
bool ParsePoint(element pair, MetricPoint& point) {
  array a;
  if (pair.get_array().get(a) != simdjson::SUCCESS || a.size() != 2) return false;
  double t = 0;
  std::string_view v;
  if (a.at(0).get_double().get(t) != simdjson::SUCCESS || !std::isfinite(t)) return false;
  if (a.at(1).get_string().get(v) != simdjson::SUCCESS) return false;
  point.time_s = t;
  return ParseSampleValue(v, point.value);
}

Status ShapeError(std::string_view query, const std::string& what) {
  return InvalidArgumentError("Prometheus " + Quoted(query) + ": response " + what);
}

Result<LabeledSeries> ParseSeries(element e, bool matrix, std::string_view query,
                                  PrometheusQueryResult& out) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS)
    return ShapeError(query, "result entry is not an object");
  LabeledSeries series;
  object metric;
  if (o["metric"].get_object().get(metric) == simdjson::SUCCESS) {
    for (auto field : metric) {
      std::string_view value;
      if (field.value.get_string().get(value) != simdjson::SUCCESS)
        return ShapeError(query, "label \"" + std::string(field.key) + "\" is not a string");
      if (field.key == "__name__")
        series.metric.assign(value);
      else
        series.labels.emplace_back(std::string(field.key), std::string(value));
    }
  }
  if (array h; o[matrix ? "histograms" : "histogram"].get(h) == simdjson::SUCCESS)
    out.skipped_histograms += matrix ? h.size() : 1;
  if (matrix) {
    array values;
    if (o["values"].get_array().get(values) == simdjson::SUCCESS) {
      series.points.reserve(values.size());
      for (element pair : values) {
        MetricPoint p;
        if (ParsePoint(pair, p))
          series.points.push_back(p);
        else
          ++out.skipped_points;
      }
    } else if (o["values"].error() != simdjson::NO_SUCH_FIELD ||
               o["histograms"].error() == simdjson::NO_SUCH_FIELD) {
      return ShapeError(query, "matrix entry has no \"values\" array");
    }
  } else {
    element value;
    if (o["value"].get(value) == simdjson::SUCCESS) {
      MetricPoint p;
      if (ParsePoint(value, p))
        series.points.push_back(p);
      else
        ++out.skipped_points;
    } else if (o["histogram"].error() == simdjson::NO_SUCH_FIELD) {
      return ShapeError(query, "vector entry has no \"value\"");
    }
  }
  return series;
}

}  // namespace

const char* PrometheusResultTypeName(PrometheusResultType type) {
  switch (type) {
    case PrometheusResultType::kMatrix:
      return "matrix";
    case PrometheusResultType::kVector:
      return "vector";
    case PrometheusResultType::kScalar:
      return "scalar";
    case PrometheusResultType::kString:
      return "string";
  }
  return "?";
}

namespace {

// Parses `body` (on this thread's parser: the object lives until its next parse) and returns
// the envelope's object when its status is "success", or the error it reports.
Result<object> SuccessEnvelope(std::string_view body, int http_status, std::string_view query,
                               std::vector<std::string>* warnings) {
  thread_local simdjson::dom::parser parser;
  element doc;
  object root;
  if (parser.parse(body.data(), body.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(root) != simdjson::SUCCESS)
    return UnavailableError("Prometheus " + Quoted(query) + ": HTTP " +
                            std::to_string(http_status) +
                            " with a body that is not the API's JSON: " + BodyStart(body));
  if (array list;
      warnings != nullptr && root["warnings"].get_array().get(list) == simdjson::SUCCESS) {
    for (element w : list) {
      std::string_view text;
      warnings->emplace_back(w.get_string().get(text) == simdjson::SUCCESS ? text
                                                                           : "(not a string)");
    }
  }
  std::string_view status;
  if (root["status"].get_string().get(status) != simdjson::SUCCESS)
    return ShapeError(query, "has no \"status\" string (HTTP " + std::to_string(http_status) + ")");
  if (status == "error") {
    std::string_view type = "unknown", message = "(no message)";
    if (root["errorType"].get_string().get(type) != simdjson::SUCCESS) type = "unknown";
    if (root["error"].get_string().get(message) != simdjson::SUCCESS) message = "(no message)";
    std::string text = "Prometheus " + Quoted(query) + ": HTTP " + std::to_string(http_status) +
                       ", " + std::string(type) + ": " + std::string(message);
    if (type == "bad_data") return InvalidArgumentError(std::move(text));
    return UnavailableError(std::move(text));
  }
  if (status != "success")
    return ShapeError(query, "status \"" + std::string(status) + "\" is neither success nor error");
  return root;
}

}  // namespace

Result<std::vector<std::string>> ParsePrometheusLabelValues(std::string_view body, int http_status,
                                                            std::string_view query) {
  Result<object> root = SuccessEnvelope(body, http_status, query, nullptr);
  if (!root.ok()) return root.status();
  array data;
  if ((*root)["data"].get_array().get(data) != simdjson::SUCCESS)
    return ShapeError(query, "has no \"data\" array");
  std::vector<std::string> values;
  for (element e : data) {
    std::string_view v;
    if (e.get_string().get(v) != simdjson::SUCCESS)
      return ShapeError(query, "label value is not a string");
    values.emplace_back(v);
  }
  return values;
}

Result<PrometheusQueryResult> ParsePrometheusResponse(std::string_view body, int http_status,
                                                      PrometheusResultType expected,
                                                      std::string_view query) {
  return ParsePrometheusResponse(body, http_status, {expected}, query);
}

Result<PrometheusQueryResult> ParsePrometheusResponse(
    std::string_view body, int http_status, std::initializer_list<PrometheusResultType> accepted,
    std::string_view query) {
  PrometheusQueryResult out;
  Result<object> envelope = SuccessEnvelope(body, http_status, query, &out.warnings);
  if (!envelope.ok()) return envelope.status();
  object root = *envelope;
  object data;
  if (root["data"].get_object().get(data) != simdjson::SUCCESS)
    return ShapeError(query, "has no \"data\" object");
  std::string_view type;
  if (data["resultType"].get_string().get(type) != simdjson::SUCCESS)
    return ShapeError(query, "has no \"data.resultType\" string");
  const PrometheusResultType* match = nullptr;
  std::string names;
  for (const PrometheusResultType& t : accepted) {
    if (type == PrometheusResultTypeName(t)) match = &t;
    names += (names.empty() ? "\"" : " or \"") + std::string(PrometheusResultTypeName(t)) + "\"";
  }
  if (match == nullptr)
    return ShapeError(query, "resultType is \"" + std::string(type).substr(0, 80) +
                                 "\", expected " + names + " (check that the query returns " +
                                 names + " data)");
  const PrometheusResultType expected = *match;
  out.type = expected;
  if (expected == PrometheusResultType::kScalar || expected == PrometheusResultType::kString) {
    element value;
    if (data["result"].get(value) != simdjson::SUCCESS)
      return ShapeError(query, "has no \"data.result\"");
    MetricPoint p;
    LabeledSeries series;
    if (ParsePoint(value, p))
      series.points.push_back(p);
    else
      ++out.skipped_points;
    out.series.push_back(std::move(series));
    return out;
  }
  array result;
  if (data["result"].get_array().get(result) != simdjson::SUCCESS)
    return ShapeError(query, "has no \"data.result\" array");
  out.series.reserve(result.size());
  const bool matrix = expected == PrometheusResultType::kMatrix;
  for (element e : result) {
    Result<LabeledSeries> series = ParseSeries(e, matrix, query, out);
    if (!series.ok()) return series.status();
    out.series.push_back(std::move(series).value());
  }
  return out;
}

}  // namespace gpuvpa
