// Line-by-line reading of text held in memory (traces, CSV files): one line splitter for all.
#pragma once

#include <string_view>

namespace gpuvpa {

// The line starting at `pos`, without its '\n' or "\r\n"; advances `pos` past it.
inline std::string_view NextLine(std::string_view text, size_t& pos) {
  const size_t nl = text.find('\n', pos);
  const size_t end = nl == std::string_view::npos ? text.size() : nl;
  std::string_view line = text.substr(pos, end - pos);
  pos = nl == std::string_view::npos ? text.size() : nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace gpuvpa
