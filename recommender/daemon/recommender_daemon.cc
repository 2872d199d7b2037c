// gpuvpa-recommender's poll loop, snapshot and metrics.
#include "recommender/daemon/recommender_daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/base/workload_key.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/cost_center.h"
#include "core/gpu/gpu_catalog.h"
#include "core/net/metrics_page.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/checkpoint/settle.h"
#include "recommender/logic/usage_charges.h"
#include "recommender/output/recommendation_format.h"

namespace gpuvpa::recommender {
namespace {

FleetStoreOptions StoreOptions(const DaemonConfig& c) {
  FleetStoreOptions o;
  o.history_s = c.history_s;
  o.sample_period_s = c.prometheus.step_s;
  return o;
}

RecommenderOptions RecOptions(const DaemonConfig& c) {
  RecommenderOptions o;
  o.min_history_s = c.min_history_s;
  return o;
}

// The per-workload-container families of /metrics, written from the snapshot at each scrape
// (not kept as prometheus-cpp gauges: rebuilding 7 gauges per workload at every poll is
// quadratic in prometheus-cpp's Family::Remove, 12 s per poll at 10,000 workloads, and its
// Collect copies every label of every series). Labels as prometheus-cpp orders them (by name).
struct WorkloadFamily {
  const char* name;
  const char* help;
  bool (*has)(const v1::Recommendation&);
  double (*value)(const v1::Recommendation&);
};
bool Always(const v1::Recommendation&) { return true; }
bool HasTarget(const v1::Recommendation& r) { return r.has_target(); }
bool Priced(const v1::Recommendation& r) { return r.priced(); }
constexpr WorkloadFamily kWorkloadFamilies[] = {
    {"gpuvpa_recommendation_vram_target_bytes", "Recommended VRAM (target) per workload-container",
     HasTarget,
     [](const v1::Recommendation& r) { return static_cast<double>(r.vram_target_bytes()); }},
    {"gpuvpa_recommendation_vram_upper_bytes", "Upper bound of the VRAM target", HasTarget,
     [](const v1::Recommendation& r) { return static_cast<double>(r.vram_upper_bytes()); }},
    {"gpuvpa_recommendation_sm_p90_ratio", "SM activity p90 (0..1)", Always,
     [](const v1::Recommendation& r) { return r.sm_p90_ratio(); }},
    {"gpuvpa_recommendation_confidence", "Confidence (days of history, capped)", Always,
     [](const v1::Recommendation& r) { return r.confidence(); }},
    {"gpuvpa_idle_tax_gpu_seconds", "Allocated minus VRAM-resident GPU time over the history",
     Always, [](const v1::Recommendation& r) { return r.idle_tax_gpu_hours_vram() * 3600; }},
    {"gpuvpa_idle_tax_usd", "Idle tax in US dollars (priced models only)", Priced,
     [](const v1::Recommendation& r) { return r.idle_tax_usd_vram(); }},
    {"gpuvpa_allocated_gpu_seconds", "Allocated GPU time over the history (GPU-seconds)", Always,
     [](const v1::Recommendation& r) { return r.allocated_gpu_hours() * 3600; }},
};

// `{container="…",cost_center="…",namespace="…",workload="…",workload_kind="…"} `
void AppendWorkloadLabels(std::string& out, const v1::WorkloadIdentity& id) {
  const std::pair<const char*, const std::string*> labels[] = {
      {"{container=\"", &id.container()},
      {"\",cost_center=\"", &id.cost_center()},
      {"\",namespace=\"", &id.namespace_name()},
      {"\",workload=\"", &id.owner_name()},
      {"\",workload_kind=\"", &id.owner_kind()}};
  for (const auto& [head, value] : labels) {
    out += head;
    AppendEscapedLabelValue(out, *value);
  }
  out += "\"} ";
}

void AppendWorkloadMetrics(std::string& out, const RecommendationSnapshot& snap) {
  std::vector<std::string> labels;
  labels.reserve(snap.by_key.size());
  size_t bytes = 0;
  for (const auto& [key, rec] : snap.by_key) {
    AppendWorkloadLabels(labels.emplace_back(), rec.identity());
    bytes += labels.back().size();
  }
  size_t longest_name = 0;
  for (const WorkloadFamily& f : kWorkloadFamilies)
    longest_name = std::max(longest_name, std::string_view(f.name).size());
  out.reserve(out.size() +
              std::size(kWorkloadFamilies) * (bytes + snap.by_key.size() * (longest_name + 24)));
  for (const WorkloadFamily& f : kWorkloadFamilies) {
    AppendFamilyHeader(out, f.name, f.help, "gauge");
    size_t i = 0;
    for (const auto& [key, rec] : snap.by_key) {
      const std::string& l = labels[i++];
      if (!f.has(rec)) continue;
      (out += f.name) += l;
      AppendMetricValue(out, f.value(rec));
      out += '\n';
    }
  }
}

}  // namespace

RecommenderDaemon::RecommenderDaemon(DaemonConfig config, GpuvpaConfig gpuvpa)
    : config_(std::move(config)),
      gpuvpa_(std::move(gpuvpa)),
      store_(StoreOptions(config_)),
      recommender_(RecOptions(config_)),
      snapshot_(std::make_shared<RecommendationSnapshot>()),
      registry_(std::make_shared<prometheus::Registry>()) {
  RegisterBuildInfo(*registry_, "recommender");
  cost_ = std::make_unique<CostCounters>(*registry_);
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  };
  samples_ingested_ = &prometheus::BuildCounter()
                           .Name("gpuvpa_recommender_samples_ingested_total")
                           .Help("Samples added to the histograms")
                           .Register(*registry_)
                           .Add({});
  invalid_cost_center_ =
      &prometheus::BuildCounter()
           .Name("gpuvpa_recommender_invalid_cost_center_samples_total")
           .Help(
               "Samples charged to unallocated because the cost center their workload or "
               "namespace names is not valid text (the log names it)")
           .Register(*registry_)
           .Add({});
  query_errors_ = &prometheus::BuildCounter()
                       .Name("gpuvpa_recommender_query_errors_total")
                       .Help("Polls that ended with a Prometheus error")
                       .Register(*registry_)
                       .Add({});
  polls_ = &prometheus::BuildCounter()
                .Name("gpuvpa_recommender_polls_total")
                .Help("Polls started")
                .Register(*registry_)
                .Add({});
  auto single = [&](const char* name, const char* help) { return &gauge(name, help)->Add({}); };
  last_success_ = single("gpuvpa_recommender_last_success_timestamp_seconds",
                         "When the last poll completed without error (Unix seconds)");
  checkpoint_age_ = single("gpuvpa_recommender_checkpoint_age_seconds",
                           "Seconds since the checkpoint was last saved");
  workloads_ = single("gpuvpa_recommender_workloads", "Workload-containers tracked");
  unallocated_ratio_ =
      single("gpuvpa_recommender_unallocated_workloads_ratio",
             "Share of tracked GPU workload-containers without a cost center (0..1)");
  source_through_ = single("gpuvpa_recommender_source_through_timestamp_seconds",
                           "Prometheus has been read up to this time (Unix seconds)");
}

