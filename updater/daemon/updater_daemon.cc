// The updater daemon's cycle, metrics and probes.
#include "updater/daemon/updater_daemon.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/str_split.h"
#include "core/api/recommendation_contract.h"
#include "core/api/recommendation_json.h"
#include "core/base/atomic_file.h"
#include "core/base/hmac.h"
#include "core/base/time_format.h"
#include "core/cost/ledger_rpc.h"
#include "core/gpu/gpu_catalog.h"
#include "core/net/metrics_page.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "updater/kube/gvpa.h"
#include "updater/kube/rollback.h"
#include "updater/plan/proposal_ledger.h"
#include "updater/report/report_files.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

namespace {

// How long the recommender's List may take.
constexpr std::chrono::seconds kRecommenderTimeout{10};
// The largest List answer taken. With charts a recommendation is about 1-3 KB (the demo fleet:
// up to 60 histogram bars and 168 hourly cells), so gRPC's 4 MiB default would refuse a fleet
// of a few thousand workloads; 256 MiB holds about 100,000.
constexpr int kMaxRecommendationsAnswerBytes = 256 << 20;

}  // namespace

Result<std::unique_ptr<UpdaterDaemon>> UpdaterDaemon::Create(UpdaterDaemonOptions options,
                                                             GpuvpaConfig config,
                                                             UpdaterPolicy policy,
                                                             std::unique_ptr<KubeClient> client) {
  if (options.recommender.address.empty() == options.recommendations_file.empty())
    return InvalidArgumentError(
        "give the recommender's address or a recommendations file, exactly one");
  if (options.lease.identity.empty())
    return InvalidArgumentError("the lease identity (--identity) is empty");
  if (!(options.interval_s > 0)) return InvalidArgumentError("--interval must be positive");
  if (Status s = policy.production.Validate(); !s.ok()) return s;
  if (!options.report_dir.empty()) {
    if (Result<ReportFormats> f = ParseFormats(options.report_formats); !f.ok()) return f.status();
    std::error_code ec;
    std::filesystem::create_directories(options.report_dir, ec);
    if (ec) return InvalidArgumentError("--report-dir " + options.report_dir + ": " + ec.message());
  }
  std::unique_ptr<UpdaterDaemon> d(new UpdaterDaemon(std::move(options), std::move(config),
                                                     std::move(policy), std::move(client)));
  if (!d->options_.change_key_file.empty()) {
    Result<std::string> key = ReadKeyFile(d->options_.change_key_file);
    if (!key.ok()) return key.status();
    d->change_key_ = std::move(key).value();
  } else {
    Result<std::string> key = RandomBytes(32);
    if (!key.ok()) return key.status();
    d->change_key_ = std::move(key).value();
    spdlog::warn(
        "no --change-key-file: this process signs its changes with a key of its own; changes "
        "made by other replicas or earlier runs will not be rolled back by it");
  }
  if (d->options_.ledger.given() && !d->options_.ledger_service.address.empty())
    return InvalidArgumentError(
        "--ledger (or --ledger-url-file) and --ledger-service: rows go to one of them");
  if (d->options_.ledger.given()) {
    Result<std::unique_ptr<Ledger>> ledger =
        OpenLedger(WithConfigDefaults(d->options_.ledger, d->config_));
    if (!ledger.ok()) return ledger.status();
    d->ledger_backend_ = std::move(ledger).value();
  } else if (!d->options_.ledger_service.address.empty()) {
    Result<std::unique_ptr<RemoteLedger>> remote =
        RemoteLedger::Connect(d->options_.ledger_service);
    if (!remote.ok()) return remote.status();
    d->ledger_backend_ = std::move(remote).value();
  }
  if (!d->options_.spool_path.empty() && d->ledger_backend_ == nullptr)
    return InvalidArgumentError("--spool " + d->options_.spool_path +
                                " without --ledger or --ledger-service");
  if (!d->options_.spool_path.empty()) {
    auto spooling =
        std::make_unique<SpoolingLedgerSink>(*d->ledger_backend_, d->options_.spool_path);
    d->spooling_ = spooling.get();
    d->ledger_ = std::move(spooling);
  } else
    d->ledger_ = std::move(d->ledger_backend_);
  return d;
}

