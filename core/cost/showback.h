// Showback / chargeback reports from the ledger, and the `gpuvpa showback` command.
//
// Labels: allocated, used and idle-tax figures are estimates from allocation and sampled usage
// (SHOWBACK); metered figures come from per-second metering of active replicas (CHARGEBACK).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

// kSummary: three lines over the total (the README demo prints them): the fleet's idle tax, the
// proposed monthly savings, and metered against reserved cost of the scale-to-zero workloads.
enum class ReportFormat { kTable, kCsv, kJson, kMarkdown, kSummary };
Result<ReportFormat> ParseReportFormat(std::string_view text);

std::string FormatShowback(const Showback& showback, ShowbackGroup group_by, ReportFormat format);

}  // namespace gpuvpa
