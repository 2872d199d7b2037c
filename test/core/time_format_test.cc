// Timestamp parsing and formatting.
#include "core/base/time_format.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

TEST(TimeFormatTest, ParsesUnixSecondsAndRfc3339) {
  EXPECT_EQ(*ParseTimestamp("1793577600"), 1793577600.0);
  EXPECT_EQ(*ParseTimestamp("1793577600.25"), 1793577600.25);
  EXPECT_EQ(*ParseTimestamp("2026-11-02T00:00:00Z"), 1793577600.0);
  EXPECT_EQ(*ParseTimestamp("2026-11-02T01:00:00+01:00"), 1793577600.0);
  EXPECT_EQ(*ParseTimestamp("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_NEAR(*ParseTimestamp("2023-11-16 18:17:03.9799600"), 1700158623.97996, 1e-6);
}

TEST(TimeFormatTest, FormatRoundTrips) {
  for (double t : {0.0, 951782400.0 /* 2000-02-29 */, 1793577600.0, 4102444800.0}) {
    EXPECT_EQ(*ParseTimestamp(FormatTimestamp(t)), t) << FormatTimestamp(t);
  }
  EXPECT_EQ(FormatTimestamp(1793577600), "2026-11-02T00:00:00Z");
}

TEST(TimeFormatTest, RejectsGarbageNamingIt) {
  for (const char* bad :
       {"", "yesterday", "2026-13-01T00:00:00Z", "2026-11-02T00:00:00Q", "12abc"}) {
    Result<double> t = ParseTimestamp(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find(std::string("\"") + bad + "\""), std::string::npos);
  }
}

}  // namespace
}  // namespace gpuvpa
