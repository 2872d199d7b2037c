// The steps applying a change and rolling it back share: the guarded read-and-patch, the ledger
// rows of a change and of its rollback (rebuilt from the signed annotation, so a repeat is the
// same row), Events, and what a pod shows of a failed change.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cost/ledger.h"
#include "core/kube/kube_client.h"
#include "updater/kube/workload_change.h"

namespace gpuvpa::updater {

// The workload's spec.selector.matchLabels as a label selector.
std::string LabelSelectorOf(const nlohmann::json& workload);

// Why a pod shows the change failed (a CUDA OOM, OOMKilled, CrashLoopBackOff), or "".
std::string FailureOf(const nlohmann::json& pod, const std::string& container);

// The rows of a change made, built from what its signed annotation records: the rows written
// right after the patch and those a later cycle writes again (after a crash between the patch
// and the ledger) are the same rows, and the ledger keeps one of each.
std::vector<LedgerAction> AppliedRows(const std::string& ns, const std::string& kind,
                                      const std::string& name, const AppliedChange& change);

// The applied row reversed: before and after swapped, so realised savings are net of it.
LedgerAction RollbackRow(const std::string& ns, const std::string& kind, const std::string& name,
                         const AppliedChange& change, int64_t time_s, const std::string& reason,
                         double vram_floor_bytes);

// Rows to the ledger (none without one); a refusal is logged.
void Append(ChangeContext& ctx, const std::vector<LedgerAction>& rows);

// An Event on the object; one that cannot be recorded is logged.
void Event(ChangeContext& ctx, const nlohmann::json& object, const std::string& type,
           const std::string& reason, const std::string& message);

// Re-reads the workload and sends the patch `build` makes of it, dry run first when asked; the
// production guard is taken before each write; a 409 starts over from the read (at most
// ctx.max_conflict_retries times).
struct PatchAttempt {
  nlohmann::json patch;  // null: nothing to do
  std::string reason;    // why nothing, when patch is null
};
Result<nlohmann::json> ReadAndPatch(
    ChangeContext& ctx, const KubeResource& r, const std::string& ns, const std::string& name,
    bool dry_run_first, const std::function<Result<PatchAttempt>(const nlohmann::json&)>& build,
    const std::function<void(const nlohmann::json&)>& after_dry_run, std::string* nothing_reason);

}  // namespace gpuvpa::updater
