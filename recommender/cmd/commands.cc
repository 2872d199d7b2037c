// CLI command wiring: flags -> store, replayer, recommender, ledger, checkpoint -> output.
#include "recommender/cmd/commands.h"

#include <unistd.h>

#include <filesystem>

#include "core/base/atomic_file.h"
#include "core/base/text_lines.h"
#include "core/base/time_format.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/config/config.h"
#include "core/gpu/gpu_catalog.h"
#include "core/metrics/exposition_text.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/checkpoint/settle.h"
#include "recommender/input/dcgm_ingest.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "recommender/logic/recommender.h"
#include "recommender/logic/usage_charges.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::recommender {
namespace {

constexpr const char* kRecommend = "gpuvpa recommend";

// A file this run will write must be writable before any work: a missing directory fails now,
// not after the whole replay.
Status CheckWritablePath(const std::string& flag, const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return InvalidArgumentError(flag + " " + path + ": directory " + dir.string() +
                                " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    return InvalidArgumentError(flag + " " + path + ": directory " + dir.string() +
                                " is not writable");
  return OkStatus();
}

void PrintTraceIssues(const std::string& trace_path, const TraceReplayReport& report,
                      std::ostream& err) {
  for (const TraceIssue& issue : report.issues)
    err << "trace: " << trace_path << ":" << issue.line << ": field " << issue.field << ": "
        << issue.message << "\n";
  if (report.malformed > report.issues.size())
    err << "trace: ... and " << report.malformed - report.issues.size() << " more malformed rows\n";
  err << "trace: " << report.rows << " rows, " << report.accepted << " accepted, "
      << report.already_ingested << " already ingested (skipped), " << report.malformed
      << " malformed (skipped)\n";
}

// A trace is exposition text (a DCGM exporter scrape, a promtool dump, an OpenMetrics file)
// when its first non-blank line is a comment or a sample ("name{" or "name value"), not a CSV
// header.
bool LooksLikeExpositionText(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const std::string_view line = NextLine(text, pos);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.front() == '#') return true;
    const size_t brace = line.find('{');
    const size_t comma = line.find(',');
    return brace != std::string_view::npos && (comma == std::string_view::npos || brace < comma);
  }
  return false;
}

void PrintDcgmReport(const std::string& path, const DcgmIngestReport& r, std::ostream& err) {
  for (const std::string& issue : r.issues) err << "trace: " << path << ": " << issue << "\n";
  err << "trace: " << r.series << " usage series (DCGM, gpuvpa-node-agent; SM activity from "
      << SmSourceName(kSmActive) << ": " << r.sm_source_series[kSmActive] << ", "
      << SmSourceName(kGrEngineActive) << ": " << r.sm_source_series[kGrEngineActive] << ", "
      << SmSourceName(kGpuUtil) << ": " << r.sm_source_series[kGpuUtil] << "), "
      << r.kube_state_series << " kube-state-metrics series; owners from kube-state-metrics "
      << r.owner_from_kube_state << ", from pod names " << r.owner_from_pod_name << ", bare pods "
      << r.owner_bare_pod << "; allocations from requests " << r.allocation_from_request
      << ", from DCGM " << r.allocation_from_dcgm << "\n";
  err << "trace: " << r.samples << " samples, " << r.accepted << " accepted, " << r.already_ingested
      << " already ingested (skipped), " << r.refused << " refused, " << r.without_sm
      << " without SM activity, " << r.no_value_markers << " DCGM no-value markers, " << r.no_pod
      << " on GPUs without a pod; " << r.shared_device_samples
      << " split between pods of a shared GPU (estimates), " << r.per_process_samples
      << " per process (" << r.agent_samples << " from gpuvpa-node-agent, which superseded "
      << r.superseded_by_agent << " DCGM points; " << r.agent_mig_series
      << " of its MIG instance series left to DCGM)\n";
}

// gpuvpa recommend's flags.
struct RecommendFlags {
  std::string trace_path;
  std::string trace_format = "auto";
  std::string checkpoint_path;
  std::string format_text = "table";
  LedgerFlags ledger;
  std::string config_path;
  std::string now_text;
  std::string sm_unit = "ratio";
  std::string vram_unit = "bytes";
  bool wide = false;
  FleetStoreOptions store_options;
  RecommenderOptions recommender_options;
  TraceReplayOptions replay_options;
  double min_history_hours = RecommenderOptions{}.min_history_s / 3600;
};

