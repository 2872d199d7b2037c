// Report files: formats and atomic writes.
#include "updater/report/report_files.h"

#include <filesystem>
#include <sstream>

#include "core/base/atomic_file.h"

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

}  // namespace gpuvpa::updater
