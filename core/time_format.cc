// Timestamp parsing without locale or time-zone database dependencies (UTC arithmetic only).
#include "core/time_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace gpuvpa {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

Status Bad(std::string_view text) {
  return InvalidArgumentError(
      "timestamp \"" + std::string(text) +
      "\" is neither Unix seconds nor RFC 3339 (YYYY-MM-DDTHH:MM:SS[.f][Z|+HH:MM])");
}

}  // namespace

Result<double> ParseTimestamp(std::string_view s) {
  if (s.size() < 19 || s[4] != '-') {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return Bad(s);
    return v;
  }
  int year, month, day, hour, minute, second;
  if (!Digits(s, 0, 4, year) || !Digits(s, 5, 2, month) || s[7] != '-' || !Digits(s, 8, 2, day) ||
      (s[10] != 'T' && s[10] != ' ' && s[10] != 't') || !Digits(s, 11, 2, hour) || s[13] != ':' ||
      !Digits(s, 14, 2, minute) || s[16] != ':' || !Digits(s, 17, 2, second))
    return Bad(s);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return Bad(s);
  double fraction = 0;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    double scale = 0.1;
    ++pos;
    const size_t start = pos;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, scale /= 10)
      fraction += (s[pos] - '0') * scale;
    if (pos == start) return Bad(s);
  }
  int offset_s = 0;
  if (pos < s.size()) {
    if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
      // UTC
    } else if ((s[pos] == '+' || s[pos] == '-') && pos + 6 == s.size() && s[pos + 3] == ':') {
      int oh, om;
      if (!Digits(s, pos + 1, 2, oh) || !Digits(s, pos + 4, 2, om)) return Bad(s);
      offset_s = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    } else {
      return Bad(s);
    }
  }
  const int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t seconds_of_day = int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset_s;
  return static_cast<double>(days * 86400 + seconds_of_day) + fraction;
}

std::string FormatTimestamp(double unix_seconds) {
  const auto t = static_cast<int64_t>(std::floor(unix_seconds));
  int64_t days = t / 86400;
  int64_t rem = t % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // civil_from_days (H. Hinnant)
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  return buf;
}

}  // namespace gpuvpa
