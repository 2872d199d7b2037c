// Replay command wiring.
#include "scaler/cmd/replay_command.h"

#include <cstdio>

#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/cost/money.h"
#include "core/cost/price_book.h"
#include "scaler/replay/queue_replay.h"
#include "scaler/service/activity_meter.h"

namespace gpuvpa::scaler {

namespace {

constexpr const char* kReplay = "gpuvpa-scaler replay";

// The replay's summary, as the README shows it.
std::string ReplaySummary(const QueueReplayResult& r) {
  auto saved = [](double metered, double baseline) {
    return baseline > 0 ? 100 * (1 - metered / baseline) : 0.0;
  };
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "requests              %zu over %.0f s\n"
                "GPU-seconds metered   %.0f (scale-to-zero, peak %d replicas)\n"
                "baseline (a)          %.0f GPU-seconds: %d replicas always on, the fewest "
                "with a p99 wait no worse (%.2f s)\n"
                "baseline (b)          %.0f GPU-seconds: the peak %d replicas always on\n"
                "saving                %.1f %% against (a), %.1f %% against (b)\n"
                "cold starts           %d from zero, %d replica starts, %.0f s at zero replicas\n"
                "queueing delay        p50 %.2f s, p99 %.2f s, max %.2f s\n",
                r.requests, r.duration_s, r.metered_gpu_s, r.peak_replicas, r.fixed_gpu_s,
                r.fixed_replicas, r.fixed_wait_p99_s, r.reserved_gpu_s, r.peak_replicas,
                saved(r.metered_gpu_s, r.fixed_gpu_s), saved(r.metered_gpu_s, r.reserved_gpu_s),
                r.cold_starts, r.replica_starts, r.idle_at_zero_s, r.wait_p50_s, r.wait_p99_s,
                r.wait_max_s);
  std::string out = buf;
  if (r.metered_gpu_s > r.fixed_gpu_s)
    out +=
        "note                  scale-to-zero costs more than baseline (a) here: its cold "
        "starts make the p99 wait so long that fewer always-on replicas match it\n";
  return out;
}

// The three GPU-time figures in dollars.
Result<std::string> ReplayCost(const QueueReplayResult& r, double usd_per_gpu_hour) {
  Result<MicroUsd> metered = PriceGpuSeconds(r.metered_gpu_s, usd_per_gpu_hour);
  Result<MicroUsd> fixed_cost = PriceGpuSeconds(r.fixed_gpu_s, usd_per_gpu_hour);
  Result<MicroUsd> reserved = PriceGpuSeconds(r.reserved_gpu_s, usd_per_gpu_hour);
  for (const Result<MicroUsd>* m : {&metered, &fixed_cost, &reserved})
    if (!m->ok()) return m->status();
  return "cost                  metered " + FormatUsd(*metered) + " vs (a) " +
         FormatUsd(*fixed_cost) + " vs (b) " + FormatUsd(*reserved) + "\n";
}

// The replay's optional ledger row: where it goes, what names it, and its checks.
struct ReplayRowFlags {
  LedgerFlags ledger;
  std::string ns, scaled_object, cost_center = "unallocated";
  std::vector<CLI::Option*> fields;  // the row's names, which need a ledger

  void Add(CLI::App& app) {
    AddLedgerFlags(app, ledger,
                   "also write the replay as one priced metered_period row (a re-run adds "
                   "nothing)");
    fields = {app.add_option("--namespace", ns, "the ScaledObject's namespace, for the ledger row"),
              app.add_option("--scaled-object", scaled_object,
                             "the ScaledObject's name, for the ledger row"),
              app.add_option("--cost-center", cost_center, "cost center of the ledger row")};
  }
  // Usage errors ("" when the flags fit): a row's name without a ledger; a ledger without the
  // row's names or a price.
  std::string FieldWithoutLedger() const {
    for (CLI::Option* field : fields)
      if (field->count() > 0 && !ledger.given())
        return field->get_name() + " is for the ledger row: give --ledger or --ledger-url-file";
    return "";
  }
  std::string LedgerWithoutRow(bool priced) const {
    if (ledger.given() && (ns.empty() || scaled_object.empty() || !priced))
      return "--ledger needs --namespace, --scaled-object and a price (--usd-per-gpu-hour or "
             "--gpu-model)";
    return "";
  }
  // Writes the replay as one priced metered_period row (its id makes a re-run add nothing) and
  // says so on `out`; an exit code.
  int Write(const QueueReplayResult& r, MeteredPeriod period, double usd_per_gpu_hour,
            std::ostream& out, std::ostream& err) const {
    period.namespace_name = ns;
    period.scaled_object = scaled_object;
    period.cost_center = cost_center;
    period.start_s = r.start_s;
    period.end_s = r.start_s + r.duration_s;
    period.gpu_seconds = r.metered_gpu_s;
    period.reserved_gpu_seconds = r.reserved_gpu_s;
    period.evidence["requests"] = r.requests;
    period.evidence["peak_replicas"] = r.peak_replicas;
    period.evidence["cold_starts"] = r.cold_starts;
    Result<LedgerAction> row = MeteredPeriodRow(period, usd_per_gpu_hour);
    Result<std::unique_ptr<Ledger>> opened = row.ok() ? OpenLedger(ledger) : row.status();
    Result<size_t> added = opened.ok() ? (*opened)->Append(*row) : opened.status();
    if (!added.ok()) {
      err << kReplay << ": ledger " << LedgerShownAs(ledger) << ": " << added.status().message()
          << "\n";
      return kExitFailure;
    }
    out << "ledger                " << *added << " metered_period row"
        << (*added == 1 ? "" : "s (already there)") << " in " << LedgerShownAs(ledger) << "\n";
    return kExitOk;
  }
};

}  // namespace

int RunReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string arrivals_path;
  std::string service_column;
  std::string service_unit = "s";
  QueueReplayOptions o;
  double usd_per_gpu_hour = 0;
  ReplayRowFlags row;
  std::string gpu_model, config_path;
  auto app = NewCommandApp("gpuvpa-scaler", "replay",
                           "Replay a request-arrival trace through a simulated KEDA/HPA-scaled "
                           "queue: metered GPU time against reserved.");
  app->add_option("--arrivals", arrivals_path, "request arrivals CSV, first column a timestamp")
      ->required();
  CLI::Option* fixed =
      app->add_option("--service-seconds", o.service_s,
                      "service time of every request (when the file has no service column)")
          ->check(PositiveNumber());
  CLI::Option* column =
      app->add_option("--service-column", service_column,
                      "column of the arrivals file with each request's own service time");
  app->add_option("--service-unit", service_unit, "unit of --service-column: s or ms")
      ->check(CLI::IsMember({"s", "ms"}));
  fixed->excludes(column);
  app->add_option("--target", o.target, "queue length per replica, KEDA listLength")
      ->check(PositiveNumber());
  app->add_option("--activation", o.activation_threshold, "active when depth > this")
      ->check(NonNegativeNumber());
  app->add_option("--max-replicas", o.max_replicas, "maxReplicaCount")
      ->check(NumberInRange(1, 100000));
  app->add_option("--poll-seconds", o.poll_interval_s, "KEDA pollingInterval")
      ->check(PositiveNumber());
  app->add_option("--cooldown-seconds", o.cooldown_s, "KEDA cooldownPeriod before scaling to zero")
      ->check(NonNegativeNumber());
  app->add_option("--stabilization-seconds", o.stabilization_s, "HPA scale-down stabilization")
      ->check(NonNegativeNumber());
  app->add_option("--cold-start-seconds", o.cold_start_s, "time for a new replica to serve")
      ->check(NonNegativeNumber());
  app->add_option("--gpu-per-replica", o.gpu_per_replica, "GPUs per replica")
      ->check(PositiveNumber());
  CLI::Option* price = app->add_option("--usd-per-gpu-hour", usd_per_gpu_hour,
                                       "price, to show the saving in dollars")
                           ->check(NumberInRange(0.0, kDefaultMaxUsdPerGpuHour));
  CLI::Option* model = app->add_option(
      "--gpu-model", gpu_model, "price the GPU time from the price book (--config, else built-in)");
  price->excludes(model);
  model->excludes(price);
  app->add_option("--config", config_path, "gpuvpa config (prices, region)")
      ->check(CLI::ExistingFile)
      ->needs(model);
  row.Add(*app);
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  std::string usage = row.FieldWithoutLedger();
  if (usage.empty() && fixed->count() == 0 && column->count() == 0)
    usage = "give --service-seconds or --service-column";
  if (usage.empty()) usage = row.LedgerWithoutRow(price->count() + model->count() > 0);
  if (!usage.empty()) {
    err << "gpuvpa-scaler replay: " << usage << "\n"
        << "Run 'gpuvpa-scaler replay --help' for the flags.\n";
    return kExitUsage;
  }
  if (model->count() > 0) {
    Result<GpuvpaConfig> config = LoadConfigFile(config_path);
    Result<double> p = config.ok() ? config->prices.GpuHourPrice(gpu_model, config->region)
                                   : Result<double>(config.status());
    if (!p.ok()) {
      err << "gpuvpa-scaler replay: --gpu-model " << gpu_model << ": " << p.status().message()
          << "\n";
      return kExitFailure;
    }
    usd_per_gpu_hour = *p;
  }
  Result<std::string> csv = ReadWholeFile(arrivals_path);
  Result<std::vector<Arrival>> arrivals =
      csv.ok()
          ? ReadArrivalRequests(*csv, service_column, service_unit == "ms" ? 0.001 : 1, o.service_s)
          : Result<std::vector<Arrival>>(csv.status());
  Result<QueueReplayResult> r =
      arrivals.ok() ? ReplayQueue(*arrivals, o) : Result<QueueReplayResult>(arrivals.status());
  if (!r.ok()) {
    err << "gpuvpa-scaler replay: " << r.status().message() << "\n";
    return kExitFailure;
  }
  out << ReplaySummary(*r);
  if (usd_per_gpu_hour > 0) {
    Result<std::string> cost = ReplayCost(*r, usd_per_gpu_hour);
    if (!cost.ok()) {
      err << kReplay << ": " << cost.status().message() << "\n";
      return kExitFailure;
    }
    out << *cost;
  }
  if (!row.ledger.given()) return kExitOk;
  MeteredPeriod period;
  period.gpu_model = gpu_model;
  period.evidence = {{"source", "gpuvpa-scaler replay"},
                     {"arrivals", arrivals_path},
                     {"gpu_per_replica", o.gpu_per_replica}};
  return row.Write(*r, std::move(period), usd_per_gpu_hour, out, err);
}

int RunDemoArrivalsCommand(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
  std::string path;
  auto app = NewCommandApp("gpuvpa-scaler", "demo-arrivals",
                           "Write the demo's queue-arrival trace: the nightly training jobs of "
                           "research/nightly-train in the demo fleet (7 nights, 01:00-03:00 UTC).");
  app->add_option("--out", path, "where to write the CSV (timestamp,service_seconds)")->required();
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  if (Status s = WriteFileAtomically(path, GenerateDemoArrivals({})); !s.ok()) {
    err << "gpuvpa-scaler demo-arrivals: " << s.message() << "\n";
    return kExitFailure;
  }
  out << "wrote " << path << "\n";
  return 0;
}

}  // namespace gpuvpa::scaler
