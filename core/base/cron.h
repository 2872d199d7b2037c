// Cron schedules (the five fields of crontab(5), in UTC): "minute hour day-of-month month
// day-of-week", each `*`, a value, a range `a-b`, a step `*/n` or `a-b/n`, or a comma list of
// those; month and weekday names (jan, mon); Sunday is 0 or 7; and @hourly, @daily (@midnight),
// @weekly, @monthly, @yearly (@annually). As cron does, when both the day of the month and the
// day of the week are restricted, a day matching either fires.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

class CronSchedule {
 public:
  // INVALID_ARGUMENT naming the field and the value.
  static Result<CronSchedule> Parse(std::string_view text);

  // Whether the schedule fires in the minute that starts at `unix_minute_s` (a multiple of 60).
  bool FiresAt(int64_t unix_minute_s) const;
  // The latest minute at or before `unix_s` at which it fires, looking back at most `horizon_s`
  // (the default: four years and a day, enough for any valid schedule, e.g. 29 February).
  std::optional<int64_t> LatestAtOrBefore(int64_t unix_s, int64_t horizon_s = 1462 * 86400) const;
  const std::string& text() const { return text_; }

 private:
  bool DayMatches(int month, int day, int weekday) const;
  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1..31
  std::bitset<13> months_;   // 1..12
  std::bitset<7> weekdays_;  // 0 (Sunday)..6
  bool days_restricted_ = false;
  bool weekdays_restricted_ = false;
};

}  // namespace gpuvpa
