// CSV cells for files people open in a spreadsheet (RFC 4180 quoting, OWASP's CSV-injection
// rule for text).
#pragma once

#include <string>
#include <string_view>

namespace gpuvpa {

// A text cell: a value beginning with =, +, -, @, tab or carriage return (which Excel, LibreOffice
// and Google Sheets would run as a formula) gets a leading apostrophe, so that it is shown as the
// text it is; then a cell with a comma, quote or line break is quoted, its quotes doubled.
std::string CsvText(std::string_view text);

// A number this program formatted (never a formula): quoted only if it had to be.
std::string CsvNumber(std::string_view number);

}  // namespace gpuvpa
