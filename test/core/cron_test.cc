// Cron schedules: crontab(5)'s fields, names, steps, the day-of-month / day-of-week rule, and
// the latest firing at or before a time.
#include "core/base/cron.h"

#include <gtest/gtest.h>

#include "core/base/time_format.h"

namespace gpuvpa {
namespace {

int64_t T(const char* rfc3339) { return static_cast<int64_t>(*ParseTimestamp(rfc3339)); }

TEST(CronTest, LatestFiringAtOrBefore) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      // Mondays at 09:00: from Saturday 2026-12-05 back to Monday 2026-11-30.
      {"0 9 * * 1", "2026-12-05T14:30:00Z", "2026-11-30T09:00:00Z"},
      {"0 9 * * mon", "2026-11-30T09:00:00Z", "2026-11-30T09:00:00Z"},
      {"0 9 * * MON", "2026-11-30T08:59:59Z", "2026-11-23T09:00:00Z"},
      {"*/15 * * * *", "2026-12-05T14:44:10Z", "2026-12-05T14:30:00Z"},
      {"5/20 * * * *", "2026-12-05T14:44:00Z", "2026-12-05T14:25:00Z"},
      {"0 0 1 * *", "2026-12-05T00:00:00Z", "2026-12-01T00:00:00Z"},
      {"@monthly", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z"},
      {"@weekly", "2026-12-05T00:00:00Z", "2026-11-29T00:00:00Z"},
      {"@daily", "2026-12-05T23:59:00Z", "2026-12-05T00:00:00Z"},
      {"@hourly", "2026-12-05T23:59:00Z", "2026-12-05T23:00:00Z"},
      {"30 8 * jan-mar,dec 1-5", "2026-12-05T10:00:00Z", "2026-12-04T08:30:00Z"},
      // Sunday as 7.
      {"0 12 * * 7", "2026-12-05T10:00:00Z", "2026-11-29T12:00:00Z"},
      // Both days restricted: either matches (the 1st, or a Friday).
      {"0 6 1 * 5", "2026-12-03T10:00:00Z", "2026-12-01T06:00:00Z"},
      {"0 6 1 * 5", "2026-12-05T10:00:00Z", "2026-12-04T06:00:00Z"},
      // 29 February: years back.
      {"0 0 29 2 *", "2026-12-05T00:00:00Z", "2024-02-29T00:00:00Z"},
  };
  for (const auto& [text, now, expected] : cases) {
    Result<CronSchedule> s = CronSchedule::Parse(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status().message();
    const std::optional<int64_t> t = s->LatestAtOrBefore(T(now.c_str()));
    ASSERT_TRUE(t.has_value()) << text;
    EXPECT_EQ(FormatTimestamp(static_cast<double>(*t)), expected) << text << " at " << now;
    EXPECT_TRUE(s->FiresAt(*t)) << text;
    EXPECT_FALSE(s->FiresAt(*t + 1)) << "minutes only";
  }
  EXPECT_FALSE(CronSchedule::Parse("0 0 31 2 *")->LatestAtOrBefore(T("2026-12-05T00:00:00Z")))
      << "31 February never comes";
}

TEST(CronTest, BadSchedulesNameTheFieldAndTheValue) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0 9 * *", "has 4 fields, not 5"},
      {"60 * * * *", "cron minute \"60\""},
      {"0 24 * * *", "cron hour \"24\""},
      {"0 0 0 * *", "cron day of month \"0\""},
      {"0 0 * 13 *", "cron month \"13\""},
      {"0 0 * * 8", "cron day of week \"8\""},
      {"0 0 * * mon-sun", "runs backwards"},
      {"*/0 * * * *", "has a step"},
      {"1,,2 * * * *", "is empty"},
      {"@fortnightly", "has 1 fields"},
      {"0 9 * * funday", "cron day of week \"funday\""},
  };
  for (const auto& [text, expected] : bad) {
    Result<CronSchedule> s = CronSchedule::Parse(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find(expected), std::string::npos)
        << text << ": " << s.status().message();
  }
}

}  // namespace
}  // namespace gpuvpa
