// Small text helpers shared by the report writers: HTML escaping and fixed-point numbers.
#pragma once

#include <string>
#include <string_view>

namespace gpuvpa::updater {

// Escapes & < > " ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);
// `value` with `digits` decimals ("%.*f").
std::string Fixed(double value, int digits);

}  // namespace gpuvpa::updater