Result<std::unique_ptr<RecommenderDaemon>> RecommenderDaemon::Create(DaemonConfig config,
                                                                     GpuvpaConfig gpuvpa) {
  std::unique_ptr<RecommenderDaemon> d(new RecommenderDaemon(std::move(config), std::move(gpuvpa)));
  const DaemonConfig& c = d->config_;
  Result<std::unique_ptr<Ledger>> ledger = OpenLedger(WithConfigDefaults({}, d->gpuvpa_));
  if (!ledger.ok()) return Status(ledger.status().code(), "ledger: " + ledger.status().message());
  Result<std::unordered_map<std::string, double>> marks = (*ledger)->ChargeMarks();
  if (!marks.ok()) return Status(marks.status().code(), "ledger: " + marks.status().message());
  d->ledger_ = std::move(ledger).value();
  Result<CheckpointLoad> load = LoadCheckpoint(c.checkpoint_path, d->store_);
  if (load.ok()) {
    for (const Status& refused : load->refused)
      spdlog::error("checkpoint refused: {}", refused.message());
    spdlog::info("checkpoint: restored {} workload-containers from {} (Prometheus read through {})",
                 d->store_.size(), load->loaded_from,
                 d->store_.source_through_s() > 0 ? FormatTimestamp(d->store_.source_through_s())
                                                  : std::string("nothing yet"));
  } else if (load.status().code() != StatusCode::kNotFound) {
    return Status(load.status().code(), "checkpoint: " + load.status().message());
  }
  d->store_.SetLedgerChargeMarks(std::move(marks).value());
  d->checkpoint_writer_ =
      std::make_unique<CheckpointWriter>(c.checkpoint_path, d->store_.options());
  Result<std::unique_ptr<PrometheusSource>> source = PrometheusSource::Create(c.prometheus);
  if (!source.ok()) return source.status();
  d->source_ = std::move(source).value();
  d->source_->set_stop_flag(&d->stop_);
  DcgmIngestOptions ingest;
  ingest.names = c.prometheus.dcgm;
  ingest.kube_state = c.prometheus.kube_state;
  ingest.cost_centers = d->gpuvpa_.cost_centers;
  ingest.shared_replicas = c.shared_gpu_replicas;
  ingest.shard_index = c.shard_index;
  ingest.shard_count = c.shard_count;
  d->ingester_ = std::make_unique<DcgmIngester>(d->store_, GpuCatalog::BuiltIn(), ingest);
  // Recommendations from the checkpoint are served at once; readiness waits for a poll.
  d->Publish(d->recommender_.RecommendAll(d->store_));
  return d;
}

