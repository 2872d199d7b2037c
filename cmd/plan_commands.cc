// gpuvpa plan and gpuvpa backtest: recommendations (a file, or a checkpoint read by the
// recommender's code) -> the updater's planner -> ledger and owner reports.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "cmd/backtest/backtest.h"
#include "cmd/commands.h"
#include "core/api/recommendation_json.h"
#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/output/recommendation_format.h"
#include "updater/plan/proposal_ledger.h"
#include "updater/report/report_files.h"

namespace gpuvpa::cmd {

// The planner, the reports and the policy are the updater's; this file only wires them.
using namespace updater;  // NOLINT(build/namespaces)

namespace {

constexpr const char* kPlan = "gpuvpa plan";

struct Settings {
  GpuvpaConfig config;
  UpdaterPolicy policy;
};

// The config (prices, cost centers) and the update policy; an empty path gives the defaults.
Result<Settings> LoadSettings(const std::string& config_path, const std::string& policy_path) {
  Result<GpuvpaConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) return config.status();
  Result<UpdaterPolicy> policy = LoadUpdaterPolicy(policy_path);
  if (!policy.ok()) return policy.status();
  return Settings{std::move(config).value(), std::move(policy).value()};
}

std::string PlanTable(const std::vector<PlannedAction>& actions) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %-13s %-28s %-28s %12s %12s %-6s %s\n", "WORKLOAD",
                "ACTION", "FROM", "TO", "MONTHLY NOW", "PLANNED", "RISK", "MODE");
  out += line;
  for (const PlannedAction& a : actions) {
    std::string name = ActionDisplayName(a);
    if (name.size() > 44) name = name.substr(0, 20) + "~" + name.substr(name.size() - 23);
    const std::string to = a.to_allocation + (a.to_model != a.from_model ? " " + a.to_model : "");
    std::snprintf(line, sizeof line, "%-44s %-13s %-28s %-28s %12s %12s %-6s %s%s\n", name.c_str(),
                  std::string(PlanKindName(a.kind)).c_str(), a.from_allocation.c_str(), to.c_str(),
                  a.priced ? FormatUsd(a.monthly_before).c_str() : "no price",
                  a.priced ? FormatUsd(a.monthly_after).c_str() : "no price",
                  a.changes() ? std::string(RiskName(a.risk)).c_str() : "-",
                  std::string(UpdateModeName(a.mode)).c_str(), a.auto_apply ? " (applies)" : "");
    out += line;
  }
  return out;
}

// Recommendations (each with its charts where the source has them) and where they came from.
struct PlanSource {
  std::vector<v1::Recommendation> recommendations;
  int64_t as_of_s = 0;  // the evidence runs to this time
  std::string name;
};

// From a recommender checkpoint, through the recommender's own code: the charts come with it.
Result<PlanSource> FromCheckpoint(const std::string& path, double min_history_hours,
                                  const GpuvpaConfig& config, std::ostream& err) {
  recommender::FleetStore store;
  Result<recommender::CheckpointLoad> load = recommender::LoadCheckpoint(path, store);
  if (!load.ok()) return Status(load.status().code(), "checkpoint: " + load.status().message());
  for (const Status& refused : load->refused)
    err << "checkpoint refused: " << refused.message() << "\n";
  recommender::RecommenderOptions options;
  options.min_history_s = min_history_hours * 3600;
  PlanSource source;
  for (const recommender::Recommendation& r :
       recommender::Recommender(options).RecommendAll(store)) {
    v1::Recommendation wire =
        recommender::PricedRecommendation(r, store, &config.prices, config.region);
    *wire.mutable_charts() = recommender::ChartsOf(store, r.row);
    source.recommendations.push_back(std::move(wire));
  }
  source.as_of_s = static_cast<int64_t>(store.newest_sample_s());
  source.name = "checkpoint " + load->loaded_from;
  return source;
}

// From `gpuvpa recommend --format json` output, checked as every reader checks it.
Result<PlanSource> FromRecommendationsFile(const std::string& path, int64_t now_s) {
  Result<std::string> text = ReadWholeFile(path);
  Result<std::vector<v1::Recommendation>> parsed =
      text.ok() ? ParseRecommendationsJson(*text)
                : Result<std::vector<v1::Recommendation>>(text.status());
  if (!parsed.ok()) return Status(parsed.status().code(), path + ": " + parsed.status().message());
  PlanSource source;
  source.recommendations = std::move(parsed).value();
  // The evidence is as old as the file: planning the same file again writes nothing new.
  struct stat st {};
  source.as_of_s = ::stat(path.c_str(), &st) == 0 ? st.st_mtime : now_s;
  source.name = "recommendations " + path;
  return source;
}

