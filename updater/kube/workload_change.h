// Applying a planned action to its owning Deployment or StatefulSet, and rolling it back.
//
// Apply (Auto mode only; the caller decides the mode): the namespace is read from the API and a
// production namespace (the policy's selector) is never patched, whatever any resource says;
// an opted-out workload, a Job (immutable pod template), a bare Pod and a scale-to-zero
// proposal (its queue must be named by the owner) are not patched either. A rate limit bounds
// changes per namespace and per cluster. Then: read the workload, server-side dry-run of the
// merge patch of its pod template (GPU resource names in limits and requests, the node selector
// for a GPU model change) carrying the read resourceVersion, then the patch itself; a 409
// re-reads and retries (bounded); a 403 fails with the API's message naming verb and resource.
// Every step (dry run, applied, failed) is a ledger row under the cost center with the monthly
// cost before and after, and a Kubernetes Event on the workload. The applied change and what
// it replaced are kept in an annotation on the workload, signed with the updater's key, so a
// restarted updater can roll back; and every cycle writes the change's ledger rows again from
// that annotation (and a rollback's from its signed rolled-back annotation), so a crash
// between a patch and its rows leaves no change unrecorded (the ledger keeps one of each).
//
// Rollback: within a window after a change, a new pod of the workload with a CUDA OOM (the
// container's termination message, an OOMKilled container), CrashLoopBackOff, or a CUDA OOM the
// recommender counted since the change, restores what was replaced, records a `rollback` row
// (before and after reversed: showback's realised savings are net of it) and an Event, and
// returns the VRAM floor for the status (the recommender's OOM rule over the failed capacity).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/base/status.h"
#include "core/cost/ledger.h"
#include "core/kube/kube_client.h"
#include "updater/plan/planner.h"
#include "updater/plan/rate_limit.h"

namespace gpuvpa::updater {

inline constexpr const char* kAppliedChangeAnnotation = "gpuvpa.io/applied-change";
inline constexpr const char* kRolledBackAnnotation = "gpuvpa.io/rolled-back";

// What the applied-change annotation holds.
struct AppliedChange {
  std::string id;
  std::string container;
  std::string from_allocation;
  std::string to_allocation;
  std::string from_model;
  std::string to_model;
  double applied_at_s = 0;
  double to_vram_capacity_bytes = 0;
  MicroUsd monthly_before = 0;
  MicroUsd monthly_after = 0;
  std::string cost_center;
  uint32_t cuda_oom_count = 0;            // the recommender's count when applied
  nlohmann::json previous_resources;      // the container's resources before
  nlohmann::json previous_node_selector;  // the pod template's, or null

  nlohmann::json ToJson() const;
  static Result<AppliedChange> FromJson(const nlohmann::json& j);
  // With a "signature" member: the HMAC-SHA-256 of the rest under `key`. Anyone with patch
  // rights can edit the annotation; a rollback restores only what verifies under the updater's
  // key, so values gpuvpa never wrote are never applied.
  nlohmann::json ToSignedJson(std::string_view key) const;
  static Result<AppliedChange> FromSignedJson(const nlohmann::json& j, std::string_view key);
};

struct ChangeContext {
  KubeClient& client;
  LedgerSink* ledger = nullptr;  // no rows when null
  const UpdaterPolicy& policy;   // its production selector and opt-out annotation guard writes
  ChangeRateLimiter& limiter;
  std::string identity;  // this updater replica, on Events
  int max_conflict_retries = 5;
  std::string change_key;  // signs and verifies the applied-change annotation
};

// The production guard at the moment of a write (updater/plan/production.h), from what the API
// says now: the updater's mode ceiling (--max-mode below Auto refuses every write), the namespace's
// labels read again, the workload's and its pod template's opt-out annotation. "" when `workload`
// in `ns` may be written, else why not. An unreadable namespace is an error (nothing is written).
Result<std::string> WriteRefusal(ChangeContext& ctx, const std::string& ns,
                                 const nlohmann::json& workload);

struct ChangeOutcome {
  bool applied = false;
  std::string message;  // what happened, or why nothing did
};

// Errors (the API refused, conflicts never resolved) are returned after their ledger row and
// Event are written; a refusal by policy is an outcome with applied = false.
Result<ChangeOutcome> ApplyChange(ChangeContext& ctx, const PlannedAction& action, double now_s);

// `value` with a "signature" member: the HMAC-SHA-256 of the rest under `key`; and the value
// without it when the signature verifies, else an error naming `annotation`.
nlohmann::json SignedAnnotation(nlohmann::json value, std::string_view key);
Result<nlohmann::json> VerifiedAnnotation(const nlohmann::json& value, std::string_view key,
                                          std::string_view annotation);

// The labels of namespace `ns` as the API has them now; a value of another JSON type is kept as
// kNonStringLabelValue (the guard reads it as production), labels that are not an object are
// an error.
Result<Labels> ReadNamespaceLabels(KubeClient& client, const std::string& ns);

// A Kubernetes Event on `object` (a Deployment, StatefulSet or GpuVerticalPodAutoscaler).
Status RecordEvent(KubeClient& client, const nlohmann::json& object, const std::string& type,
                   const std::string& reason, const std::string& message,
                   const std::string& identity);

}  // namespace gpuvpa::updater