UpdaterDaemon::UpdaterDaemon(UpdaterDaemonOptions options, GpuvpaConfig config,
                             UpdaterPolicy policy, std::unique_ptr<KubeClient> client)
    : options_(std::move(options)),
      config_(std::move(config)),
      policy_(std::move(policy)),
      client_(std::move(client)),
      elector_(*client_, options_.lease),
      gvpas_(*client_, kube::kGpuVerticalPodAutoscalers, ""),
      limiter_(options_.limits),
      registry_(std::make_shared<prometheus::Registry>()) {
  RegisterBuildInfo(*registry_, "updater");
  spool_metrics_ = std::make_unique<LedgerSpoolMetrics>(*registry_, "updater");
  cost_ = std::make_unique<CostCounters>(*registry_);
  auto gauge = [this](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_).Add({});
  };
  auto counter = [this](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_).Add({});
  };
  leader_ = gauge("gpuvpa_updater_leader", "1 while this replica holds the lease");
  last_cycle_ = gauge("gpuvpa_updater_last_cycle_timestamp_seconds",
                      "When the last complete cycle ran (Unix seconds)");
  cycles_ = counter("gpuvpa_updater_cycles_total", "Cycles run, as leader or standby");
  applied_ = counter("gpuvpa_updater_changes_applied_total", "Changes patched into workloads");
  rollbacks_ = counter("gpuvpa_updater_rollbacks_total", "Changes rolled back");
  failures_ = counter("gpuvpa_updater_failures_total",
                      "Steps that failed: API refusals, conflicts never resolved, invalid objects");
}

UpdaterDaemon::~UpdaterDaemon() = default;

Result<std::vector<v1::Recommendation>> UpdaterDaemon::LoadRecommendations() {
  if (!options_.recommendations_file.empty()) {
    Result<std::string> text = ReadWholeFile(options_.recommendations_file);
    if (!text.ok()) return text.status();
    Result<std::vector<v1::Recommendation>> parsed = ParseRecommendationsJson(*text);
    if (!parsed.ok())
      return InvalidArgumentError(options_.recommendations_file + ": " + parsed.status().message());
    return parsed;
  }
  // One address, or one per recommender shard (comma-separated): each shard answers for its own
  // workloads, and a cycle needs them all (one that does not answer fails the cycle, as a lone
  // recommender does).
  std::vector<v1::Recommendation> all;
  for (absl::string_view part :
       absl::StrSplit(options_.recommender.address, ',', absl::SkipEmpty())) {
    const std::string address(part);
    ClientChannelOptions recommender = options_.recommender;
    recommender.address = address;
    recommender.max_receive_bytes = kMaxRecommendationsAnswerBytes;
    Result<std::shared_ptr<grpc::Channel>> channel = MakeClientChannel(recommender);
    if (!channel.ok()) return channel.status();
    auto stub = v1::RecommendationService::NewStub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRecommenderTimeout);
    v1::ListRecommendationsRequest request;
    request.set_include_charts(!options_.report_dir.empty());  // the owner reports draw them
    v1::ListRecommendationsResponse response;
    const grpc::Status s = stub->List(&context, request, &response);
    if (!s.ok()) return UnavailableError("recommender " + address + ": " + s.error_message());
    // The same checks as a recommendations file: nothing impossible reaches the planner.
    for (int i = 0; i < response.recommendations_size(); ++i)
      if (Status v = ValidateRecommendation(response.recommendations(i),
                                            "recommendations[" + std::to_string(i) + "]");
          !v.ok())
        return InvalidArgumentError("recommender " + address + ": " + v.message());
    all.insert(all.end(), response.recommendations().begin(), response.recommendations().end());
  }
  return all;
}

