// CLI command wiring: flags -> store, replayer, recommender, checkpoint -> output.
#include "recommender/cmd/commands.h"

#include "core/config.h"
#include "core/flags.h"
#include "core/gpu_catalog.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "recommender/logic/recommender.h"
#include "recommender/logic/usage_charges.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::recommender {
int RunRecommendCommand(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  std::string trace_path;
  std::string checkpoint_path;
  std::string format_text = "table";
  std::string ledger_path;
  std::string config_path;
  FleetStoreOptions store_options;
  RecommenderOptions recommender_options;
  double min_history_hours = recommender_options.min_history_s / 3600;
  FlagParser flags("recommend");
  flags.AddString("trace", &trace_path, "trace CSV to replay (required)");
  flags.AddString("checkpoint", &checkpoint_path, "checkpoint file to restore from and save to");
  flags.AddString("format", &format_text, "table or json (default table)");
  flags.AddString("ledger", &ledger_path, "charge usage since the last run to this ledger");
  flags.AddString("config", &config_path, "gpuvpa config (prices, cost centers)");
  flags.Require("trace");
  flags.AddDouble("min-history-hours", &min_history_hours,
                  "history needed before recommending (default 24)");
  flags.AddDouble("sample-period-seconds", &store_options.sample_period_s,
                  "device time one trace row stands for (default 60)");
  if (!flags.ParseOrExplain(args, err)) return kExitUsage;
  if (!(store_options.sample_period_s > 0)) {
    err << "recommend: --sample-period-seconds must be positive\n";
    return kExitUsage;
  }
  Result<OutputFormat> format = ParseOutputFormat(format_text);
  if (!format.ok()) {
    err << "recommend: " << format.status().message() << "\n";
    return kExitUsage;
  }
  recommender_options.min_history_s = min_history_hours * 3600;
  Result<GpuvpaConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) {
    err << "recommend: " << config.status().message() << "\n";
    return kExitFailure;
  }

  FleetStore store(store_options);
  if (!checkpoint_path.empty()) {
    Result<CheckpointLoad> load = LoadCheckpoint(checkpoint_path, store);
    if (load.ok()) {
      for (const Status& refused : load->refused)
        err << "checkpoint refused: " << refused.message() << "\n";
      err << "checkpoint: restored " << store.size() << " workload-containers from "
          << load->loaded_from << "\n";
    } else if (load.status().code() != StatusCode::kNotFound) {
      err << "checkpoint: " << load.status().message() << "\n";
      return kExitFailure;
    }
  }

  TraceReplayer replayer(store, GpuCatalog::BuiltIn(), config->cost_centers);
  Result<TraceReplayReport> report = replayer.ReplayFile(trace_path);
  if (!report.ok()) {
    err << "trace: " << report.status().message() << "\n";
    return kExitFailure;
  }
  for (const TraceIssue& issue : report->issues)
    err << "trace: " << trace_path << ":" << issue.line << ": field " << issue.field << ": "
        << issue.message << "\n";
  err << "trace: " << report->rows << " rows, " << report->accepted << " accepted, "
      << report->malformed << " malformed (skipped)\n";
  if (report->accepted > 0) store.ForgetStale(report->last_time_s);

  const Recommender recommender(recommender_options);
  const std::vector<Recommendation> recommendations = recommender.RecommendAll(store);
  // Ledger first, checkpoint second: a crash in between re-charges the same action ids, which
  // the ledger ignores.
  if (!ledger_path.empty()) {
    UsageCharges charges =
        ChargeUsageSinceLastCharge(store, recommendations, config->prices, config->region);
    for (const Status& s : charges.unpriced)
      err << "ledger: not charged yet: " << s.message() << "\n";
    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path);
    Result<size_t> added =
        ledger.ok() ? (*ledger)->Append(charges.actions) : Result<size_t>(ledger.status());
    if (!added.ok()) {
      err << "ledger: " << added.status().message() << "\n";
      return kExitFailure;
    }
    MarkCharged(store, charges);
    err << "ledger: charged " << charges.actions.size() << " workload-containers (" << *added
        << " new rows) to " << ledger_path << "\n";
  }
  if (!checkpoint_path.empty()) {
    if (Status s = SaveCheckpoint(store, checkpoint_path, report->last_time_s); !s.ok()) {
      err << "checkpoint: " << s.message() << "\n";
      return kExitFailure;
    }
  }
  out << FormatRecommendations(recommendations, store, *format);
  return 0;
}

int RunDemoTraceCommand(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  std::string path;
  DemoFleetOptions options;
  int seed = static_cast<int>(options.seed);
  FlagParser flags("demo-trace");
  flags.AddString("out", &path, "where to write the trace CSV (required)");
  flags.AddInt("days", &options.days, "days of history (default 7)");
  flags.AddInt("seed", &seed, "random seed (default 20261102)");
  flags.Require("out");
  if (!flags.ParseOrExplain(args, err)) return kExitUsage;
  if (options.days <= 0) {
    err << "demo-trace: --days must be positive\n" << flags.Usage();
    return kExitUsage;
  }
  options.seed = static_cast<uint64_t>(seed);
  if (Status s = WriteDemoFleetTrace(options, path); !s.ok()) {
    err << "demo-trace: " << s.message() << "\n";
    return kExitFailure;
  }
  out << "demo-trace: wrote " << options.days << " days of the demo fleet to " << path << "\n";
  return 0;
}

}  // namespace gpuvpa::recommender
