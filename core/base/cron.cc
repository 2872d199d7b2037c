// Cron schedule parsing and matching, on absl's civil time (UTC).
#include "core/base/cron.h"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>

#include <array>
#include <charconv>
#include <vector>

namespace gpuvpa {
namespace {

struct FieldSpec {
  const char* name;
  int min, max;
  std::array<const char*, 12> names;  // names[i] is value min + i (months from 1, days from 0)
};

constexpr FieldSpec kFields[] = {
    {"minute", 0, 59, {}},
    {"hour", 0, 23, {}},
    {"day of month", 1, 31, {}},
    {"month",
     1,
     12,
     {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
    {"day of week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::optional<int> Value(std::string_view text, const FieldSpec& f) {
  const std::string lower = Lower(text);
  for (size_t i = 0; i < f.names.size(); ++i)
    if (f.names[i] != nullptr && lower == f.names[i]) return f.min + static_cast<int>(i);
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < f.min || v > f.max)
    return std::nullopt;
  return v;
}

// Sets the values one field allows; `restricted` unless the field is `*` (or `*/1`).
Status ParseField(std::string_view text, const FieldSpec& f, std::vector<bool>& allowed,
                  bool& restricted) {
  auto bad = [&](std::string_view part, std::string_view why) {
    return InvalidArgumentError("cron " + std::string(f.name) + " \"" + std::string(text) +
                                "\": \"" + std::string(part) + "\" " + std::string(why));
  };
  allowed.assign(static_cast<size_t>(f.max + 1), false);
  restricted = text != "*" && text != "*/1";
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view part =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (part.empty()) return bad(part, "is empty");
    std::string_view range = part;
    int step = 1;
    if (const size_t slash = part.find('/'); slash != std::string_view::npos) {
      range = part.substr(0, slash);
      const std::string_view s = part.substr(slash + 1);
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
      if (ec != std::errc() || end != s.data() + s.size() || step < 1 || step > f.max)
        return bad(part, "has a step that is not between 1 and " + std::to_string(f.max));
    }
    int lo = f.min, hi = f.max == 7 ? 6 : f.max;  // `*` in the weekday field: 0..6
    if (range != "*") {
      const size_t dash = range.find('-');
      const std::optional<int> a = Value(range.substr(0, dash), f);
      const std::optional<int> b =
          dash == std::string_view::npos ? a : Value(range.substr(dash + 1), f);
      if (!a || !b)
        return bad(part, "is not a value between " + std::to_string(f.min) + " and " +
                             std::to_string(f.max));
      if (*a > *b) return bad(part, "runs backwards");
      lo = *a;
      // "5/15" (a value with a step) runs to the end, as cron reads it.
      hi = dash == std::string_view::npos && step > 1 ? f.max : *b;
    }
    for (int v = lo; v <= hi; v += step) allowed[static_cast<size_t>(v)] = true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return OkStatus();
}

}  // namespace

Result<CronSchedule> CronSchedule::Parse(std::string_view written) {
  std::string text(written);
  const std::pair<const char*, const char*> kMacros[] = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"}};
  for (const auto& [macro, fields] : kMacros)
    if (text == macro) text = fields;
  std::vector<std::string_view> fields;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    rest = rest.substr(start);
    const size_t end = rest.find_first_of(" \t");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  if (fields.size() != 5)
    return InvalidArgumentError("cron schedule \"" + std::string(written) + "\" has " +
                                std::to_string(fields.size()) +
                                " fields, not 5 (minute hour day-of-month month day-of-week)");
  CronSchedule s;
  s.text_ = std::string(written);
  std::vector<bool> allowed;
  bool restricted = false;
  for (size_t i = 0; i < 5; ++i) {
    GPUVPA_RETURN_IF_ERROR(ParseField(fields[i], kFields[i], allowed, restricted));
    for (size_t v = 0; v < allowed.size(); ++v) {
      if (!allowed[v]) continue;
      switch (i) {
        case 0:
          s.minutes_.set(v);
          break;
        case 1:
          s.hours_.set(v);
          break;
        case 2:
          s.days_.set(v);
          break;
        case 3:
          s.months_.set(v);
          break;
        default:
          s.weekdays_.set(v % 7);  // 7 is Sunday
      }
    }
    if (i == 2) s.days_restricted_ = restricted;
    if (i == 4) s.weekdays_restricted_ = restricted;
  }
  return s;
}

bool CronSchedule::DayMatches(int month, int day, int weekday) const {
  if (!months_.test(static_cast<size_t>(month))) return false;
  const bool by_day = days_.test(static_cast<size_t>(day));
  const bool by_weekday = weekdays_.test(static_cast<size_t>(weekday));
  if (days_restricted_ && weekdays_restricted_) return by_day || by_weekday;
  return by_day && by_weekday;
}

namespace {
int WeekdayNumber(absl::CivilDay d) {
  switch (absl::GetWeekday(d)) {
    case absl::Weekday::sunday:
      return 0;
    case absl::Weekday::monday:
      return 1;
    case absl::Weekday::tuesday:
      return 2;
    case absl::Weekday::wednesday:
      return 3;
    case absl::Weekday::thursday:
      return 4;
    case absl::Weekday::friday:
      return 5;
    case absl::Weekday::saturday:
      return 6;
  }
  return 0;
}
}  // namespace

bool CronSchedule::FiresAt(int64_t unix_minute_s) const {
  const absl::CivilMinute m =
      absl::ToCivilMinute(absl::FromUnixSeconds(unix_minute_s), absl::UTCTimeZone());
  const absl::CivilDay day(m);
  return unix_minute_s % 60 == 0 && minutes_.test(static_cast<size_t>(m.minute())) &&
         hours_.test(static_cast<size_t>(m.hour())) &&
         DayMatches(m.month(), m.day(), WeekdayNumber(day));
}

std::optional<int64_t> CronSchedule::LatestAtOrBefore(int64_t unix_s, int64_t horizon_s) const {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::CivilMinute now = absl::ToCivilMinute(absl::FromUnixSeconds(unix_s), utc);
  const absl::CivilDay first(now);
  const int64_t days = horizon_s / 86400 + 1;
  for (int64_t back = 0; back <= days; ++back) {
    const absl::CivilDay d = first - back;
    if (!DayMatches(d.month(), d.day(), WeekdayNumber(d))) continue;
    for (int h = back == 0 ? now.hour() : 23; h >= 0; --h) {
      if (!hours_.test(static_cast<size_t>(h))) continue;
      for (int m = back == 0 && h == now.hour() ? now.minute() : 59; m >= 0; --m) {
        if (!minutes_.test(static_cast<size_t>(m))) continue;
        const int64_t t = absl::ToUnixSeconds(
            absl::FromCivil(absl::CivilMinute(d.year(), d.month(), d.day(), h, m), utc));
        if (unix_s - t > horizon_s) return std::nullopt;
        return t;
      }
    }
  }
  return std::nullopt;
}

}  // namespace gpuvpa