Result<Labels> UpdaterDaemon::NamespaceLabels(const std::string& ns,
                                              std::map<std::string, Labels>& cache) {
  if (auto it = cache.find(ns); it != cache.end()) return it->second;
  Result<Labels> labels = ReadNamespaceLabels(*client_, ns);
  if (labels.ok()) cache[ns] = *labels;
  return labels;
}

Result<CycleSummary> UpdaterDaemon::RunCycle(double now_s, int watch_s) {
  try {
    return Cycle(now_s, watch_s);
  } catch (const nlohmann::json::exception& e) {
    // An API answer of an unexpected shape: this cycle stops, the next one starts over.
    return NotReady(
        InternalError(std::string("an API object of an unexpected shape: ") + e.what()));
  }
}

// What one cycle works with and what it found.
struct UpdaterDaemon::CycleRun {
  double now_s = 0;
  CycleSummary summary;
  // The recommendations by PolicyWorkloadKey (namespace/Kind/name).
  std::map<std::string, std::vector<const v1::Recommendation*>> by_workload;
  std::map<std::string, Labels> namespace_labels;
  std::vector<PlannedAction> actions;
  std::set<std::string> covered;  // workloads a GpuVerticalPodAutoscaler names
  // GpuVerticalPodAutoscalers per namespace, and the workloads of the namespace being handled
  // ("Kind/name"), listed once where it has many, instead of one read per object.
  std::map<std::string, size_t> gvpas_in;
  std::string listed_ns;
  std::map<std::string, json> listed;

  void Failed(const std::string& message) {
    ++summary.failed;
    summary.messages.push_back(message);
  }
};

ChangeContext UpdaterDaemon::Changes() {
  return {*client_,   ledger_.get(),           policy_,
          limiter_,   options_.lease.identity, options_.limits.max_conflict_retries,
          change_key_};
}

void UpdaterDaemon::SetReady(bool ready, const std::string& why) {
  std::lock_guard<std::mutex> lock(probe_mu_);
  ready_ = ready;
  not_ready_reason_ = why;
}

Status UpdaterDaemon::NotReady(Status s) {
  SetReady(false, s.message());
  failures_->Increment();
  return s;
}

Result<CycleSummary> UpdaterDaemon::Cycle(double now_s, int watch_s) {
  cycles_->Increment();
  Result<bool> leading = Renew(now_s);
  if (!leading.ok()) return NotReady(leading.status());
  CycleRun run;
  run.summary.leading = *leading;
  if (!*leading) {
    SetReady(true, "");  // a standby is ready: it takes over when the leader goes
    return run.summary;
  }
  Result<size_t> synced = gvpas_.Sync(watch_s);
  if (!synced.ok()) return NotReady(synced.status());
  // The watch window may have taken a while: act at the time it ended.
  run.now_s = watch_s > 0 ? UnixNowSeconds() : now_s;
  if (!Leading(run.now_s)) return run.summary;
  Result<std::vector<v1::Recommendation>> recs = LoadRecommendations();
  if (!recs.ok()) return NotReady(recs.status());
  for (const v1::Recommendation& r : *recs) {
    const v1::WorkloadIdentity& id = r.identity();
    run.by_workload[PolicyWorkloadKey(id.namespace_name(), id.owner_kind(), id.owner_name())]
        .push_back(&r);
  }
  // Workloads a GpuVerticalPodAutoscaler names, then the rest under the policy file's
  // namespace default.
  std::vector<std::string> keys;
  for (const auto& [key, object] : gvpas_.objects()) {
    keys.push_back(key);
    ++run.gvpas_in[key.substr(0, key.find('/'))];
  }
  for (const std::string& key : keys) HandleGvpa(run, key);
  for (const auto& [key, recs_of] : run.by_workload) {
    if (run.covered.contains(key) || recs_of.empty()) continue;
    const v1::WorkloadIdentity& id = recs_of.front()->identity();
    const PolicyDecision d =
        DecidePolicy(policy_, id.namespace_name(), id.owner_kind(), id.owner_name());
    if (d.mode == UpdateMode::kOff) continue;
    if (Status s = HandleWorkload(run, id.namespace_name(), id.owner_kind(), id.owner_name(),
                                  d.mode, nullptr, nullptr);
        !s.ok())
      run.Failed(key + ": " + s.message());
  }
  FinishCycle(run);
  return run.summary;
}

