// Timestamp parsing and formatting on absl's time library (civil-time rules, range checks).
#include "core/base/time_format.h"

#include <absl/time/clock.h>
#include <absl/time/time.h>

#include <charconv>
#include <cmath>
#include <string>

namespace gpuvpa {
namespace {

Status Bad(std::string_view text, std::string_view why) {
  return InvalidArgumentError("timestamp \"" + std::string(text) +
                              "\" is neither Unix seconds nor RFC 3339 "
                              "(YYYY-MM-DD[THH:MM:SS[.f][Z|+HH:MM]])" +
                              (why.empty() ? "" : ": " + std::string(why)));
}

double UnixSecondsOf(absl::Time t) { return absl::ToDoubleSeconds(t - absl::UnixEpoch()); }

}  // namespace

Result<double> ParseTimestamp(std::string_view s) {
  if (s.size() < 10 || s[4] != '-') {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return Bad(s, "");
    return v;
  }
  // RFC 3339 allows a space or a lower-case 't' between date and time; absl wants 'T'.
  std::string text(s);
  if (text.size() > 10 && (text[10] == ' ' || text[10] == 't')) text[10] = 'T';
  if (!text.empty() && text.back() == 'z') text.back() = 'Z';
  absl::Time t;
  std::string err;
  // With a zone; then a date-time without one (UTC); then a date alone (midnight UTC). absl
  // refuses out-of-range fields such as 2026-02-31.
  for (const char* format : {"%Y-%m-%dT%H:%M:%E*S%Ez", "%Y-%m-%dT%H:%M:%E*S", "%Y-%m-%d"}) {
    if (absl::ParseTime(format, text, absl::UTCTimeZone(), &t, &err)) return UnixSecondsOf(t);
  }
  return Bad(s, err);
}

double UnixNowSeconds() { return UnixSecondsOf(absl::Now()); }

std::string FormatTimestamp(double unix_seconds) {
  if (!std::isfinite(unix_seconds)) return "(not a time)";
  const absl::Time t = absl::FromUnixSeconds(static_cast<int64_t>(std::floor(unix_seconds)));
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace gpuvpa
