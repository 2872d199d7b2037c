// Small text helpers shared by the report writers: HTML escaping (fixed-point numbers are
// core/base/names.h's FormatFixed, included here for them).
#pragma once

#include <string>
#include <string_view>

#include "core/base/names.h"

namespace gpuvpa::updater {

// Escapes & < > " ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace gpuvpa::updater