std::unique_ptr<CLI::App> RecommendApp(RecommendFlags& f) {
  auto app = NewCommandApp(
      "gpuvpa", "recommend",
      "Replay a GPU sample trace into the decaying histograms (restoring and saving a "
      "checkpoint), charge new usage to the ledger, and print one recommendation per "
      "workload-container. Exit 0 on success, 1 on failure, 2 on bad usage.");
  app->add_option("--trace", f.trace_path,
                  "trace to replay: a CSV (README, Trace format) or exposition text (a DCGM "
                  "exporter / kube-state-metrics scrape, a promtool dump, OpenMetrics)")
      ->required();
  app->add_option("--trace-format", f.trace_format,
                  "auto (by content), csv, or openmetrics (Prometheus / OpenMetrics text)")
      ->check(CLI::IsMember({"auto", "csv", "openmetrics"}));
  app->add_option("--checkpoint", f.checkpoint_path, "checkpoint file to restore from and save to");
  app->add_option("--format", f.format_text, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  app->add_flag("--wide", f.wide, "every table column (default: fits 120 columns)");
  AddLedgerFlags(*app, f.ledger, "charge usage not yet charged to this ledger");
  app->add_option("--config", f.config_path, "gpuvpa config (prices, cost centers)");
  app->add_option("--min-history-hours", f.min_history_hours, "history needed before recommending")
      ->check(NonNegativeNumber());
  app->add_option("--sample-period-seconds", f.store_options.sample_period_s,
                  "device time one trace row stands for")
      ->check(PositiveNumber());
  app->add_option("--now", f.now_text,
                  "the current time (Unix seconds or RFC 3339; default: the clock): rows later "
                  "than now + skew are refused");
  app->add_option("--max-future-skew-seconds", f.replay_options.max_future_skew_s,
                  "how far past now a timestamp may be")
      ->check(NonNegativeNumber());
  app->add_option("--sm-unit", f.sm_unit, "sm_active column unit: ratio (0..1) or percent (0..100)")
      ->check(CLI::IsMember({"ratio", "percent"}));
  app->add_option("--vram-unit", f.vram_unit, "vram_bytes column unit: bytes or mib")
      ->check(CLI::IsMember({"bytes", "mib"}));
  return app;
}

// The checkpoint (when there is one) into `store`, and the ledger (when asked for) with its
// charge marks: they say which samples are charged already, whatever the checkpoint says.
Result<std::unique_ptr<Ledger>> RestoreState(const RecommendFlags& f, FleetStore& store,
                                             std::ostream& err) {
  if (!f.checkpoint_path.empty()) {
    Result<CheckpointLoad> load = LoadCheckpoint(f.checkpoint_path, store);
    if (load.ok()) {
      for (const Status& refused : load->refused)
        err << "checkpoint refused: " << refused.message() << "\n";
      err << "checkpoint: restored " << store.size() << " workload-containers from "
          << load->loaded_from << "\n";
    } else if (load.status().code() != StatusCode::kNotFound) {
      return Status(load.status().code(), "checkpoint: " + load.status().message());
    }
  }
  if (!f.ledger.given()) return std::unique_ptr<Ledger>();
  Result<std::unique_ptr<Ledger>> opened = OpenLedger(f.ledger);
  Result<std::unordered_map<std::string, double>> marks =
      opened.ok() ? (*opened)->ChargeMarks()
                  : Result<std::unordered_map<std::string, double>>(opened.status());
  if (!marks.ok()) return Status(marks.status().code(), "ledger: " + marks.status().message());
  store.SetLedgerChargeMarks(std::move(marks).value());
  return opened;
}

// The trace into the store: exposition text through the DCGM ingester, a CSV through the
// replayer. Errors are printed; false when the run stops.
bool ReplayTrace(const RecommendFlags& f, const GpuvpaConfig& config, double now_s,
                 FleetStore& store, std::ostream& err) {
  const std::string& path = f.trace_path;
  bool exposition = f.trace_format == "openmetrics";
  if (f.trace_format == "auto") {
    // The first 64 KiB tell the formats apart; a CSV is then streamed from its mapping.
    Result<std::string> prefix = ReadFilePrefix(path, 64 << 10);
    if (!prefix.ok()) {
      err << "trace: " << path << ": " << prefix.status().message() << "\n";
      return false;
    }
    exposition = LooksLikeExpositionText(*prefix);
  }
  if (!exposition) {
    TraceReplayer replayer(store, GpuCatalog::BuiltIn(), config.cost_centers, f.replay_options);
    Result<TraceReplayReport> report = replayer.ReplayFile(path);
    if (!report.ok()) {
      err << "trace: " << path << ": " << report.status().message() << "\n";
      return false;
    }
    PrintTraceIssues(path, *report, err);
    return true;
  }
  Result<std::string> text = ReadWholeFile(path);
  // Samples without their own timestamp (a live scrape) are taken at --now.
  Result<ExpositionParse> parsed = text.ok()
                                       ? ParseExpositionText(*text, {TimestampUnit::kAuto, now_s})
                                       : Result<ExpositionParse>(text.status());
  if (!parsed.ok()) {
    err << "trace: " << path << ": " << parsed.status().message() << "\n";
    return false;
  }
  for (const ExpositionIssue& issue : parsed->issues)
    err << "trace: " << path << ":" << issue.line << ": " << issue.message << "\n";
  if (parsed->malformed > parsed->issues.size())
    err << "trace: ... and " << parsed->malformed - parsed->issues.size()
        << " more malformed lines\n";
  DcgmIngestOptions dcgm;
  dcgm.cost_centers = config.cost_centers;
  dcgm.now_s = now_s;
  dcgm.max_future_skew_s = f.replay_options.max_future_skew_s;
  // A scrape or dump holding the node agent's series: they win as in the daemon.
  dcgm.names.node_agent.enabled = true;
  DcgmIngester ingester(store, GpuCatalog::BuiltIn(), dcgm);
  PrintDcgmReport(path, ingester.Ingest(parsed->series), err);
  return true;
}

}  // namespace

