// Timestamps as they appear in traces and APIs.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

// Unix seconds ("1793577600", "1793577600.25") or RFC 3339 / ISO 8601 in UTC or with an offset
// ("2026-11-02T00:00:00Z", "2026-11-02 00:00:00.125", "2026-11-02T01:00:00+01:00"). A date-time
// without a zone is UTC, and so is a date alone ("2026-11-06" is its midnight). Invalid dates
// ("2026-02-31") are refused.
Result<double> ParseTimestamp(std::string_view text);

// The wall clock as Unix seconds: the one place the project reads it.
double UnixNowSeconds();

// "2026-11-02T00:00:00Z" (whole seconds, UTC).
std::string FormatTimestamp(double unix_seconds);

}  // namespace gpuvpa
