// gpuvpa-updater's loop. Each cycle, while this replica holds the Lease:
//   1. recommendations from the recommender's gRPC API (or a JSON file);
//   2. the GpuVerticalPodAutoscaler objects (an informer: list, then watch windows);
//   3. per object: the recommendations of its target, constrained by its container policies
//      and any rollback floor, planned under the policy with the object's update mode (a
//      production namespace, read from the API, is never Auto); failed recent changes rolled
//      back; Auto changes applied (dry run, patch, ledger, Events); the status written through
//      the status subresource;
//   4. workloads without an object follow the namespace default of the policy file;
//   5. proposals to the ledger (at most one row per workload-container per hour of unchanged
//      evidence) and, on their own interval, the owner reports to a directory.
// /metrics, /healthz and /readyz are served on the side.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cli/ledger_flags.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/cost/ledger_spool.h"
#include "core/kube/kube_client.h"
#include "core/net/grpc_client.h"
#include "core/net/http_server.h"
#include "core/net/metrics_page.h"
#include "updater/kube/gvpa.h"
#include "updater/kube/leader_election.h"
#include "updater/kube/workload_change.h"
#include "updater/plan/planner.h"

namespace gpuvpa::updater {

struct UpdaterDaemonOptions {
  // Recommendations: one of these.
  ClientChannelOptions recommender;  // gpuvpa.v1.RecommendationService (TLS / mTLS from files)
  std::string recommendations_file;
  // Ledger rows: a ledger (SQLite file or PostgreSQL, written directly), or the ledger's owner
  // over gRPC; neither: no rows.
  LedgerFlags ledger;
  ClientChannelOptions ledger_service;
  // Rows the ledger (service) refuses wait here, durably, and are moved once it answers.
  std::string spool_path;
  std::string report_dir;  // "" : no reports
  std::string report_formats = "html,md,json,csv";
  double report_interval_s = 3600;
  double interval_s = 60;
  LeaseOptions lease;
  double rollback_window_s = 3600;
  // A rolled-back workload waits for this much more history (or a new OOM) before a new change.
  double rollback_hold_s = 24 * 3600;
  ChangeLimits limits;
  // The key (a mounted Secret, at least 32 bytes) that signs the applied-change annotation so
  // that a rollback restores only what an updater wrote. Every replica needs the same key; with
  // none, each process makes its own and refuses to roll back other processes' changes.
  std::string change_key_file;
};

struct CycleSummary {
  bool leading = false;
  size_t gvpas = 0;
  size_t planned = 0;
  size_t applied = 0;
  size_t rolled_back = 0;
  size_t failed = 0;
  std::vector<std::string> messages;  // one line per notable step
};

class UpdaterDaemon {
 public:
  static Result<std::unique_ptr<UpdaterDaemon>> Create(UpdaterDaemonOptions options,
                                                       GpuvpaConfig config, UpdaterPolicy policy,
                                                       std::unique_ptr<KubeClient> client);
  ~UpdaterDaemon();

  // One cycle at `now_s`; the informer's watch window waits up to `watch_s` (0: list only).
  Result<CycleSummary> RunCycle(double now_s, int watch_s = 0);
  // Cycles until Stop(); releases the lease on the way out.
  void Run();
  void Stop();

  HttpServerResponse HandleHttp(const std::string& path) const;

 private:
  UpdaterDaemon(UpdaterDaemonOptions options, GpuvpaConfig config, UpdaterPolicy policy,
                std::unique_ptr<KubeClient> client);
  Result<CycleSummary> Cycle(double now_s, int watch_s);
  // The lease, under elector_mu_ (the renewal thread and the cycle share the elector).
  Result<bool> Renew(double now_s);
  bool Leading(double now_s);
  // gpuvpa_cost_usd_total{kind="proposed_savings"} for the time since the last cycle.
  void AccrueProposedSavings(const std::vector<PlannedAction>& actions, double now_s);
  // The steps of Cycle.
  struct CycleRun;
  ChangeContext Changes();
  void SetReady(bool ready, const std::string& why);
  // A failed cycle: not ready (saying why), one failure counted; returns `s`.
  Status NotReady(Status s);
  void HandleGvpa(CycleRun& run, const std::string& key);
  void HandleGvpaObject(CycleRun& run, const std::string& key, const nlohmann::json& object);
  // Rolls back, plans and applies one workload's containers (status: its GVPA's, or null).
  Status HandleWorkload(CycleRun& run, const std::string& ns, const std::string& kind,
                        const std::string& name, UpdateMode mode, const Gvpa* gvpa,
                        GvpaStatusInput* status);
  void RollBackIfDue(CycleRun& run, const UpdaterPolicy& policy, const std::string& ns,
                     const std::string& kind, const std::string& name,
                     const std::vector<const v1::Recommendation*>& recs_of,
                     std::optional<GvpaRollback>& rollback, const nlohmann::json* listed);
  // The workload from one list of its namespace's Deployments and StatefulSets per cycle, where
  // the namespace has kListNamespaceFrom GVPAs or more; null: read it on its own.
  const nlohmann::json* ListedWorkload(CycleRun& run, const std::string& ns,
                                       const std::string& kind, const std::string& name);
  static constexpr size_t kListNamespaceFrom = 16;
  void ApplyPlanned(CycleRun& run, const PlannedAction& action, const v1::Recommendation& r,
                    const std::string& who, GvpaStatusInput* status);
  void FinishCycle(CycleRun& run);
  Result<std::vector<v1::Recommendation>> LoadRecommendations();
  Result<Labels> NamespaceLabels(const std::string& ns, std::map<std::string, Labels>& cache);

  UpdaterDaemonOptions options_;
  GpuvpaConfig config_;
  UpdaterPolicy policy_;
  std::string change_key_;
  std::unique_ptr<KubeClient> client_;
  std::mutex elector_mu_;
  LeaderElector elector_;
  KubeInformer gvpas_;
  ChangeRateLimiter limiter_;
  std::unique_ptr<LedgerSink> ledger_backend_;  // the file or the service
  std::unique_ptr<LedgerSink> ledger_;          // what rows are appended to (maybe spooling)
  SpoolingLedgerSink* spooling_ = nullptr;      // ledger_ when it spools
  std::unique_ptr<LedgerSpoolMetrics> spool_metrics_;
  std::unique_ptr<CostCounters> cost_;
  double last_savings_accrual_s_ = 0;  // proposed savings accrue from here to the next cycle
  double last_report_s_ = -1e18;

  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  // Read by the probes from the HTTP thread.
  mutable std::mutex probe_mu_;
  bool ready_ = false;
  std::string not_ready_reason_ = "no cycle yet";
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* leader_ = nullptr;
  prometheus::Counter* cycles_ = nullptr;
  prometheus::Counter* applied_ = nullptr;
  prometheus::Counter* rollbacks_ = nullptr;
  prometheus::Counter* failures_ = nullptr;
  prometheus::Gauge* last_cycle_ = nullptr;
};

}  // namespace gpuvpa::updater
