// Money formatting.
#include "core/money.h"

#include <cstdlib>

namespace gpuvpa {

std::string FormatUsd(MicroUsd micro) {
  const bool negative = micro < 0;
  const int64_t cents = (std::llabs(micro) + 5000) / 10000;
  std::string whole = std::to_string(cents / 100);
  for (int i = static_cast<int>(whole.size()) - 3; i > 0; i -= 3)
    whole.insert(static_cast<size_t>(i), ",");
  const int64_t c = cents % 100;
  return std::string(negative ? "-$" : "$") + whole + "." + (c < 10 ? "0" : "") + std::to_string(c);
}

}  // namespace gpuvpa
