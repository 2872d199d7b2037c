// gpuvpa-recommender's engine: polls Prometheus, ingests only new samples, recommends, charges
// the ledger exactly once, checkpoints periodically and on stop, and publishes an immutable
// snapshot that /metrics, the probes and the gRPC API read without blocking the poll.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/net/http_server.h"
#include "core/net/metrics_page.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/checkpoint/settle.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/input/dcgm_ingest.h"
#include "recommender/input/prometheus_source.h"
#include "recommender/logic/recommender.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

// What readers see: the recommendations of the last completed poll, by workload key.
struct RecommendationSnapshot {
  uint64_t revision = 0;
  std::map<std::string, v1::Recommendation> by_key;  // AssignWorkloadKey order
  // Each workload's charts, by the same key, in the snapshots published while a reader wants
  // them (a List with include_charts in the last kChartsWantedForS): for a large fleet they
  // cost more than the recommendations (bench/recommender_bench.cc BM_ChartsOfFleet). Not part
  // of the revision (the hourly activity moves every poll).
  bool has_charts = false;
  std::map<std::string, v1::WorkloadCharts> charts_by_key;
};

// How long after the last List that asked for charts the polls keep computing them (the
// updater asks at every cycle and writes its reports hourly).
inline constexpr double kChartsWantedForS = 2 * 3600;

// Where the last poll's time went (wall seconds).
struct PollTimings {
  double read_s = 0;  // Prometheus queries and ingest (they interleave, batch by batch)
  SettleTimings settle;
  double publish_s = 0;  // the snapshot (priced recommendations) and /metrics' series
  double total_s = 0;
};

class RecommenderDaemon {
 public:
  // Opens the ledger (reading its charge marks), restores the checkpoint (a refused file is
  // reported and the previous one used; neither: start empty), creates the source.
  static Result<std::unique_ptr<RecommenderDaemon>> Create(DaemonConfig config,
                                                           GpuvpaConfig gpuvpa);

  // One cycle: read (through, now - lag] from Prometheus, ingest, forget stale, recommend,
  // charge, publish; checkpoint when the interval has passed. A source error keeps the last
  // recommendations and what was read before the error; the next poll resumes there.
  Status PollOnce(double now_s);
  Status SaveCheckpointNow(double now_s);
  // Charges every pending usage to the ledger, then saves the checkpoint (at stop; the polls
  // charge every charge_interval).
  Status ChargeAndCheckpointNow(double now_s);
  // A poll only encodes its checkpoint; a thread of the daemon decodes it back and writes it
  // (CheckpointWriter). This waits for that save: its status.
  Status FlushCheckpoint();
  // Polls every poll_interval until Stop(), then saves the checkpoint.
  void Run();
  void Stop();

  std::shared_ptr<const RecommendationSnapshot> snapshot() const;
  // Waits until the snapshot's revision passes `revision` or the timeout or Stop().
  std::shared_ptr<const RecommendationSnapshot> WaitForChange(uint64_t revision,
                                                              std::chrono::milliseconds timeout);
  bool stopping() const { return stop_.load(); }
  // The snapshot with each workload's charts. When the current one has none (nobody asked
  // lately), the poll loop adds them to it between polls; this waits up to `timeout` for that
  // and otherwise returns the snapshot as it is (charts come with the next poll).
  std::shared_ptr<const RecommendationSnapshot> SnapshotWithCharts(
      std::chrono::milliseconds timeout);

  // /metrics (Prometheus text), /healthz (the loop is alive), /readyz (recommendations are
  // current: a poll succeeded and fewer than unready_after_failed_polls failed since),
  // /readyz/ledger (the ledger is open: the LedgerService can take rows whatever Prometheus
  // does; the probe of a recommender that owns the ledger).
  HttpServerResponse HandleHttp(const std::string& path);

  const DaemonConfig& config() const { return config_; }
  // The ledger this daemon writes (always open: Create needs the config's ledger path).
  Ledger& ledger() { return *ledger_; }
  const PrometheusSource& source() const { return *source_; }
  // The last PollOnce's (the poll loop's thread, or after it has stopped).
  const PollTimings& last_poll_timings() const { return last_timings_; }

 private:
  RecommenderDaemon(DaemonConfig config, GpuvpaConfig gpuvpa);
  // Settle (charging and checkpointing as asked), logging failures and counting the money.
  Settled SettleAndCount(double now_s, bool charge, bool checkpoint);
  // Logs the background saves that failed since the last call (the poll loop's thread).
  void ReportCheckpointSaves();
  void Publish(const std::vector<Recommendation>& recommendations);
  // Fills snap.charts_by_key from the store (the poll loop's thread only).
  void AddCharts(RecommendationSnapshot& snap) const;
  // The current snapshot again, with its charts (the poll loop's thread only).
  void RepublishWithCharts();
  void UpdateMetrics(const RecommendationSnapshot& snapshot);

  DaemonConfig config_;
  GpuvpaConfig gpuvpa_;
  FleetStore store_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<CheckpointWriter> checkpoint_writer_;
  uint64_t checkpoint_saves_reported_ = 0;  // the poll loop's thread
  std::unique_ptr<PrometheusSource> source_;
  std::unique_ptr<DcgmIngester> ingester_;
  Recommender recommender_;
  double last_checkpoint_s_ = 0;
  double last_charge_s_ = 0;  // 0: not yet (the first poll charges)
  PollTimings last_timings_;

  mutable std::mutex mu_;  // snapshot_, the condition and the loop's wake-up
  std::condition_variable changed_;
  std::shared_ptr<const RecommendationSnapshot> snapshot_;
  std::atomic<bool> stop_{false};
  bool charts_requested_ = false;  // under mu_: a List waits for charts
  std::atomic<double> charts_wanted_until_s_{0};
  std::atomic<bool> ready_{false};  // a poll has succeeded
  std::atomic<int> failed_polls_in_a_row_{0};
  mutable std::mutex last_error_mu_;
  std::string last_poll_error_;  // under last_error_mu_
  std::atomic<double> last_loop_s_{0};
  std::atomic<double> last_success_s_{0};

  // Metrics: the daemon's health and money (the per-workload series are written from the
  // snapshot at each scrape, recommender_daemon.cc).
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* samples_ingested_ = nullptr;
  prometheus::Counter* invalid_cost_center_ = nullptr;
  prometheus::Counter* query_errors_ = nullptr;
  prometheus::Counter* polls_ = nullptr;
  prometheus::Gauge* last_success_ = nullptr;
  prometheus::Gauge* checkpoint_age_ = nullptr;
  prometheus::Gauge* workloads_ = nullptr;
  prometheus::Gauge* source_through_ = nullptr;
  prometheus::Gauge* unallocated_ratio_ = nullptr;
  std::unique_ptr<CostCounters> cost_;
  bool warned_unallocated_ = false;
  std::atomic<double> source_through_s_{0};
  std::mutex metrics_mu_;
};

}  // namespace gpuvpa::recommender
