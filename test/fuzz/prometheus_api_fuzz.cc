// libFuzzer: a Prometheus API body as a hostile or broken server (or proxy) could send it to the
// recommender: query_range, instant and label-values responses. Any input is an error or series
// whose every point is finite.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/metrics/prometheus_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  using gpuvpa::PrometheusResultType;
  for (PrometheusResultType t : {PrometheusResultType::kMatrix, PrometheusResultType::kVector,
                                 PrometheusResultType::kScalar}) {
    gpuvpa::Result<gpuvpa::PrometheusQueryResult> r =
        gpuvpa::ParsePrometheusResponse(body, 200, t, "fuzz");
    if (!r.ok()) {
      if (r.status().message().empty()) std::abort();
      continue;
    }
    if (r->type != t) std::abort();
    for (const gpuvpa::LabeledSeries& s : r->series)
      for (const gpuvpa::MetricPoint& p : s.points)
        if (!std::isfinite(p.time_s) || !std::isfinite(p.value)) std::abort();
  }
  (void)gpuvpa::ParsePrometheusLabelValues(body, 200, "fuzz");
  return 0;
}
