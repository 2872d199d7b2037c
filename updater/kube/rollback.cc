// Rollback of GPU resource changes that went wrong (rollback.h).
#include "updater/kube/rollback.h"

#include <spdlog/spdlog.h>

#include "core/api/oom_bump.h"
#include "core/base/time_format.h"
#include "updater/kube/change_steps.h"
#include "updater/kube/gvpa.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

namespace {

// A rollback whose row a crash kept from the ledger: the signed rolled-back annotation says
// what was undone and when, and the row is written again (the ledger keeps one).
void ReconcileRollbackRow(ChangeContext& ctx, const std::string& ns, const std::string& kind,
                          const std::string& name, const json& annotations) {
  const auto it = annotations.find(kRolledBackAnnotation);
  if (it == annotations.end() || !it->is_string()) return;
  const json text = json::parse(it->get<std::string>(), nullptr, false);
  if (!text.is_object() || !text.contains("change")) return;  // an older build's
  auto unreadable = [&] {
    spdlog::warn(
        "{} {}/{}: annotation {} not readable or not signed; its rollback row is not "
        "written again",
        kind, ns, name, kRolledBackAnnotation);
  };
  Result<json> rolled_back = VerifiedAnnotation(text, ctx.change_key, kRolledBackAnnotation);
  if (!rolled_back.ok()) return unreadable();
  Result<AppliedChange> change =
      AppliedChange::FromSignedJson(rolled_back->value("change", json()), ctx.change_key);
  const json time = rolled_back->value("time", json());
  const json floor = rolled_back->value("vramFloorBytes", json());
  const json reason = rolled_back->value("reason", json());
  if (!change.ok() || !time.is_string() || !floor.is_number() || !reason.is_string())
    return unreadable();
  Result<double> at = ParseTimestamp(time.get<std::string>());
  if (!at.ok()) return unreadable();
  Append(ctx, {RollbackRow(ns, kind, name, *change, static_cast<int64_t>(*at),
                           reason.get<std::string>(), floor.get<double>())});
}

}  // namespace

