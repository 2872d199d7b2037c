// A labelled time series as Prometheus and its text formats carry it: a metric name, label
// pairs, and (time, value) points. The one shape every metric input of gpuvpa reads into.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuvpa {

struct MetricPoint {
  double time_s = 0;  // Unix seconds
  double value = 0;
};

struct LabeledSeries {
  std::string metric;  // __name__ ("" when the query result has none, e.g. after a function)
  std::vector<std::pair<std::string, std::string>> labels;  // without __name__
  std::vector<MetricPoint> points;                          // in time order

  // The value of a label, or "" when absent (Prometheus treats an empty label as absent).
  std::string_view Label(std::string_view name) const {
    for (const auto& [k, v] : labels)
      if (k == name) return v;
    return {};
  }
};

}  // namespace gpuvpa
