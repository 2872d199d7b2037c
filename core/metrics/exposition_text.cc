// Exposition text parsing: one pass over the lines, samples grouped by their series.
#include "core/metrics/exposition_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "core/base/text_lines.h"

namespace gpuvpa {
namespace {

constexpr size_t kMaxIssues = 20;

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

void SkipSpaces(std::string_view line, size_t& i) {
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
}

bool ParseNumber(std::string_view text, double& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Parses `name{labels} value [timestamp]`; on failure returns the reason.
const char* ParseSampleLine(std::string_view line, LabeledSeries& series, double& value,
                            std::optional<double>& timestamp) {
  size_t i = 0;
  if (i >= line.size() || !IsNameStart(line[i])) return "does not start with a metric name";
  while (i < line.size() && IsNameChar(line[i])) ++i;
  series.metric.assign(line.substr(0, i));
  series.labels.clear();
  SkipSpaces(line, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      SkipSpaces(line, i);
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t start = i;
      if (i >= line.size() || !IsNameStart(line[i])) return "a label name is malformed";
      while (i < line.size() && IsNameChar(line[i])) ++i;
      std::string name(line.substr(start, i - start));
      SkipSpaces(line, i);
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
        return "a label has no =\"value\"";
      i += 2;
      std::string label_value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) {
          const char e = line[i++];
          label_value.push_back(e == 'n' ? '\n' : e);
        } else {
          label_value.push_back(c);
        }
      }
      if (!closed) return "a label value has no closing quote";
      if (name == "__name__")
        series.metric = std::move(label_value);
      else
        series.labels.emplace_back(std::move(name), std::move(label_value));
      SkipSpaces(line, i);
      if (i < line.size() && line[i] == ',')
        ++i;
      else if (i >= line.size() || line[i] != '}')
        return "labels are not separated by ','";
    }
  }
  SkipSpaces(line, i);
  size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  if (end == i) return "has no value";
  if (!ParseNumber(line.substr(i, end - i), value)) return "the value is not a number";
  i = end;
  SkipSpaces(line, i);
  timestamp.reset();
  if (i < line.size()) {
    end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    double t = 0;
    if (!ParseNumber(line.substr(i, end - i), t) || !std::isfinite(t))
      return "the timestamp is not a number";
    timestamp = t;
    i = end;
    SkipSpaces(line, i);
    if (i < line.size() && line[i] != '#') return "has text after the timestamp";
  }
  return nullptr;
}

std::string SeriesKey(const LabeledSeries& s) {
  std::vector<std::pair<std::string, std::string>> sorted = s.labels;
  std::sort(sorted.begin(), sorted.end());
  std::string key = s.metric;
  for (const auto& [k, v] : sorted) {
    key.push_back('\0');
    key += k;
    key.push_back('\0');
    key += v;
  }
  return key;
}

}  // namespace

Result<ExpositionParse> ParseExpositionText(std::string_view text,
                                            const ExpositionOptions& options) {
  if (text.find('\0') != std::string_view::npos)
    return InvalidArgumentError("not exposition text: it holds NUL bytes (a binary file?)");
  ExpositionParse out;
  for (size_t pos = 0; pos < text.size();) {
    const std::string_view line = NextLine(text, pos);
    if (line == "# EOF") out.openmetrics = true;
  }
  double scale = 1;
  if (options.timestamp_unit == TimestampUnit::kMilliseconds ||
      (options.timestamp_unit == TimestampUnit::kAuto && !out.openmetrics))
    scale = 0.001;

  std::unordered_map<std::string, size_t> index;
  LabeledSeries parsed;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    ++line_no;
    std::string_view line = NextLine(text, pos);
    size_t first = 0;
    SkipSpaces(line, first);
    line.remove_prefix(first);
    if (line.empty() || line.front() == '#') continue;
    double value = 0;
    std::optional<double> timestamp;
    const char* problem = ParseSampleLine(line, parsed, value, timestamp);
    if (problem == nullptr && !timestamp && !options.default_time_s)
      problem = "has no timestamp (pass the time of the scrape)";
    if (problem != nullptr) {
      ++out.malformed;
      if (out.issues.size() < kMaxIssues)
        out.issues.push_back({line_no, std::string("line ") + problem});
      continue;
    }
    if (!std::isfinite(value)) {
      ++out.non_finite;
      continue;
    }
    const double time_s = timestamp ? *timestamp * scale : *options.default_time_s;
    auto [it, inserted] = index.try_emplace(SeriesKey(parsed), out.series.size());
    if (inserted) {
      out.series.push_back(parsed);
      out.series.back().points.clear();
    }
    out.series[it->second].points.push_back({time_s, value});
    ++out.samples;
  }
  for (LabeledSeries& s : out.series)
    std::stable_sort(
        s.points.begin(), s.points.end(),
        [](const MetricPoint& a, const MetricPoint& b) { return a.time_s < b.time_s; });
  return out;
}

}  // namespace gpuvpa