void UpdaterDaemon::HandleGvpa(CycleRun& run, const std::string& key) {
  // A GpuVerticalPodAutoscaler of an unexpected shape (its status, say) stops that object, not
  // the cycle.
  try {
    HandleGvpaObject(run, key, gvpas_.objects().at(key));
  } catch (const nlohmann::json::exception& e) {
    run.Failed(key + ": an object of an unexpected shape: " + e.what());
  }
}

void UpdaterDaemon::HandleGvpaObject(CycleRun& run, const std::string& key, const json& object) {
  Result<Gvpa> gvpa = ParseGvpa(object);
  if (!gvpa.ok()) return run.Failed(gvpa.status().message());
  ++run.summary.gvpas;
  run.covered.insert(PolicyWorkloadKey(gvpa->ns, gvpa->target_kind, gvpa->target_name));
  GvpaStatusInput status;
  status.now = FormatTimestamp(run.now_s);
  const json old_status = object.value("status", json::object());
  status.last_applied = old_status.value("lastApplied", json());
  status.applied = old_status.value("summary", json::object()).value("applied", "");
  if (status.applied == "-") status.applied.clear();
  if (Status s = HandleWorkload(run, gvpa->ns, gvpa->target_kind, gvpa->target_name, gvpa->mode,
                                &*gvpa, &status);
      !s.ok())
    return run.Failed(key + ": " + s.message());
  if (status.rollback) {
    status.applied.clear();
    status.last_applied = nullptr;
  }
  KubeWriteOptions write_status;
  write_status.subresource = "status";
  write_status.field_manager = "gpuvpa-updater";
  write_status.read_answer = false;  // the informer's watch brings the written object
  json new_status = BuildGvpaStatus(*gvpa, status);
  // A merge patch replaces lists whole; fields no longer set are removed.
  for (const char* key_name : {"lastApplied", "rollback"})
    if (!new_status.contains(key_name) && old_status.contains(key_name))
      new_status[key_name] = nullptr;
  // Written only when it changes (as the VPA recommender does): a steady fleet costs the API
  // server no writes, and its watchers no events.
  json patched = old_status;
  patched.merge_patch(new_status);
  if (patched == old_status) return;
  Result<json> written = client_->MergePatch(kube::kGpuVerticalPodAutoscalers, gvpa->ns, gvpa->name,
                                             {{"status", new_status}}, write_status);
  if (!written.ok()) run.Failed(key + ": status: " + written.status().message());
}

Status UpdaterDaemon::HandleWorkload(CycleRun& run, const std::string& ns, const std::string& kind,
                                     const std::string& name, UpdateMode mode, const Gvpa* gvpa,
                                     GvpaStatusInput* status) {
  // An API answer of an unexpected shape for one object ends that object's handling, not the
  // cycle: the other workloads are still handled.
  try {
    Result<Labels> labels = NamespaceLabels(ns, run.namespace_labels);
    if (!labels.ok()) return labels.status();
    UpdaterPolicy policy = policy_;
    policy.namespace_modes[ns] = mode;
    policy.namespace_labels[ns] = *labels;
    const auto it = run.by_workload.find(PolicyWorkloadKey(ns, kind, name));
    const std::vector<const v1::Recommendation*> recs_of =
        it == run.by_workload.end() ? std::vector<const v1::Recommendation*>{} : it->second;
    // A change that went wrong is undone before anything new is planned.
    ContainerDecision decision;
    decision.rollback = gvpa ? gvpa->rollback : std::nullopt;
    decision.rollback_hold_s = options_.rollback_hold_s;
    RollBackIfDue(run, policy, ns, kind, name, recs_of, decision.rollback,
                  ListedWorkload(run, ns, kind, name));
    if (status != nullptr) status->rollback = decision.rollback;
    for (const v1::Recommendation* r : recs_of) {
      decision.container_policy = gvpa ? gvpa->PolicyFor(r->identity().container()) : nullptr;
      PlannedAction a = DecideContainer(GpuCatalog::BuiltIn(), config_.prices, config_.region,
                                        policy, *r, decision);
      ++run.summary.planned;
      if (a.auto_apply) ApplyPlanned(run, a, *r, ns + "/" + name, status);
      if (status != nullptr) status->actions.push_back(a);
      run.actions.push_back(std::move(a));
    }
    return OkStatus();
  } catch (const nlohmann::json::exception& e) {
    return InternalError(kind + " " + ns + "/" + name +
                         ": an API object of an unexpected shape: " + e.what());
  }
}

