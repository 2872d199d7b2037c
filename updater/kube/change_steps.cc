// The steps a change and its rollback share (change_steps.h).
#include "updater/kube/change_steps.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/base/names.h"
#include "updater/kube/gvpa.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

namespace {

bool ContainsNoCase(std::string text, std::string needle) {
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(text);
  lower(needle);
  return text.find(needle) != std::string::npos;
}

}  // namespace

std::string LabelSelectorOf(const json& workload) {
  std::string selector;
  const json labels = workload.value("spec", json::object())
                          .value("selector", json::object())
                          .value("matchLabels", json::object());
  for (auto it = labels.begin(); it != labels.end(); ++it)
    if (it->is_string())
      selector += (selector.empty() ? "" : ",") + it.key() + "=" + it->get<std::string>();
  return selector;
}

// Why a pod shows the change failed, or "".
std::string FailureOf(const json& pod, const std::string& container) {
  const json statuses =
      pod.value("status", json::object()).value("containerStatuses", json::array());
  for (const json& s : statuses) {
    if (!s.is_object() || s.value("name", "") != container) continue;
    for (const char* which : {"state", "lastState"}) {
      const json st = s.value(which, json::object());
      const json terminated = st.value("terminated", json::object());
      const std::string message = terminated.value("message", "");
      if (ContainsNoCase(message, "CUDA out of memory") ||
          ContainsNoCase(message, "CUDA_ERROR_OUT_OF_MEMORY"))
        return "CUDA OOM in pod " + pod["metadata"].value("name", "") + ": " +
               SanitizeText(message, 200);
      if (terminated.value("reason", "") == "OOMKilled")
        return "container " + container + " of pod " + pod["metadata"].value("name", "") +
               " was OOMKilled";
      if (st.value("waiting", json::object()).value("reason", "") == "CrashLoopBackOff")
        return "pod " + pod["metadata"].value("name", "") + " is in CrashLoopBackOff";
    }
  }
  return "";
}

// The rows of a change made, built from what its signed annotation records: the rows written
// right after the patch and those a later cycle writes again (after a crash between the patch
// and the ledger) are the same rows, and the ledger keeps one of each.
std::vector<LedgerAction> AppliedRows(const std::string& ns, const std::string& kind,
                                      const std::string& name, const AppliedChange& c) {
  LedgerAction applied;
  applied.action_id = c.id;
  applied.time_s = static_cast<int64_t>(c.applied_at_s);
  applied.kind = ActionKind::kAppliedChange;
  applied.status = ActionStatus::kApplied;
  applied.namespace_name = ns;
  applied.workload = kind + "/" + name + "/" + c.container;
  applied.cost_center = c.cost_center;
  applied.gpu_model = c.to_model;
  applied.before = c.from_allocation;
  applied.after = c.to_allocation;
  applied.monthly_before = c.monthly_before;
  applied.monthly_after = c.monthly_after;
  applied.evidence_json = json{{"step", "applied"}, {"message", "patched"}}.dump();
  // The proposal is carried out: it no longer counts as savings still proposed.
  LedgerAction closed = applied;
  constexpr std::string_view kAppliedStep = ":applied";
  closed.action_id = c.id.ends_with(kAppliedStep)
                         ? c.id.substr(0, c.id.size() - kAppliedStep.size()) + ":proposal-applied"
                         : c.id + ":proposal-applied";
  closed.kind = ActionKind::kRecommendation;
  closed.evidence_json = json{{"step", "proposal-applied"}, {"message", "applied"}}.dump();
  return {applied, closed};
}

// The applied row reversed: before and after swapped, so realised savings are net of it.
LedgerAction RollbackRow(const std::string& ns, const std::string& kind, const std::string& name,
                         const AppliedChange& c, int64_t time_s, const std::string& reason,
                         double vram_floor_bytes) {
  LedgerAction row = AppliedRows(ns, kind, name, c).front();
  row.action_id = "rollback:" + c.id;
  row.time_s = time_s;
  row.kind = ActionKind::kRollback;
  row.gpu_model = c.from_model;
  std::swap(row.before, row.after);
  std::swap(row.monthly_before, row.monthly_after);
  row.evidence_json = json{{"reason", reason}, {"vram_floor_bytes", vram_floor_bytes}}.dump();
  return row;
}

void Append(ChangeContext& ctx, const std::vector<LedgerAction>& rows) {
  if (ctx.ledger == nullptr) return;
  Result<size_t> added = ctx.ledger->Append(rows);
  if (!added.ok()) spdlog::error("ledger: {}", added.status().message());
}

void Event(ChangeContext& ctx, const json& object, const std::string& type,
           const std::string& reason, const std::string& message) {
  if (Status s = RecordEvent(ctx.client, object, type, reason, message, ctx.identity); !s.ok())
    spdlog::warn("event {} not recorded: {}", reason, s.message());
}

Result<json> ReadAndPatch(ChangeContext& ctx, const KubeResource& r, const std::string& ns,
                          const std::string& name, bool dry_run_first,
                          const std::function<Result<PatchAttempt>(const json&)>& build,
                          const std::function<void(const json&)>& after_dry_run,
                          std::string* nothing_reason) {
  for (int attempt = 0; attempt <= ctx.max_conflict_retries; ++attempt) {
    Result<json> current = ctx.client.Get(r, ns, name);
    if (!current.ok()) return current.status();
    // The guard, immediately before each write (the dry run, the patch, every retry).
    auto refused = [&]() -> Result<bool> {
      Result<std::string> why = WriteRefusal(ctx, ns, *current);
      if (!why.ok()) return why.status();
      *nothing_reason = *why;
      return !why->empty();
    };
    Result<bool> no = refused();
    if (!no.ok()) return no.status();
    if (*no) return *current;
    Result<PatchAttempt> made = build(*current);
    if (!made.ok()) return made.status();
    if (made->patch.is_null()) {
      *nothing_reason = made->reason;
      return *current;
    }
    made->patch["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
    if (dry_run_first) {
      KubeWriteOptions dry;
      dry.dry_run = true;
      dry.field_manager = "gpuvpa-updater";
      Result<json> checked = ctx.client.MergePatch(r, ns, name, made->patch, dry);
      if (!checked.ok() && checked.status().code() == StatusCode::kAborted) continue;
      if (!checked.ok()) return checked.status();
      after_dry_run(*current);
      // Again between the dry run and the patch: labels may have changed meanwhile.
      no = refused();
      if (!no.ok()) return no.status();
      if (*no) return *current;
    }
    KubeWriteOptions real;
    real.field_manager = "gpuvpa-updater";
    Result<json> patched = ctx.client.MergePatch(r, ns, name, made->patch, real);
    if (!patched.ok() && patched.status().code() == StatusCode::kAborted) continue;
    return patched;
  }
  return Status(StatusCode::kAborted, "patch " + r.Describe(ns, name) +
                                          ": still conflicting after " +
                                          std::to_string(ctx.max_conflict_retries) + " re-reads");
}

}  // namespace gpuvpa::updater
