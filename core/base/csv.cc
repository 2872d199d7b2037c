// CSV cells.
#include "core/base/csv.h"

namespace gpuvpa {

std::string CsvNumber(std::string_view v) {
  if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvText(std::string_view text) {
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) {
    std::string neutral(1, '\'');  // appended, not prepended: GCC 12 -Wrestrict at -O3
    neutral.append(text);
    return CsvNumber(neutral);
  }
  return CsvNumber(text);
}

}  // namespace gpuvpa