Status RecommenderDaemon::PollOnce(double now_s) {
  const auto started = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  polls_->Increment();
  last_loop_s_ = now_s;
  ingester_->set_now(now_s);
  const double until = now_s - config_.prometheus.lag_s;
  const double from = std::max(store_.source_through_s(), until - config_.history_s);
  size_t accepted = 0, refused = 0, already = 0;
  PollResult poll = source_->Poll(from, until, [&](std::span<const LabeledSeries> batch, double) {
    last_loop_s_ = UnixNowSeconds();
    const DcgmIngestReport r = ingester_->Ingest(batch);
    accepted += r.accepted;
    refused += r.refused;
    already += r.already_ingested;
    invalid_cost_center_->Increment(static_cast<double>(r.invalid_cost_center));
    for (const std::string& issue : r.issues) spdlog::warn("ingest: {}", issue);
  });
  last_timings_ = {};
  last_timings_.read_s = since(started);
  if (poll.through_s > store_.source_through_s()) store_.set_source_through_s(poll.through_s);
  source_through_s_ = store_.source_through_s();
  samples_ingested_->Increment(static_cast<double>(accepted));
  for (const std::string& w : poll.warnings) spdlog::warn("Prometheus warning: {}", w);
  if (poll.outside_window > 0)
    spdlog::warn("Prometheus sent {} points outside the asked windows; not ingested",
                 poll.outside_window);
  // What kube-state-metrics said about objects gone for longer than the history is dropped.
  ingester_->mutable_kube_state().ForgetBefore(until - config_.history_s);

  const bool checkpoint_due = now_s - last_checkpoint_s_ >= config_.checkpoint_interval_s;
  // The first poll charges, as does one that a shutdown ended (SIGTERM charges what was read).
  const bool charge_due =
      last_charge_s_ <= 0 || stop_ || now_s - last_charge_s_ >= config_.charge_interval_s;
  const Settled settled = SettleAndCount(now_s, charge_due, checkpoint_due);
  last_timings_.settle = settled.timings;
  const auto publish_started = std::chrono::steady_clock::now();
  Publish(settled.recommendations);
  last_timings_.publish_s = since(publish_started);
  last_timings_.total_s = since(started);
  const PollTimings& t = last_timings_;
  spdlog::info(
      "poll: {} chunks, {} queries, {} retries, {} points read through {}; {} samples "
      "added, {} already ingested, {} refused; {} workload-containers; {:.2f} s (read {:.2f}, "
      "recommend {:.2f}, ledger {:.2f}, checkpoint {:.2f}, publish {:.2f})",
      poll.chunks, poll.queries, poll.retries, poll.points,
      poll.through_s > 0 ? FormatTimestamp(poll.through_s) : std::string("-"), accepted, already,
      refused, store_.size(), t.total_s, t.read_s, t.settle.recommend_s, t.settle.ledger_s,
      t.settle.checkpoint_s, t.publish_s);
  if (!poll.error.ok() && stop_) {
    spdlog::info("poll stopped for shutdown; read through {}",
                 FormatTimestamp(store_.source_through_s()));
    return OkStatus();
  }
  if (!poll.error.ok()) {
    query_errors_->Increment();
    ++failed_polls_in_a_row_;
    {
      std::lock_guard<std::mutex> lock(last_error_mu_);
      last_poll_error_ = poll.error.message();
    }
    spdlog::error("poll: {} (keeping the last recommendations; the next poll resumes at {})",
                  poll.error.message(), FormatTimestamp(store_.source_through_s()));
    return poll.error;
  }
  if (!settled.ledger.ok()) return settled.ledger;
  last_success_s_ = now_s;
  last_success_->Set(now_s);
  failed_polls_in_a_row_ = 0;
  ready_ = true;
  return OkStatus();
}