void UpdaterDaemon::RollBackIfDue(CycleRun& run, const UpdaterPolicy& policy, const std::string& ns,
                                  const std::string& kind, const std::string& name,
                                  const std::vector<const v1::Recommendation*>& recs_of,
                                  std::optional<GvpaRollback>& rollback, const json* listed) {
  auto current_of = [&](const std::string& container) -> const v1::Recommendation* {
    for (const v1::Recommendation* r : recs_of)
      if (r->identity().container() == container) return r;
    return nullptr;
  };
  // The mode this workload is under (a production namespace is never Auto); the guard is
  // taken again at the write itself.
  const PolicyDecision decided = DecidePolicy(policy, ns, kind, name);
  ChangeContext ctx = Changes();
  Result<RollbackOutcome> rb = CheckRollback(ctx, decided.mode, ns, kind, name, current_of,
                                             options_.rollback_window_s, run.now_s, listed);
  const std::string who = ns + "/" + name;
  if (!rb.ok()) return run.Failed(who + ": rollback check: " + rb.status().message());
  if (!rb->withheld.empty()) {
    run.summary.messages.push_back(who + ": rollback due (" + rb->reason +
                                   ") but withheld: " + rb->withheld + " (" + decided.reason + ")");
    return;
  }
  if (!rb->rolled_back) return;
  ++run.summary.rolled_back;
  run.summary.messages.push_back(who + ": rolled back: " + rb->reason);
  GvpaRollback r;
  r.time = FormatTimestamp(run.now_s);
  r.reason = rb->reason;
  r.vram_floor_bytes = rb->vram_floor_bytes;
  const v1::Recommendation* evidence = current_of(rb->change.container);
  r.evidence = evidence ? EvidenceMark(*evidence) : "0:0";
  rollback = r;
}

const json* UpdaterDaemon::ListedWorkload(CycleRun& run, const std::string& ns,
                                          const std::string& kind, const std::string& name) {
  const KubeResource* resource = kube::WorkloadResource(kind);
  const auto many = run.gvpas_in.find(ns);
  if (resource == nullptr || many == run.gvpas_in.end() || many->second < kListNamespaceFrom)
    return nullptr;
  if (run.listed_ns != ns) {
    // The objects come namespace by namespace (the informer's order): one namespace's
    // workloads are held at a time. A list that fails leaves each object to its own read.
    run.listed_ns = ns;
    run.listed.clear();
    for (const KubeResource* r : {&kube::kDeployments, &kube::kStatefulSets}) {
      Result<KubeList> list = client_->List(*r, ns);
      if (!list.ok()) continue;
      for (json& o : list->items)
        if (o.contains("metadata") && o["metadata"].contains("name")) {
          std::string key = r->kind + "/" + o["metadata"]["name"].get<std::string>();
          run.listed[std::move(key)] = std::move(o);
        }
    }
  }
  const auto it = run.listed.find(kind + "/" + name);
  return it == run.listed.end() ? nullptr : &it->second;
}

