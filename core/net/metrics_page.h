// /metrics for every gpuvpa daemon: a prometheus-cpp registry in text format 0.0.4, served by
// the project's HTTP server (no second web server with metrics of its own), with
// gpuvpa_build_info.
#pragma once

#include <prometheus/registry.h>

#include <string_view>

#include "core/net/http_server.h"

namespace gpuvpa {

// gpuvpa_build_info{component, version} 1, in `registry`.
void RegisterBuildInfo(prometheus::Registry& registry, std::string_view component);

// The registry's samples as Prometheus scrapes them.
HttpServerResponse MetricsPage(prometheus::Registry& registry);

}  // namespace gpuvpa