Settled RecommenderDaemon::SettleAndCount(double now_s, bool charge, bool checkpoint) {
  SettleOptions options{&gpuvpa_.prices,
                        gpuvpa_.region,
                        ledger_.get(),
                        std::string(),
                        now_s,
                        charge,
                        checkpoint ? checkpoint_writer_.get() : nullptr};
  Settled settled = Settle(store_, recommender_, options);
  if (!settled.ledger.ok())
    spdlog::error("ledger: {} (kept pending; retried next poll)", settled.ledger.message());
  else if (charge)
    last_charge_s_ = now_s;
  for (const auto& [cost_center, amounts] : settled.charged.by_cost_center) {
    cost_->Add(cost_center, "allocated", amounts.allocated);
    cost_->Add(cost_center, "idle", amounts.idle);
  }
  if (settled.checkpoint_submitted) last_checkpoint_s_ = now_s;
  ReportCheckpointSaves();
  return settled;
}

void RecommenderDaemon::ReportCheckpointSaves() {
  const CheckpointWriter::Outcome o = checkpoint_writer_->outcome();
  if (o.saves > checkpoint_saves_reported_ && !o.last.ok())
    spdlog::error("checkpoint: {} (the previous file is kept)", o.last.message());
  checkpoint_saves_reported_ = o.saves;
}

Status RecommenderDaemon::FlushCheckpoint() {
  const Status s = checkpoint_writer_->Flush();
  ReportCheckpointSaves();
  return s;
}

Status RecommenderDaemon::ChargeAndCheckpointNow(double now_s) {
  const Settled settled = SettleAndCount(now_s, true, true);
  last_timings_ = {};
  last_timings_.settle = settled.timings;
  last_timings_.total_s =
      settled.timings.recommend_s + settled.timings.ledger_s + settled.timings.checkpoint_s;
  const Status saved = FlushCheckpoint();
  GPUVPA_RETURN_IF_ERROR(settled.ledger);
  return saved;
}

Status RecommenderDaemon::SaveCheckpointNow(double now_s) {
  checkpoint_writer_->Submit(store_, now_s);
  GPUVPA_RETURN_IF_ERROR(FlushCheckpoint());
  last_checkpoint_s_ = now_s;
  return OkStatus();
}

void RecommenderDaemon::Run() {
  while (!stop_) {
    (void)PollOnce(UnixNowSeconds());
    const auto next_poll = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(config_.poll_interval_s));
    std::unique_lock<std::mutex> lock(mu_);
    // Between polls, a List waiting for charts gets them added to the current snapshot.
    while (changed_.wait_until(lock, next_poll, [&] {
      return stop_.load() || charts_requested_;
    }) && !stop_) {
      charts_requested_ = false;
      lock.unlock();
      RepublishWithCharts();
      lock.lock();
    }
  }
  // What is pending since the last charge goes to the ledger before the final checkpoint.
  if (Status s = ChargeAndCheckpointNow(UnixNowSeconds()); !s.ok())
    spdlog::error("charge and checkpoint at stop: {}", s.message());
  else
    spdlog::info("pending usage charged; checkpoint saved to {}", config_.checkpoint_path);
}

void RecommenderDaemon::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
}

void RecommenderDaemon::Publish(const std::vector<Recommendation>& recs) {
  auto next = std::make_shared<RecommendationSnapshot>();
  std::string key;
  for (const Recommendation& r : recs) {
    v1::Recommendation proto =
        PricedRecommendation(r, store_, &gpuvpa_.prices, gpuvpa_.region, nullptr);
    const v1::WorkloadIdentity& id = proto.identity();
    AssignWorkloadKey(key, id.namespace_name(), id.owner_kind(), id.owner_name(), id.container());
    next->by_key.emplace(key, std::move(proto));
  }
  if (UnixNowSeconds() < charts_wanted_until_s_.load()) AddCharts(*next);
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool same = next->by_key.size() == snapshot_->by_key.size();
    auto b = snapshot_->by_key.cbegin();
    for (auto a = next->by_key.cbegin(); same && a != next->by_key.end(); ++a, ++b)
      same = a->first == b->first && a->second.SerializeAsString() == b->second.SerializeAsString();
    next->revision = snapshot_->revision + (same ? 0 : 1);
    snapshot_ = next;
  }
  changed_.notify_all();
  UpdateMetrics(*next);
}

