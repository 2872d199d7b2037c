// The one HTTP client of gpuvpa: plain HTTP/1.1 GET with a deadline over the whole exchange.
// Enough for Prometheus' API and similar JSON endpoints inside a cluster. No TLS (an https URL
// is refused with a clear error, never silently downgraded).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

struct HttpResponse {
  int status = 0;
  std::string body;
};

// GETs `url` (http://host[:port]/path?query). UNAVAILABLE when the server cannot be reached or
// does not answer in time; INVALID_ARGUMENT for a URL it cannot use.
Result<HttpResponse> HttpGet(std::string_view url, std::chrono::milliseconds timeout);

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view text);

}  // namespace gpuvpa
