// Report files: formats and atomic writes.
#include "updater/report/report_files.h"

#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/time_format.h"
#include "updater/report/text_format.h"

namespace gpuvpa::updater {

Result<ReportFormats> ParseFormats(const std::string& text) {
  ReportFormats f;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == "html")
      f.html = true;
    else if (item == "md")
      f.md = true;
    else if (item == "json")
      f.json = true;
    else if (item == "csv")
      f.csv = true;
    else
      return InvalidArgumentError("--format: \"" + item + "\" is not one of html, md, json, csv");
  }
  if (!f.html && !f.md && !f.json && !f.csv)
    return InvalidArgumentError("--format: name at least one of html, md, json, csv");
  return f;
}

Result<std::vector<std::string>> WriteReports(const ReportInput& input, const std::string& dir,
                                              const ReportFormats& formats) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const Result<std::string>& text) -> Status {
    if (!text.ok()) return text.status();
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (Status s = WriteFileAtomically(path, *text); !s.ok()) return s;
    written.push_back(path);
    return OkStatus();
  };
  if (formats.html)
    if (Status s = write("report.html", RenderHtmlReport(input)); !s.ok()) return s;
  if (formats.md)
    if (Status s = write("report.md", RenderMarkdownReport(input)); !s.ok()) return s;
  if (formats.json)
    if (Status s = write("report.json", RenderJsonReport(input)); !s.ok()) return s;
  if (formats.csv)
    if (Status s = write("report.csv", Result<std::string>(RenderCsvReport(input))); !s.ok())
      return s;
  return written;
}

namespace {

std::string FileName(std::string_view name) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  // "." and ".." are names a path would read as folders.
  if (out.empty() || out == "." || out == "..") out = "%2E" + out.substr(out.empty() ? 0 : 1);
  return out;
}

struct Format {
  const char* ext;
  bool ReportFormats::*enabled;
  const char* content_type;
};
constexpr Format kFormats[] = {
    {"html", &ReportFormats::html, "text/html; charset=utf-8"},
    {"md", &ReportFormats::md, "text/markdown; charset=utf-8"},
    {"json", &ReportFormats::json, "application/json"},
    {"csv", &ReportFormats::csv, "text/csv; charset=utf-8"},
};

Result<std::string> Render(const char* ext, const ReportInput& input) {
  const std::string_view e = ext;
  if (e == "html") return RenderHtmlReport(input);
  if (e == "md") return RenderMarkdownReport(input);
  if (e == "json") return RenderJsonReport(input);
  return RenderCsvReport(input);
}

// The actions (and their charts) whose cost center or namespace is `name`.
ReportInput Subset(const ReportInput& input, bool by_cost_center, const std::string& name) {
  ReportInput out = input;
  out.actions.clear();
  out.charts.clear();
  for (size_t i = 0; i < input.actions.size(); ++i) {
    const v1::WorkloadIdentity& id = input.actions[i].evidence.identity();
    if ((by_cost_center ? id.cost_center() : id.namespace_name()) != name) continue;
    out.actions.push_back(input.actions[i]);
    out.charts.push_back(i < input.charts.size() ? input.charts[i] : std::nullopt);
  }
  return out;
}

}  // namespace