int RunRecommendCommand(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  RecommendFlags f;
  auto app = RecommendApp(f);
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  double now_s = UnixNowSeconds();
  if (!f.now_text.empty()) {
    Result<double> now = ParseTimestamp(f.now_text);
    if (!now.ok() || !(*now >= kMinSampleTimeS && *now < kMaxSampleTimeS)) {
      err << kRecommend << ": --now: "
          << (now.ok() ? "\"" + f.now_text + "\" is not between 2000 and 2100"
                       : now.status().message())
          << "\n";
      return kExitUsage;
    }
    now_s = *now;
  }
  f.replay_options.now_s = now_s;
  f.replay_options.sm_unit = f.sm_unit == "percent" ? SmUnit::kPercent : SmUnit::kRatio;
  f.replay_options.vram_unit = f.vram_unit == "mib" ? VramUnit::kMebibytes : VramUnit::kBytes;
  f.recommender_options.min_history_s = f.min_history_hours * 3600;
  Result<GpuvpaConfig> config = LoadConfigFile(f.config_path);
  if (!config.ok()) {
    err << kRecommend << ": " << config.status().message() << "\n";
    return kExitFailure;
  }
  for (const auto& [flag, path] : {std::pair{std::string("--checkpoint"), f.checkpoint_path},
                                   std::pair{std::string("--ledger"), SqlitePathOf(f.ledger)}}) {
    if (path.empty()) continue;
    if (Status s = CheckWritablePath(flag, path); !s.ok()) {
      err << kRecommend << ": " << s.message() << "\n";
      return kExitFailure;
    }
  }
  FleetStore store(f.store_options);
  Result<std::unique_ptr<Ledger>> ledger = RestoreState(f, store, err);
  if (!ledger.ok()) {
    err << ledger.status().message() << "\n";
    return kExitFailure;
  }
  if (!ReplayTrace(f, *config, now_s, store, err)) return kExitFailure;
  const Settled settled =
      Settle(store, Recommender(f.recommender_options),
             {&config->prices, config->region, ledger->get(), f.checkpoint_path, now_s});
  if (settled.forgotten > 0)
    err << "store: forgot " << settled.forgotten
        << " workload-containers with no sample in the last " << store.options().history_s / 86400
        << " days before " << FormatTimestamp(store.newest_sample_s()) << "\n";
  if (!settled.ledger.ok()) err << "ledger: " << settled.ledger.message() << "\n";
  if (*ledger && settled.ledger.ok()) {
    for (const Status& s : settled.charged.unpriced)
      err << "ledger: not charged yet: " << s.message() << "\n";
    err << "ledger: charged " << settled.charged.workloads << " workload-containers ("
        << settled.charged.new_rows << " new rows) to " << LedgerShownAs(f.ledger) << "\n";
  }
  if (!settled.checkpoint.ok()) err << "checkpoint: " << settled.checkpoint.message() << "\n";
  if (!settled.ledger.ok() || !settled.checkpoint.ok()) return kExitFailure;
  const OutputFormat format = f.format_text == "json" ? OutputFormat::kJson : OutputFormat::kTable;
  out << FormatRecommendations(settled.recommendations, store,
                               {format, f.wide, &config->prices, config->region});
  return kExitOk;
}

int RunDemoTraceCommand(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  std::string path;
  DemoFleetOptions options;
  uint64_t seed = options.seed;
  auto app = NewCommandApp("gpuvpa", "demo-trace",
                           "Write the deterministic demo fleet trace (seven workloads).");
  app->add_option("--out", path, "where to write the trace CSV")->required();
  app->add_option("--days", options.days, "days of history")->check(NumberInRange(1, 3650));
  app->add_option("--seed", seed, "random seed");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  options.seed = seed;
  if (Status s = WriteDemoFleetTrace(options, path); !s.ok()) {
    err << "gpuvpa demo-trace: " << s.message() << "\n";
    return kExitFailure;
  }
  out << "demo-trace: wrote " << options.days << " days of the demo fleet to " << path << "\n";
  return kExitOk;
}

}  // namespace gpuvpa::recommender