void RecommenderDaemon::UpdateMetrics(const RecommendationSnapshot& snap) {
  std::lock_guard<std::mutex> lock(metrics_mu_);
  workloads_->Set(static_cast<double>(snap.by_key.size()));
  // GPU workloads charged to no cost center: kube-state-metrics exports no label or annotation
  // it is not told to (README, "Install on a cluster", step 3).
  size_t unallocated = 0;
  for (const auto& [key, rec] : snap.by_key)
    unallocated += rec.identity().cost_center() == kUnallocatedCostCenter;
  const double ratio = snap.by_key.empty() ? 0.0
                                           : static_cast<double>(unallocated) /
                                                 static_cast<double>(snap.by_key.size());
  unallocated_ratio_->Set(ratio);
  const bool too_many = TooManyWithoutCostCenter(unallocated, snap.by_key.size());
  if (too_many && !warned_unallocated_)
    spdlog::warn(
        "{} of {} GPU workloads have no cost center and are charged to \"{}\": does "
        "kube-state-metrics export the cost-center label and annotation (its "
        "--metric-labels-allowlist and --metric-annotations-allowlist)?",
        unallocated, snap.by_key.size(), kUnallocatedCostCenter);
  warned_unallocated_ = too_many;
}

void RecommenderDaemon::AddCharts(RecommendationSnapshot& snap) const {
  for (const auto& [key, rec] : snap.by_key)
    if (std::optional<uint32_t> row = store_.Find(key))
      snap.charts_by_key.emplace(key, ChartsOf(store_, *row));
  snap.has_charts = true;
}

void RecommenderDaemon::RepublishWithCharts() {
  auto next = std::make_shared<RecommendationSnapshot>(*snapshot());
  if (next->has_charts) return;
  AddCharts(*next);
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_ = next;
  }
  changed_.notify_all();
}

std::shared_ptr<const RecommendationSnapshot> RecommenderDaemon::SnapshotWithCharts(
    std::chrono::milliseconds timeout) {
  charts_wanted_until_s_ = UnixNowSeconds() + kChartsWantedForS;
  std::unique_lock<std::mutex> lock(mu_);
  if (!snapshot_->has_charts) {
    charts_requested_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, timeout, [&] { return stop_.load() || snapshot_->has_charts; });
  }
  return snapshot_;
}

std::shared_ptr<const RecommendationSnapshot> RecommenderDaemon::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

std::shared_ptr<const RecommendationSnapshot> RecommenderDaemon::WaitForChange(
    uint64_t revision, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return stop_.load() || snapshot_->revision > revision; });
  return snapshot_;
}

HttpServerResponse RecommenderDaemon::HandleHttp(const std::string& path) {
  if (path == "/metrics") {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    const double saved = checkpoint_writer_->outcome().saved_at_s;
    checkpoint_age_->Set(saved > 0 ? std::max(0.0, UnixNowSeconds() - saved) : 0);
    source_through_->Set(source_through_s_.load());
    HttpServerResponse page = MetricsPage(*registry_);
    AppendWorkloadMetrics(page.body, *snapshot());
    return page;
  }
  if (path == "/healthz") {
    // Alive: the loop has run within three intervals plus the longest poll it may take.
    // (The loop also counts as running at every query of a long backfill.)
    const double limit =
        3 * config_.poll_interval_s + 60 +
        (config_.prometheus.max_retries + 1) *
            (config_.prometheus.request_timeout_s + config_.prometheus.backoff_max_s);
    const double age = UnixNowSeconds() - last_loop_s_.load();
    if (last_loop_s_.load() > 0 && age > limit)
      return {503, "text/plain; charset=utf-8",
              "poll loop stalled: last poll started " + FormatNumber(age) + " s ago\n"};
    return {200, "text/plain; charset=utf-8", "ok\n"};
  }
  if (path == "/readyz") {
    if (!ready_) return {503, "text/plain; charset=utf-8", "no successful poll yet\n"};
    if (const int failed = failed_polls_in_a_row_; failed >= config_.unready_after_failed_polls) {
      std::lock_guard<std::mutex> lock(last_error_mu_);
      return {503, "text/plain; charset=utf-8",
              "the last " + std::to_string(failed) + " polls failed: " + last_poll_error_ + "\n"};
    }
    return {200, "text/plain; charset=utf-8", "ready\n"};
  }
  // The ledger was opened at start (the daemon does not start without it).
  if (path == "/readyz/ledger") return {200, "text/plain; charset=utf-8", "ledger open\n"};
  return {404, "text/plain; charset=utf-8", "not found: " + path + "\n"};
}

}  // namespace gpuvpa::recommender