Result<RollbackOutcome> CheckRollback(ChangeContext& ctx, UpdateMode mode, const std::string& ns,
                                      const std::string& kind, const std::string& name,
                                      const CurrentRecommendation& current_of, double window_s,
                                      double now_s, const json* listed) {
  RollbackOutcome out;
  const KubeResource* resource = kube::WorkloadResource(kind);
  if (resource == nullptr) return out;
  Result<json> fetched = json();
  if (listed == nullptr) fetched = ctx.client.Get(*resource, ns, name);
  if (!fetched.ok()) return fetched.status();
  const json* w = listed != nullptr ? listed : &*fetched;
  const json annotations = w->at("metadata").value("annotations", json::object());
  if (!annotations.contains(kAppliedChangeAnnotation)) {
    ReconcileRollbackRow(ctx, ns, kind, name, annotations);
    return out;
  }
  const json& recorded = annotations[kAppliedChangeAnnotation];
  const std::string recorded_text = recorded.is_string() ? recorded.get<std::string>() : "";
  const json parsed = json::parse(recorded_text, nullptr, false);
  Result<AppliedChange> change = AppliedChange::FromSignedJson(parsed, ctx.change_key);
  if (!change.ok())
    return Status(change.status().code(),
                  resource->Describe(ns, name) + ": " + change.status().message());
  // The change is on the workload: its rows are in the ledger (again, when a crash came
  // between the patch and the rows; the ledger keeps one of each).
  Append(ctx, AppliedRows(ns, kind, name, *change));
  out.change = *change;
  if (now_s - change->applied_at_s > window_s) return out;  // settled
  std::string reason;
  const v1::Recommendation* current = current_of ? current_of(change->container) : nullptr;
  if (current != nullptr && current->cuda_oom_count() > change->cuda_oom_count)
    reason = "the recommender recorded " +
             std::to_string(current->cuda_oom_count() - change->cuda_oom_count) +
             " CUDA OOM(s) since the change";
  if (reason.empty()) {
    KubeListOptions pods_of;
    pods_of.label_selector = LabelSelectorOf(*w);
    if (pods_of.label_selector.empty()) return out;
    Result<KubeList> pods = ctx.client.List(kube::kPods, ns, pods_of);
    if (!pods.ok()) return pods.status();
    for (const json& pod : pods->items) {
      Result<double> created = ParseTimestamp(
          pod["metadata"].value("creationTimestamp", std::string("1970-01-01T00:00:00Z")));
      // Pods from before the change say nothing about it (whole seconds on both sides).
      if (!created.ok() || *created + 1 < change->applied_at_s) continue;
      reason = FailureOf(pod, change->container);
      if (!reason.empty()) break;
    }
  }
  if (reason.empty()) return out;
  out.reason = reason;
  if (mode != UpdateMode::kAuto) {
    out.withheld = "mode " + std::string(UpdateModeName(mode)) + ": not rolled back";
    return out;
  }
  out.rolled_back = true;
  out.vram_floor_bytes = VramAfterCudaOom(change->to_vram_capacity_bytes);
  auto build = [&](const json& now_w) -> Result<PatchAttempt> {
    const json ann = now_w["metadata"].value("annotations", json::object());
    if (!ann.contains(kAppliedChangeAnnotation))
      return PatchAttempt{nullptr, "already rolled back"};
    // Only the change verified above is undone.
    if (ann[kAppliedChangeAnnotation] != recorded_text)
      return PatchAttempt{nullptr, "the applied-change annotation changed since it was read"};
    json containers = now_w["spec"]["template"]["spec"].value("containers", json::array());
    for (json& c : containers)
      if (c.is_object() && c.value("name", "") == change->container)
        c["resources"] = change->previous_resources;
    json patch = {
        {"metadata",
         {{"annotations",
           {{kAppliedChangeAnnotation, nullptr},
            {kRolledBackAnnotation, SignedAnnotation({{"id", change->id},
                                                      {"time", FormatTimestamp(now_s)},
                                                      {"reason", reason},
                                                      {"vramFloorBytes", out.vram_floor_bytes},
                                                      {"change", parsed}},
                                                     ctx.change_key)
                                        .dump()}}}}},
        {"spec", {{"template", {{"spec", {{"containers", containers}}}}}}}};
    json& selector = patch["spec"]["template"]["spec"]["nodeSelector"];
    if (change->previous_node_selector.is_object()) {
      selector = change->previous_node_selector;
      // Merge patch: keys the change added are removed.
      const json now_selector =
          now_w["spec"]["template"]["spec"].value("nodeSelector", json::object());
      for (auto it = now_selector.begin(); it != now_selector.end(); ++it)
        if (!selector.contains(it.key())) selector[it.key()] = nullptr;
    } else {
      selector = nullptr;
    }
    return PatchAttempt{patch, ""};
  };
  std::string nothing;
  Result<json> patched = ReadAndPatch(
      ctx, *resource, ns, name, /*dry_run_first=*/false, build, [](const json&) {}, &nothing);
  if (!patched.ok()) {
    Event(ctx, *w, "Warning", "GpuvpaRollbackFailed", reason + "; " + patched.status().message());
    return patched.status();
  }
  if (!nothing.empty()) {
    out.rolled_back = false;
    out.withheld = nothing;
    return out;
  }
  Append(ctx, {RollbackRow(ns, kind, name, *change, static_cast<int64_t>(now_s), reason,
                           out.vram_floor_bytes)});
  Event(ctx, *patched, "Warning", "GpuvpaRolledBack",
        "rolled back " + change->container + " " + change->to_allocation + " -> " +
            change->from_allocation + ": " + reason);
  return out;
}

}  // namespace gpuvpa::updater