// Writes the proposals; prints the table and the totals; writes the reports.
int PlanAndReport(const ReportInput& input, const LedgerFlags& ledger_flags,
                  const std::string& report_dir, const ReportFormats& formats, std::ostream& out,
                  std::ostream& err) {
  if (ledger_flags.given()) {
    Result<std::unique_ptr<Ledger>> ledger = OpenLedger(ledger_flags);
    const std::vector<LedgerAction> rows = ProposalRows(input.actions, input.as_of_s);
    Result<size_t> added = ledger.ok() ? (*ledger)->Append(rows) : Result<size_t>(ledger.status());
    if (!added.ok()) {
      err << kPlan << ": ledger: " << added.status().message() << "\n";
      return kExitFailure;
    }
    err << "ledger: " << rows.size() << " proposals (" << *added << " new) in "
        << LedgerShownAs(ledger_flags) << "\n";
  }
  out << PlanTable(input.actions);
  Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(input.actions);
  Result<CostCenterGroup> total =
      groups.ok() ? TotalOf(*groups) : Result<CostCenterGroup>(groups.status());
  if (!total.ok()) {
    err << kPlan << ": " << total.status().message() << "\n";
    return kExitFailure;
  }
  out << "plan: " << input.actions.size() << " workload-containers, " << total->changes
      << " changes proposed; monthly " << FormatUsd(total->monthly_before) << " -> "
      << FormatUsd(total->monthly_after) << " (proposed savings "
      << FormatUsd(total->monthly_savings()) << "/month)\n";
  if (!report_dir.empty()) {
    Result<std::vector<std::string>> written = WriteReports(input, report_dir, formats);
    if (!written.ok()) {
      err << kPlan << ": report: " << written.status().message() << "\n";
      return kExitFailure;
    }
    for (const std::string& path : *written) out << "report: " << path << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunPlanCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string checkpoint_path, recommendations_path, policy_path, config_path;
  LedgerFlags ledger_flags;
  std::string report_dir, format_text = "html,md,json,csv";
  double min_history_hours = recommender::RecommenderOptions{}.min_history_s / 3600;
  auto app = NewCommandApp(
      "gpuvpa", "plan",
      "Plan the cheapest GPU allocation that fits each workload-container (MIG profile, shared "
      "GPU, GPU model, fewer GPUs, scale to zero) under the namespace policy; write the "
      "proposals to the ledger and the owner reports. Exit 0 on success, 1 on failure, 2 on bad "
      "usage.");
  auto* source = app->add_option_group("source", "where the recommendations come from");
  source->add_option("--checkpoint", checkpoint_path,
                     "a recommender checkpoint (gives the charts of the HTML report)");
  source->add_option("--recommendations", recommendations_path,
                     "recommendations as `gpuvpa recommend --format json` writes them");
  source->require_option(1);
  app->add_option("--policy", policy_path, "update policy (YAML; see updater/README.md)");
  app->add_option("--config", config_path, "gpuvpa config (prices, cost centers)");
  AddLedgerFlags(*app, ledger_flags, "write each proposal to this ledger");
  app->add_option("--report", report_dir, "write the owner reports into this directory");
  app->add_option("--format", format_text, "report formats, comma-separated: html,md,json,csv");
  app->add_option("--min-history-hours", min_history_hours,
                  "history needed before recommending (--checkpoint)")
      ->check(NonNegativeNumber());
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;

  Result<ReportFormats> formats = ParseFormats(format_text);
  if (!formats.ok()) {
    err << kPlan << ": " << formats.status().message() << "\n";
    return kExitUsage;
  }
  if (!report_dir.empty()) {
    // Before any work: a report that cannot be written fails now, not after the ledger rows.
    std::error_code ec;
    std::filesystem::create_directories(report_dir, ec);
    if (ec || ::access(report_dir.c_str(), W_OK) != 0) {
      err << kPlan << ": --report " << report_dir << ": "
          << (ec ? ec.message() : std::string("not writable")) << "\n";
      return kExitFailure;
    }
  }
  Result<Settings> settings = LoadSettings(config_path, policy_path);
  if (!settings.ok()) {
    err << kPlan << ": " << settings.status().message() << "\n";
    return kExitFailure;
  }
  ReportInput input;
  input.generated_at_s = static_cast<int64_t>(UnixNowSeconds());
  input.scale_to_zero = settings->policy.scale_to_zero;
  Result<PlanSource> from =
      checkpoint_path.empty()
          ? FromRecommendationsFile(recommendations_path, input.generated_at_s)
          : FromCheckpoint(checkpoint_path, min_history_hours, settings->config, err);
  if (!from.ok()) {
    err << kPlan << ": " << from.status().message() << "\n";
    return kExitFailure;
  }
  input.as_of_s = from->as_of_s;
  input.source = from->name;
  const Planner planner(GpuCatalog::BuiltIn(), settings->config.prices, settings->config.region,
                        settings->policy);
  for (const v1::Recommendation& r : from->recommendations) {
    PlannedAction a = planner.Plan(r);
    if (a.mode != UpdateMode::kOff) input.actions.push_back(std::move(a));
  }
  input.charts = ChartsOf(input.actions);
  return PlanAndReport(input, ledger_flags, report_dir, *formats, out, err);
}

int RunBacktestCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string trace_path, policy_path, config_path, report_dir, now_text;
  BacktestOptions options;
  double min_history_hours = options.recommender.min_history_s / 3600;
  auto app = NewCommandApp(
      "gpuvpa", "backtest",
      "Replay the first part of a trace (CSV, README \"Trace format\"), plan, and check the "
      "plan against the rest: future VRAM peaks that overflow the pick (CUDA OOMs) and the cost "
      "relative to today's allocation, for gpuvpa's estimator, max x 1.15, p90 of hourly peaks "
      "x 1.15 and an oracle. Exit 0 on success, 1 on failure, 2 on bad usage.");
  app->add_option("--trace", trace_path, "trace CSV to replay")->required();
  app->add_option("--split", options.split, "share of the trace's time span to train on")
      ->check(NumberInRange(0.01, 0.99));
  app->add_option("--policy", policy_path, "update policy (YAML; see updater/README.md)");
  app->add_option("--config", config_path, "gpuvpa config (prices, cost centers)");
  app->add_option("--report", report_dir, "write backtest.html into this directory");
  app->add_option("--min-history-hours", min_history_hours, "history needed before recommending")
      ->check(NonNegativeNumber());
  app->add_option("--sample-period-seconds", options.store.sample_period_s,
                  "device time one trace row stands for")
      ->check(PositiveNumber());
  app->add_option("--now", now_text,
                  "the current time (Unix seconds or RFC 3339; default: the "
                  "clock): rows later than now + skew are refused");
  recommender::RecommenderOptions& r = options.recommender;
  app->add_option("--target-percentile", r.vram_target_percentile,
                  "estimator design: percentile of the hourly VRAM peaks")
      ->check(NumberInRange(0.5, 1));
  app->add_option("--target-margin-min", r.target_margin_min,
                  "estimator design: the target's margin for flat peaks")
      ->check(NumberInRange(0, 1));
  app->add_option("--target-margin-gain", r.target_margin_gain,
                  "estimator design: margin added per unit of peak variation (p98 - p50) / p98")
      ->check(NumberInRange(0, 10));
  app->add_option("--target-margin-max", r.target_margin_max,
                  "estimator design: the target's largest margin")
      ->check(NumberInRange(0, 1));
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  const char* kBacktest = "gpuvpa backtest";
  if (!now_text.empty()) {
    Result<double> now = ParseTimestamp(now_text);
    if (!now.ok()) {
      err << kBacktest << ": --now: " << now.status().message() << "\n";
      return kExitUsage;
    }
    options.replay.now_s = *now;
  }
  options.recommender.min_history_s = min_history_hours * 3600;
  Result<Settings> settings = LoadSettings(config_path, policy_path);
  if (!settings.ok()) {
    err << kBacktest << ": " << settings.status().message() << "\n";
    return kExitFailure;
  }
  const GpuvpaConfig* config = &settings->config;
  const UpdaterPolicy* policy = &settings->policy;
  options.cost_centers = config->cost_centers;
  Result<BacktestResult> result = RunBacktest(trace_path, GpuCatalog::BuiltIn(), config->prices,
                                              config->region, *policy, options);
  if (!result.ok()) {
    err << kBacktest << ": " << result.status().message() << "\n";
    return kExitFailure;
  }
  out << FormatBacktestTable(*result);
  if (!report_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(report_dir, ec);
    const std::string path = (std::filesystem::path(report_dir) / "backtest.html").string();
    Status s = ec ? InvalidArgumentError("--report " + report_dir + ": " + ec.message())
                  : WriteFileAtomically(path, RenderBacktestHtml(*result, trace_path));
    if (!s.ok()) {
      err << kBacktest << ": " << s.message() << "\n";
      return kExitFailure;
    }
    out << "report: " << path << "\n";
  }
  return kExitOk;
}

}  // namespace gpuvpa::cmd
