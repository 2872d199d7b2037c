// The /metrics answer.
#include "core/net/metrics_page.h"

#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include "core/cli/cli.h"

namespace gpuvpa {

void RegisterBuildInfo(prometheus::Registry& registry, std::string_view component) {
  prometheus::BuildGauge()
      .Name("gpuvpa_build_info")
      .Help("1, labelled with the component and its version")
      .Register(registry)
      .Add({{"component", std::string(component)}, {"version", std::string(GpuvpaVersion())}})
      .Set(1);
}

HttpServerResponse MetricsPage(prometheus::Registry& registry) {
  return {200, "text/plain; version=0.0.4; charset=utf-8",
          prometheus::TextSerializer().Serialize(registry.Collect())};
}

}  // namespace gpuvpa
