// Writing the owner reports of a plan to a directory: the formats asked for, each file
// written atomically (a reader never sees half a report).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "updater/report/report.h"

namespace gpuvpa::updater {

struct ReportFormats {
  bool html = false, md = false, json = false, csv = false;
};

// "html,md,json,csv" (any non-empty subset); INVALID_ARGUMENT naming the unknown item.
Result<ReportFormats> ParseFormats(const std::string& text);

// Writes report.html / report.md / report.json / report.csv into `dir`; the paths written.
Result<std::vector<std::string>> WriteReports(const ReportInput& input, const std::string& dir,
                                              const ReportFormats& formats);

// The reports as a small site (what gpuvpa-updater serves under /reports/): the fleet's
// reports as WriteReports writes them, one report per cost center (cost-center/NAME.EXT) and
// per namespace (namespace/NAME.EXT) in each format, and index.html linking them all with their
// totals. NAME is the name with every byte outside [A-Za-z0-9._-] as %XX. Every file is
// written atomically; files of names no longer in the plan are removed.
Result<size_t> WriteReportSite(const ReportInput& input, const std::string& dir,
                               const ReportFormats& formats);

// The file under a report site for an HTTP path below /reports/ ("" or "index.html", a fleet
// report, or cost-center/ and namespace/ reports), with its content type; NOT_FOUND for
// anything else (no other file, no "..", no hidden file).
struct ReportSiteFile {
  std::string path;
  std::string content_type;
};
Result<ReportSiteFile> ReportSitePath(const std::string& dir, std::string_view http_path);

}  // namespace gpuvpa::updater
