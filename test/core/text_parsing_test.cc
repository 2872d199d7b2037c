// The single-pass line and field splitter and the fast decimal reader against the slow,
// obviously right versions (NextLine + find(','), std::from_chars) on edge cases and random text.
#include <gtest/gtest.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/base/number_text.h"
#include "core/base/text_lines.h"

namespace gpuvpa {
namespace {

std::vector<std::string> SlowFields(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string_view::npos; start = comma + 1)
    out.emplace_back(line.substr(start, comma - start));
  out.emplace_back(line.substr(start));
  return out;
}

// Every line of `text` split both ways; the fast splitter must agree on lines, fields, counts.
void ExpectSameSplit(const std::string& text) {
  size_t slow_pos = 0;
  size_t fast_pos = 0;
  std::array<std::string_view, 8> fields;
  while (slow_pos < text.size()) {
    ASSERT_LT(fast_pos, text.size());
    const std::string_view slow_line = NextLine(text, slow_pos);
    std::string_view fast_line;
    const size_t n = NextLineFields(text, fast_pos, fast_line, fields);
    ASSERT_EQ(fast_pos, slow_pos) << text;
    ASSERT_EQ(fast_line, slow_line) << text;
    const std::vector<std::string> slow = SlowFields(slow_line);
    if (slow.size() > fields.size()) {
      EXPECT_EQ(n, fields.size() + 1) << slow_line;
      continue;
    }
    ASSERT_EQ(n, slow.size()) << slow_line;
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(fields[i], slow[i]) << slow_line << " field " << i;
  }
  EXPECT_EQ(fast_pos, text.size());
}

TEST(TextParsingTest, LineFieldsMatchNextLineAndComma) {
  for (const std::string text :
       {"", "a", "a,b,c", "a,b\nc,d\n", "a,b\r\nc,,d\r\n", "\n\n,\n", "x,\r", ",,,,", "a\rb,c\n",
        "header,with,a,longer,line,than,sixteen,bytes\nshort\n",
        "0123456789abcdef,0123456789abcdef,\n0123456789abcde\n,", "a,b,c,d,e,f,g,h,i,j,k\nl\n",
        "1,2,3,4,5,6,7,8\r\n1,2,3,4,5,6,7,8,9\r\n"})
    ExpectSameSplit(text);
  std::mt19937 rng(11);
  const std::string alphabet = "ab,,\n\r0";
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 80, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    ExpectSameSplit(text);
  }
}

void ExpectSameDouble(const std::string& s) {
  double expected = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), expected);
  const bool expected_ok =
      ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(expected);
  double got = -12345;
  ASSERT_EQ(ParseFiniteDouble(s, got), expected_ok) << '"' << s << '"';
  if (expected_ok) {
    EXPECT_EQ(std::memcmp(&got, &expected, sizeof got), 0)
        << '"' << s << "\": " << got << " vs " << expected;
  }
}

TEST(TextParsingTest, DecimalsReadExactlyAsFromChars) {
  for (const std::string s : {"0",
                              "1",
                              "0.734",
                              "53687091200",
                              "9007199254740992",
                              "9007199254740993",
                              "99999999999999999999",
                              "18446744073709551617",
                              "1234567890123456789",
                              "0.0000000000000000001",
                              "1.",
                              ".5",
                              "-1",
                              "+1",
                              "1e3",
                              "inf",
                              "nan",
                              "",
                              ".",
                              "1.2.3",
                              "007",
                              "1,5",
                              " 1",
                              "1 ",
                              "0.1",
                              "0.30000000000000004",
                              "85899345920.000"})
    ExpectSameDouble(s);
  std::mt19937_64 rng(5);
  char buf[64];
  for (int i = 0; i < 200000; ++i) {
    const int digits = static_cast<int>(rng() % 8);
    const double v = std::ldexp(static_cast<double>(rng() >> 11), -static_cast<int>(rng() % 80));
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    ExpectSameDouble(buf);
    std::snprintf(buf, sizeof buf, "%llu.%0*llu", static_cast<unsigned long long>(rng() % 100000),
                  digits + 1, static_cast<unsigned long long>(rng() % 100000000));
    ExpectSameDouble(buf);
  }
}

}  // namespace
}  // namespace gpuvpa
