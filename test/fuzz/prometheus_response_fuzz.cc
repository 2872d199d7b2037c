// libFuzzer: the body of a Prometheus instant-query response, as a hostile or broken Prometheus
// could send it to the scaler. Any input is an error or a finite, non-negative depth.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scaler/sources/prometheus_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (bool ignore_null : {true, false}) {
    gpuvpa::Result<double> depth =
        gpuvpa::scaler::ParsePrometheusDepth(body, 200, ignore_null, "fuzz");
    if (depth.ok() && (!std::isfinite(*depth) || *depth < 0)) std::abort();
  }
  return 0;
}
