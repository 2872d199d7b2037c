// Writing the owner reports of a plan to a directory: the formats asked for, each file
// written atomically (a reader never sees half a report).
#pragma once

#include <string>
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

}  // namespace gpuvpa::updater
