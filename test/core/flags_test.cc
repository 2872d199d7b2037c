// Flag parsing errors name the flag and the value.
#include "core/flags.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

TEST(FlagParserTest, ParsesBothSpellingsAndTypes) {
  std::string s;
  double d = 0;
  int i = 0;
  bool b = false;
  FlagParser p("cmd");
  p.AddString("name", &s, "");
  p.AddDouble("ratio", &d, "");
  p.AddInt("count", &i, "");
  p.AddBool("verbose", &b, "");
  ASSERT_TRUE(p.Parse({"--name", "x", "--ratio=0.5", "--count", "7", "--verbose"}).ok());
  EXPECT_EQ(s, "x");
  EXPECT_EQ(d, 0.5);
  EXPECT_EQ(i, 7);
  EXPECT_TRUE(b);
}

TEST(FlagParserTest, BadValueNamesFlagAndValue) {
  double d = 0;
  FlagParser p("cmd");
  p.AddDouble("ratio", &d, "");
  Status s = p.Parse({"--ratio", "abc"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--ratio"), std::string::npos);
  EXPECT_NE(s.message().find("abc"), std::string::npos);
}

TEST(FlagParserTest, UnknownFlagAndMissingValueAreErrors) {
  std::string s;
  FlagParser p("cmd");
  p.AddString("name", &s, "");
  EXPECT_NE(p.Parse({"--nmae", "x"}).message().find("--nmae"), std::string::npos);
  EXPECT_NE(p.Parse({"--name"}).message().find("needs a value"), std::string::npos);
  EXPECT_FALSE(p.Parse({"positional"}).ok());
}

}  // namespace
}  // namespace gpuvpa