Result<size_t> WriteReportSite(const ReportInput& input, const std::string& dir,
                               const ReportFormats& formats) {
  Result<std::vector<std::string>> fleet = WriteReports(input, dir, formats);
  if (!fleet.ok()) return fleet.status();
  size_t files = fleet->size();
  std::set<std::string> cost_centers, namespaces;
  for (const PlannedAction& a : input.actions) {
    cost_centers.insert(a.evidence.identity().cost_center());
    namespaces.insert(a.evidence.identity().namespace_name());
  }
  std::string index =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width,initial-scale=1\"><title>gpuvpa reports</title><style>"
      "body{font:14px/1.45 system-ui,sans-serif;margin:16px;color:#1d2330}table{border-collapse:"
      "collapse}td,th{padding:3px 10px;border-bottom:1px solid #e3e6ea;text-align:left}"
      "td.n{text-align:right}.scroll{overflow-x:auto}</style></head><body><h1>gpuvpa owner "
      "reports</h1><p>Generated " +
      HtmlEscape(FormatTimestamp(static_cast<double>(input.generated_at_s))) + " from " +
      HtmlEscape(input.source) + ". The whole fleet:";
  auto links = [&](const std::string& stem) {
    std::string html;
    for (const Format& f : kFormats)
      if (formats.*f.enabled) html += " <a href=\"" + stem + "." + f.ext + "\">" + f.ext + "</a>";
    return html;
  };
  index += links("report") + "</p>";
  std::set<std::string> keep;
  auto section = [&](const char* title, const char* folder, bool by_cost_center,
                     const std::set<std::string>& names) -> Status {
    std::filesystem::create_directories(std::filesystem::path(dir) / folder);
    index += "<h2>" + std::string(title) +
             "</h2><div class=\"scroll\"><table><tr><th>name</th><th>monthly now</th><th>monthly "
             "planned</th><th>changes</th><th>report</th></tr>";
    for (const std::string& name : names) {
      const std::string stem = std::string(folder) + "/" + FileName(name);
      const ReportInput subset = Subset(input, by_cost_center, name);
      // Its totals as every report sums them (checked sums).
      Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(subset.actions);
      if (!groups.ok()) return groups.status();
      Result<CostCenterGroup> total = TotalOf(*groups);
      if (!total.ok()) return total.status();
      for (const Format& f : kFormats) {
        if (!(formats.*f.enabled)) continue;
        Result<std::string> text = Render(f.ext, subset);
        if (!text.ok()) return text.status();
        const std::string file = stem + "." + f.ext;
        GPUVPA_RETURN_IF_ERROR(
            WriteFileAtomically((std::filesystem::path(dir) / file).string(), *text));
        keep.insert(file);
        ++files;
      }
      index += "<tr><td>" + HtmlEscape(name) + "</td><td class=\"n\">" +
               HtmlEscape(FormatUsd(total->monthly_before)) + "</td><td class=\"n\">" +
               HtmlEscape(FormatUsd(total->monthly_after)) + "</td><td class=\"n\">" +
               std::to_string(total->changes) + "</td><td>" + links(stem) + "</td></tr>";
    }
    index += "</table></div>";
    return OkStatus();
  };
  GPUVPA_RETURN_IF_ERROR(section("By cost center", "cost-center", true, cost_centers));
  GPUVPA_RETURN_IF_ERROR(section("By namespace", "namespace", false, namespaces));
  GPUVPA_RETURN_IF_ERROR(WriteFileAtomically((std::filesystem::path(dir) / "index.html").string(),
                                             index + "</body></html>\n"));
  // Reports of cost centers and namespaces that left the plan go.
  for (const char* folder : {"cost-center", "namespace"}) {
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(dir) / folder, ec))
      if (!keep.count(std::string(folder) + "/" + entry.path().filename().string()))
        std::filesystem::remove(entry.path(), ec);
  }
  return files + 1;
}

Result<ReportSiteFile> ReportSitePath(const std::string& dir, std::string_view http_path) {
  std::string_view rest = http_path;
  if (rest.empty()) rest = "index.html";
  auto not_found = [&] { return NotFoundError("no report " + QuoteForError(http_path)); };
  std::string_view folder;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    folder = rest.substr(0, slash);
    rest = rest.substr(slash + 1);
    if (folder != "cost-center" && folder != "namespace") return not_found();
  }
  const size_t dot = rest.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || rest.front() == '.') return not_found();
  for (char c : rest)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' &&
        c != '%')
      return not_found();
  if (folder.empty() && rest != "index.html" && rest.substr(0, dot) != "report") return not_found();
  const std::string_view ext = rest.substr(dot + 1);
  for (const Format& f : kFormats)
    if (ext == f.ext)
      return ReportSiteFile{(std::filesystem::path(dir) / std::string(folder) / std::string(rest))
                                .lexically_normal()
                                .string(),
                            f.content_type};
  return not_found();
}

}  // namespace gpuvpa::updater
