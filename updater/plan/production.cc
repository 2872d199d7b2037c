// The production guard's rules.
#include "updater/plan/production.h"

#include <cctype>

#include "core/base/names.h"

namespace gpuvpa::updater {
namespace {

bool IsNameSeparator(char c) { return c == '-' || c == '.' || c == '_'; }

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (Lower(a[i]) != Lower(b[i])) return false;
  return true;
}

// `part` is `word`, without case, or `word` followed by digits only.
bool PartIsWord(std::string_view part, std::string_view word) {
  if (part.size() < word.size() || !EqualsNoCase(part.substr(0, word.size()), word)) return false;
  for (char c : part.substr(word.size()))
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool HasWord(std::string_view name, std::string_view word) {
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && !IsNameSeparator(name[i])) continue;
    if (i > start && PartIsWord(name.substr(start, i - start), word)) return true;
    start = i + 1;
  }
  return false;
}

Status CheckList(const std::vector<std::string>& list, std::string_view what) {
  if (list.empty())
    return InvalidArgumentError("production selector: " + std::string(what) +
                                " is empty (an empty selector would protect nothing)");
  for (const std::string& entry : list)
    if (!IsUsableSelectorEntry(entry))
      return InvalidArgumentError("production selector: " + std::string(what) + " holds " +
                                  QuoteForError(entry) + ", which is not a usable entry");
  return OkStatus();
}

}  // namespace

Status ProductionSelector::Validate() const {
  for (Status s : {CheckList(label_keys, "label_keys"), CheckList(label_values, "label_values"),
                   CheckList(name_words, "name_words")})
    if (!s.ok()) return s;
  // Patterns are optional, but a pattern that is only '*' would make everything production by
  // accident of a typo; a selector meant to cover everything should say so with a default mode.
  if (!name_patterns.empty()) return CheckList(name_patterns, "name_patterns");
  return OkStatus();
}

std::string ProductionSelector::Why(std::string_view namespace_name,
                                    const Labels& namespace_labels) const {
  for (const auto& [key, value] : namespace_labels) {
    bool watched = false;
    for (const std::string& k : label_keys) watched = watched || EqualsNoCase(key, k);
    if (!watched) continue;
    if (value == kNonStringLabelValue)
      return "label " + key + " is not a string (read as production)";
    for (const std::string& v : label_values)
      if (EqualsNoCase(value, v)) return "label " + key + "=" + value;
  }
  for (const std::string& word : name_words)
    if (HasWord(namespace_name, word))
      return "name " + std::string(namespace_name) + " holds the word " + word;
  for (const std::string& pattern : name_patterns)
    if (GlobMatches(pattern, namespace_name))
      return "name " + std::string(namespace_name) + " matches " + pattern;
  return "";
}

bool GlobMatches(std::string_view pattern, std::string_view text) {
  // Iterative match with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool IsUsableSelectorEntry(std::string_view entry) {
  return entry.find_first_not_of('*') != std::string_view::npos;
}

bool OptOutValue(std::string_view value) {
  std::string_view v = value;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  for (std::string_view no : {"false", "no", "off", "0", "n", "f"})
    if (EqualsNoCase(v, no)) return false;
  return !v.empty();
}

}  // namespace gpuvpa::updater
