// gpuvpa showback: the ledger's showback for a window, in the format asked for.
#include <cmath>
#include <tuple>

#include "cmd/commands.h"
#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/allocation.h"
#include "core/cost/focus.h"
#include "core/cost/ledger.h"
#include "core/cost/showback.h"

namespace gpuvpa::cmd {

int RunShowbackCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  LedgerFlags ledger_flags;
  std::string cluster_filter;
  std::string from_text;
  std::string to_text;
  std::string group_text = "cost-center";
  std::string format_text = "table";
  std::string step_text;
  auto app = NewCommandApp("gpuvpa", "showback",
                           "Per cost center (or GPU model): allocated, used, idle tax, savings and "
                           "metered cost from the ledger.");
  AddLedgerFlags(*app, ledger_flags, "the ledger to read", LedgerAccess::kRead);
  app->add_option("--cluster", cluster_filter,
                  "only this cluster's rows (default: every cluster's)");
  app->add_option("--from", from_text,
                  "window start, inclusive: Unix seconds, RFC 3339 or a date (2026-11-01)");
  app->add_option("--to", to_text, "window end, exclusive: Unix seconds, RFC 3339 or a date");
  app->add_option("--group-by", group_text, "cost-center, gpu-model or cluster")
      ->check(CLI::IsMember({"cost-center", "gpu-model", "cluster"}));
  app->add_option("--format", format_text,
                  "table, csv, json, md, summary (three lines: idle tax, proposed savings, "
                  "metered vs reserved), or focus (FOCUS 1.2 CSV: one row per workload-container "
                  "and charge period; needs --from and --to)")
      ->check(CLI::IsMember({"table", "csv", "json", "md", "markdown", "summary", "focus"}));
  app->add_option("--step", step_text,
                  "focus: the charge period (30m, 6h, 1d, 1w; default 1d); the last one ends "
                  "with --to");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  ShowbackQuery query;
  for (auto [text, target, name] :
       {std::tuple{&from_text, &query.from_s, "--from"}, {&to_text, &query.to_s, "--to"}}) {
    if (text->empty()) continue;
    Result<double> t = ParseTimestamp(*text);
    if (!t.ok() || !(std::abs(*t) < 1e15)) {
      err << "gpuvpa showback: " << name << ": "
          << (t.ok() ? "\"" + *text + "\" is out of range" : t.status().message()) << "\n";
      return kExitUsage;
    }
    *target = static_cast<int64_t>(std::floor(*t));
  }
  if (query.from_s && query.to_s && *query.from_s >= *query.to_s) {
    err << "gpuvpa showback: --from " << from_text << " is not before --to " << to_text << "\n";
    return kExitUsage;
  }
  if (group_text == "gpu-model") query.group_by = ShowbackGroup::kGpuModel;
  if (group_text == "cluster") query.group_by = ShowbackGroup::kCluster;
  if (!cluster_filter.empty()) query.cluster = cluster_filter;
  if (!ledger_flags.given()) {
    err << "gpuvpa showback: --ledger or --ledger-url-file is required\n";
    return kExitUsage;
  }
  const bool focus = format_text == "focus";
  if (!step_text.empty() && !focus) {
    err << "gpuvpa showback: --step is for --format focus\n";
    return kExitUsage;
  }
  if (focus) {
    if (!query.from_s || !query.to_s) {
      err << "gpuvpa showback: --format focus needs --from and --to (its charge periods)\n";
      return kExitUsage;
    }
    Result<int64_t> step = ParseAllocationStep(step_text.empty() ? "1d" : step_text);
    if (!step.ok()) {
      err << "gpuvpa showback: --" << step.status().message() << "\n";
      return kExitUsage;
    }
    query.step_s = *step;
    query.group_by = ShowbackGroup::kAllocation;
  }
  Result<ReportFormat> format = ParseReportFormat(focus ? "csv" : format_text);
  if (!format.ok()) {
    err << "gpuvpa showback: " << format.status().message() << "\n";
    return kExitUsage;
  }
  // Showback reads: a SQLite file that is not there is an error, never a new empty ledger.
  Result<std::unique_ptr<Ledger>> ledger = OpenLedger(ledger_flags, /*must_exist=*/true);
  if (!ledger.ok()) {
    err << "gpuvpa showback: " << ledger.status().message() << "\n";
    return ledger.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (focus) {
    Result<std::vector<Showback>> periods = (*ledger)->QueryShowbackSteps(query);
    Result<std::string> csv =
        periods.ok() ? FocusCsv(*periods) : Result<std::string>(periods.status());
    if (!csv.ok()) {
      err << "gpuvpa showback: " << csv.status().message() << "\n";
      return csv.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    out << *csv;
    return kExitOk;
  }
  Result<Showback> showback = (*ledger)->QueryShowback(query);
  if (!showback.ok()) {
    err << "gpuvpa showback: " << showback.status().message() << "\n";
    return kExitFailure;
  }
  out << FormatShowback(*showback, query.group_by, *format);
  return kExitOk;
}

}  // namespace gpuvpa::cmd