void UpdaterDaemon::ApplyPlanned(CycleRun& run, const PlannedAction& a, const v1::Recommendation& r,
                                 const std::string& who, GvpaStatusInput* status) {
  // A change is made only while the lease is held (the renewal runs on its own thread).
  if (!Leading(std::max(run.now_s, UnixNowSeconds())))
    return run.Failed(who + ": not applied: the lease was lost");
  ChangeContext ctx = Changes();
  Result<ChangeOutcome> outcome = ApplyChange(ctx, a, run.now_s);
  if (!outcome.ok()) return run.Failed(who + ": apply failed: " + outcome.status().message());
  run.summary.messages.push_back(who + ": " + outcome->message);
  if (!outcome->applied) return;
  // The listed copy is older than this change: a later check reads the workload itself.
  run.listed.erase(a.evidence.identity().owner_kind() + "/" + a.evidence.identity().owner_name());
  ++run.summary.applied;
  if (status == nullptr) return;
  status->applied = a.to_allocation;
  status->last_applied = {{"time", FormatTimestamp(run.now_s)},
                          {"container", r.identity().container()},
                          {"from", a.from_allocation},
                          {"to", a.to_allocation},
                          {"evidence", EvidenceMark(r)}};
  status->rollback.reset();
}

void UpdaterDaemon::FinishCycle(CycleRun& run) {
  AccrueProposedSavings(run.actions, run.now_s);
  if (ledger_) {
    // One proposal row per workload-container and hour while the evidence holds.
    const int64_t hour = static_cast<int64_t>(std::floor(run.now_s / 3600)) * 3600;
    Result<size_t> added = ledger_->Append(ProposalRows(run.actions, hour));
    if (!added.ok()) run.summary.messages.push_back("ledger: " + added.status().message());
  }
  if (!options_.report_dir.empty() && run.now_s - last_report_s_ >= options_.report_interval_s) {
    ReportInput input;
    input.actions = run.actions;
    input.charts = ChartsOf(input.actions);
    input.generated_at_s = static_cast<int64_t>(run.now_s);
    input.as_of_s = static_cast<int64_t>(run.now_s);
    input.source = options_.recommendations_file.empty()
                       ? "recommender " + options_.recommender.address
                       : "recommendations " + options_.recommendations_file;
    input.scale_to_zero = policy_.scale_to_zero;
    Result<size_t> written =
        WriteReportSite(input, options_.report_dir, *ParseFormats(options_.report_formats));
    if (written.ok())
      last_report_s_ = run.now_s;
    else
      run.summary.messages.push_back("reports: " + written.status().message());
  }
  SetReady(true, "");
  applied_->Increment(static_cast<double>(run.summary.applied));
  rollbacks_->Increment(static_cast<double>(run.summary.rolled_back));
  failures_->Increment(static_cast<double>(run.summary.failed));
  last_cycle_->Set(run.now_s);
}

Result<bool> UpdaterDaemon::Renew(double now_s) {
  std::lock_guard<std::mutex> lock(elector_mu_);
  Result<bool> leading = elector_.TryAcquireOrRenew(now_s);
  leader_->Set(leading.ok() && *leading ? 1 : 0);
  return leading;
}

bool UpdaterDaemon::Leading(double now_s) {
  std::lock_guard<std::mutex> lock(elector_mu_);
  return elector_.leading(now_s);
}

void UpdaterDaemon::AccrueProposedSavings(const std::vector<PlannedAction>& actions, double now_s) {
  // For the time the plan stood: since the last cycle, at most two intervals (a replica that
  // just took the lead does not claim the time before).
  if (last_savings_accrual_s_ > 0) {
    const double elapsed =
        std::clamp(now_s - last_savings_accrual_s_, 0.0, 2 * options_.interval_s);
    for (const PlannedAction& a : actions)
      if (a.changes() && a.priced && a.monthly_savings() > 0)
        cost_->Add(a.evidence.identity().cost_center(), "proposed_savings",
                   static_cast<MicroUsd>(std::llround(static_cast<double>(a.monthly_savings()) *
                                                      elapsed / (kHoursPerMonth * 3600))));
  }
  last_savings_accrual_s_ = now_s;
}

