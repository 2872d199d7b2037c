// gpuvpa showback: the ledger's showback for a window, in the format asked for.
#include <cmath>
#include <tuple>

#include "cmd/commands.h"
#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cost/ledger.h"
#include "core/cost/showback.h"

namespace gpuvpa::cmd {

int RunShowbackCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string ledger_path;
  std::string from_text;
  std::string to_text;
  std::string group_text = "cost-center";
  std::string format_text = "table";
  auto app = NewCommandApp("gpuvpa", "showback",
                           "Per cost center (or GPU model): allocated, used, idle tax, savings and "
                           "metered cost from the ledger.");
  app->add_option("--ledger", ledger_path, "ledger database")->required();
  app->add_option("--from", from_text,
                  "window start, inclusive: Unix seconds, RFC 3339 or a date (2026-11-01)");
  app->add_option("--to", to_text, "window end, exclusive: Unix seconds, RFC 3339 or a date");
  app->add_option("--group-by", group_text, "cost-center or gpu-model")
      ->check(CLI::IsMember({"cost-center", "gpu-model"}));
  app->add_option("--format", format_text,
                  "table, csv, json, md, or summary (three lines: idle tax, proposed savings, "
                  "metered vs reserved)")
      ->check(CLI::IsMember({"table", "csv", "json", "md", "markdown", "summary"}));
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
  Result<ReportFormat> format = ParseReportFormat(format_text);
  if (!format.ok()) {
    err << "gpuvpa showback: " << format.status().message() << "\n";
    return kExitUsage;
  }
  if (!FileExists(ledger_path)) {  // showback reads; it must not create an empty ledger
    err << "gpuvpa showback: no ledger at " << ledger_path << "\n";
    return kExitFailure;
  }
  Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path);
  if (!ledger.ok()) {
    err << "gpuvpa showback: " << ledger.status().message() << "\n";
    return kExitFailure;
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
