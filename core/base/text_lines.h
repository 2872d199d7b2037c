// Line-by-line reading of text held in memory (traces, CSV files): one line splitter for all.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// NextLine, and the line's comma-separated fields into `fields` in the same pass over its bytes
// (16 at a time where SSE2 is there). Returns the number of fields, or N + 1 when there are more
// than N (only the first N are stored). An empty line has one empty field.
template <size_t N>
size_t NextLineFields(std::string_view text, size_t& pos, std::string_view& line,
                      std::array<std::string_view, N>& fields) {
  const char* const begin = text.data() + pos;
  const char* const end = text.data() + text.size();
  const char* p = begin;
  const char* field = begin;
  size_t n = 0;
  auto add = [&](const char* field_end) {
    if (n < N) fields[n] = std::string_view(field, static_cast<size_t>(field_end - field));
    ++n;
  };
  const char* nl = end;
#if defined(__SSE2__)
  const __m128i comma = _mm_set1_epi8(',');
  const __m128i newline = _mm_set1_epi8('\n');
  for (; end - p >= 16; p += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    auto commas = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, comma)));
    const auto newlines = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, newline)));
    if (newlines != 0) commas &= (newlines & -newlines) - 1;  // only those before the line's end
    for (; commas != 0; commas &= commas - 1) {
      add(p + __builtin_ctz(commas));
      field = p + __builtin_ctz(commas) + 1;
    }
    if (newlines != 0) {
      nl = p + __builtin_ctz(newlines);
      break;
    }
  }
  if (nl == end)
#endif
    for (; p < end; ++p) {
      if (*p == '\n') {
        nl = p;
        break;
      }
      if (*p == ',') {
        add(p);
        field = p + 1;
      }
    }
  const char* line_end = nl;
  if (line_end > begin && line_end[-1] == '\r') --line_end;
  add(line_end);
  line = std::string_view(begin, static_cast<size_t>(line_end - begin));
  pos = nl == end ? text.size() : static_cast<size_t>(nl + 1 - text.data());
  return n > N ? N + 1 : n;
}

}  // namespace gpuvpa