void UpdaterDaemon::Run() {
  // The lease is renewed on its own thread, every third of its duration, so that a long cycle
  // (or the informer's watch window) never lets it lapse while this replica acts.
  std::thread renewer([this] {
    while (!stop_) {
      if (Result<bool> r = Renew(UnixNowSeconds()); !r.ok())
        spdlog::warn("lease: {}", r.status().message());
      std::unique_lock<std::mutex> lock(stop_mu_);
      stop_cv_.wait_for(lock, std::chrono::duration<double>(options_.lease.duration_s / 3),
                        [this] { return stop_.load(); });
    }
  });
  // After a failed cycle (the recommender or the API not there yet, as at a rollout where every
  // pod starts at once) the next comes sooner: 5 s, doubling, up to the interval.
  double retry_s = 5;
  while (!stop_) {
    const double started = UnixNowSeconds();
    // The leader's informer watch doubles as the wait between cycles; a standby only waits.
    const int watch_s =
        std::max(1, static_cast<int>(std::min(options_.interval_s, options_.lease.duration_s / 3)));
    Result<CycleSummary> s = RunCycle(started, Leading(started) ? watch_s : 0);
    double wait_s = options_.interval_s;
    if (!s.ok()) {
      spdlog::warn("cycle: {} (next try in {:.0f} s)", s.status().message(),
                   std::min(retry_s, options_.interval_s));
      wait_s = std::min(retry_s, options_.interval_s);
      retry_s = std::min(retry_s * 2, options_.interval_s);
    } else {
      retry_s = 5;
      for (const std::string& m : s->messages) spdlog::info("{}", m);
    }
    const double spent = UnixNowSeconds() - started;
    std::unique_lock<std::mutex> lock(stop_mu_);
    stop_cv_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, wait_s - spent)),
                      [this] { return stop_.load(); });
  }
  renewer.join();
  std::lock_guard<std::mutex> lock(elector_mu_);
  if (Status s = elector_.Release(); !s.ok()) spdlog::warn("lease release: {}", s.message());
}

void UpdaterDaemon::Stop() {
  stop_ = true;
  stop_cv_.notify_all();
}

HttpServerResponse UpdaterDaemon::HandleHttp(const std::string& path) const {
  if (path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
  if (path == "/readyz") {
    std::lock_guard<std::mutex> lock(probe_mu_);
    return ready_ ? HttpServerResponse{200, "text/plain; charset=utf-8", "ready\n"}
                  : HttpServerResponse{503, "text/plain; charset=utf-8",
                                       "not ready: " + not_ready_reason_ + "\n"};
  }
  if ((path == "/reports" || path.rfind("/reports/", 0) == 0) && !options_.report_dir.empty()) {
    // The owner reports the leader wrote (the folder survives container restarts).
    Result<ReportSiteFile> file = ReportSitePath(
        options_.report_dir, path.size() > 9 ? std::string_view(path).substr(9) : "");
    Result<std::string> body = file.ok() ? ReadWholeFile(file->path) : file.status();
    if (body.ok()) return {200, file->content_type, *std::move(body)};
    if (file.ok() && body.status().code() == StatusCode::kNotFound)
      return {404, "text/plain; charset=utf-8",
              "no report yet: the replica holding the Lease writes them at its next cycle (this "
              "replica: " +
                  options_.lease.identity + ")\n"};
    return {404, "text/plain; charset=utf-8", "not found\n"};
  }
  if (path != "/metrics") return {404, "text/plain; charset=utf-8", "not found\n"};
  if (spooling_ != nullptr)
    spool_metrics_->Sync(spooling_->spooled_rows(), spooling_->dead_lettered_rows());
  return MetricsPage(*registry_);
}

}  // namespace gpuvpa::updater
