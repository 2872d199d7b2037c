// Numbers from text, exactly as std::from_chars reads them, with a fast path for the plain
// decimals that traces and exporters write.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace gpuvpa {

// The whole of `s` as a finite double (from_chars' general format); false otherwise.
inline bool ParseFiniteDouble(std::string_view s, double& out) {
  // Plain decimals ("53687091200", "0.734"): digits, at most one '.' with digits on both sides,
  // 19 characters at most. When the digits make an integer m of at most 2^53 and there are k <= 22
  // of them after the point, m and 10^k are exact doubles and one division rounds correctly: the
  // same double that from_chars gives (Clinger's fast path). Anything else goes to from_chars.
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (s.size() <= 19) {  // at most 19 digits: m fits in 64 bits
    const char* p = s.data();
    const char* const end = p + s.size();
    auto digit = [](char c) { return static_cast<unsigned>(c - '0') < 10; };
    uint64_t m = 0;
    while (p < end && digit(*p)) m = m * 10 + static_cast<uint64_t>(*p++ - '0');
    const bool integer_part = p > s.data();
    size_t after_point = 0;
    if (integer_part && p < end && *p == '.') {
      const char* const fraction = ++p;
      while (p < end && digit(*p)) m = m * 10 + static_cast<uint64_t>(*p++ - '0');
      after_point = static_cast<size_t>(p - fraction);
      if (after_point == 0) p = s.data();  // "1.": left to from_chars
    }
    if (integer_part && p == end && m <= (uint64_t{1} << 53)) {
      out = static_cast<double>(m) / kPow10[after_point];
      return true;
    }
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}

}  // namespace gpuvpa
