// Apply and rollback of GPU resource changes on Deployments and StatefulSets.
#include "updater/kube/workload_change.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "core/api/oom_bump.h"
#include "core/base/hmac.h"
#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/gpu/gpu_allocation.h"
#include "updater/kube/gvpa.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

namespace {

// A cap on an Event's message (the API limits it to 1 KiB after its own truncation).
constexpr size_t kMaxEventMessage = 1000;
// A cap on a message in a ledger row's evidence (the ledger takes at most 64 KiB).
constexpr size_t kMaxEvidenceMessage = 4096;

std::string WorkloadName(const PlannedAction& a) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  return id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
}

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

bool ContainsNoCase(std::string text, std::string needle) {
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(text);
  lower(needle);
  return text.find(needle) != std::string::npos;
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

LedgerAction Row(const PlannedAction& a, const std::string& step, ActionKind kind,
                 ActionStatus status, double now_s, const std::string& message) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  LedgerAction row;
  row.action_id = "apply:" + id.namespace_name() + "/" + WorkloadName(a) + ":" + a.to_allocation +
                  ":" + a.to_model + ":" + EvidenceMark(a.evidence) + ":" + step;
  row.time_s = static_cast<int64_t>(now_s);
  row.kind = kind;
  row.status = status;
  row.namespace_name = id.namespace_name();
  row.workload = WorkloadName(a);
  row.cost_center = id.cost_center();
  row.gpu_model = a.to_model;
  row.before = a.from_allocation;
  row.after = a.to_allocation;
  row.monthly_before = a.monthly_before;
  row.monthly_after = a.monthly_after;
  // The message may quote the API (or a proxy in front of it): bounded, valid UTF-8.
  row.evidence_json =
      json{{"step", step}, {"message", SanitizeText(message, kMaxEvidenceMessage)}}.dump();
  return row;
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

// The container's resources with `from` replaced by `to` in limits and requests.
json ReplaceResource(const json& resources, const GpuResourceRequest& from,
                     const GpuResourceRequest& to) {
  json out = resources.is_object() ? resources : json::object();
  for (const char* section : {"limits", "requests"}) {
    json s = out.value(section, json::object());
    const bool had = s.contains(from.name);
    s.erase(from.name);
    // Extended resources must be in limits; requests, when given, must equal them.
    if (std::string(section) == "limits" || had) s[to.name] = to.quantity;
    out[section] = s;
  }
  return out;
}

// Re-reads the workload and sends the patch `build` makes of it, dry run first when asked;
// a 409 starts over from the read (at most `retries` times).
struct PatchAttempt {
  json patch;          // null: nothing to do
  std::string reason;  // why nothing, when patch is null
};
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

}  // namespace

std::string ChangeRateLimiter::Check(const std::string& ns, double now_s) {
  Expire(now_s);
  if (static_cast<int>(recent_.size()) >= limits_.per_cluster_per_hour)
    return "rate limit: " + std::to_string(limits_.per_cluster_per_hour) +
           " changes in the cluster in the last hour";
  const auto in_ns =
      std::count_if(recent_.begin(), recent_.end(), [&](const auto& r) { return r.second == ns; });
  if (in_ns >= limits_.per_namespace_per_hour)
    return "rate limit: " + std::to_string(limits_.per_namespace_per_hour) +
           " changes in namespace " + ns + " in the last hour";
  return "";
}

void ChangeRateLimiter::Record(const std::string& ns, double now_s) {
  recent_.emplace_back(now_s, ns);
}

void ChangeRateLimiter::Expire(double now_s) {
  while (!recent_.empty() && recent_.front().first <= now_s - 3600) recent_.pop_front();
}

json AppliedChange::ToJson() const {
  return {{"id", id},
          {"container", container},
          {"from", from_allocation},
          {"to", to_allocation},
          {"fromModel", from_model},
          {"toModel", to_model},
          {"appliedAt", applied_at_s},
          {"toVramCapacityBytes", to_vram_capacity_bytes},
          {"monthlyBeforeMicroUsd", monthly_before},
          {"monthlyAfterMicroUsd", monthly_after},
          {"costCenter", cost_center},
          {"cudaOomCount", cuda_oom_count},
          {"previousResources", previous_resources},
          {"previousNodeSelector", previous_node_selector}};
}

Result<AppliedChange> AppliedChange::FromJson(const json& j) {
  // The annotation is on an object anyone with patch rights can edit: every member is checked
  // for its type and range before it is used.
  auto bad = [](const std::string& member, const std::string& why) {
    return InvalidArgumentError(std::string("annotation ") + kAppliedChangeAnnotation + ": " +
                                member + " " + why);
  };
  if (!j.is_object()) return bad("(the value)", "is not a JSON object");
  AppliedChange c;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"id", &c.id},
                          {"container", &c.container},
                          {"from", &c.from_allocation},
                          {"to", &c.to_allocation},
                          {"fromModel", &c.from_model},
                          {"toModel", &c.to_model},
                          {"costCenter", &c.cost_center}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return bad(key, "is not a string");
    *out = it->get<std::string>();
  }
  for (auto [key, out] : {std::pair<const char*, double*>{"appliedAt", &c.applied_at_s},
                          {"toVramCapacityBytes", &c.to_vram_capacity_bytes}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
        it->get<double>() < 0)
      return bad(key, "is not a non-negative number");
    *out = it->get<double>();
  }
  for (auto [key, out] :
       {std::pair<const char*, MicroUsd*>{"monthlyBeforeMicroUsd", &c.monthly_before},
        {"monthlyAfterMicroUsd", &c.monthly_after}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
      return bad(key, "is not a non-negative whole number of micro-dollars");
    *out = it->get<int64_t>();
  }
  const auto ooms = j.find("cudaOomCount");
  if (ooms == j.end() || !ooms->is_number_unsigned() || ooms->get<uint64_t>() > UINT32_MAX)
    return bad("cudaOomCount", "is not a count");
  c.cuda_oom_count = static_cast<uint32_t>(ooms->get<uint64_t>());
  const auto resources = j.find("previousResources");
  const auto selector = j.find("previousNodeSelector");
  if (resources == j.end() || !resources->is_object())
    return bad("previousResources", "is not an object");
  if (selector == j.end() || !(selector->is_object() || selector->is_null()))
    return bad("previousNodeSelector", "is not an object or null");
  c.previous_resources = *resources;
  c.previous_node_selector = *selector;
  return c;
}

json SignedAnnotation(json value, std::string_view key) {
  value["signature"] = HmacSha256Hex(key, value.dump());
  return value;
}

Result<json> VerifiedAnnotation(const json& value, std::string_view key,
                                std::string_view annotation) {
  if (!value.is_object() || !value.contains("signature") || !value["signature"].is_string())
    return InvalidArgumentError("annotation " + std::string(annotation) +
                                ": no signature; not a change this updater recorded");
  json unsigned_part = value;
  unsigned_part.erase("signature");
  if (!HmacSha256Verifies(key, unsigned_part.dump(), value["signature"].get<std::string>()))
    return InvalidArgumentError("annotation " + std::string(annotation) +
                                ": the signature does not verify (edited, or written under "
                                "another key); its values are not restored");
  return unsigned_part;
}

json AppliedChange::ToSignedJson(std::string_view key) const {
  return SignedAnnotation(ToJson(), key);
}

Result<AppliedChange> AppliedChange::FromSignedJson(const json& j, std::string_view key) {
  Result<json> verified = VerifiedAnnotation(j, key, kAppliedChangeAnnotation);
  if (!verified.ok()) return verified.status();
  return FromJson(*verified);
}

Result<Labels> ReadNamespaceLabels(KubeClient& client, const std::string& ns) {
  Result<json> object = client.Get(kube::kNamespaces, "", ns);
  if (!object.ok()) return object.status();
  const json metadata = object->value("metadata", json::object());
  const json l = metadata.is_object() ? metadata.value("labels", json::object()) : json();
  if (!l.is_object())
    return InvalidArgumentError("namespace " + ns +
                                ": metadata.labels is not an object; nothing is written there");
  Labels labels;
  for (auto it = l.begin(); it != l.end(); ++it)
    labels[it.key()] = it->is_string() ? it->get<std::string>() : std::string(kNonStringLabelValue);
  return labels;
}

Result<std::string> WriteRefusal(ChangeContext& ctx, const std::string& ns, const json& workload) {
  if (ctx.policy.max_mode != UpdateMode::kAuto)
    return "the updater runs with --max-mode " + std::string(UpdateModeName(ctx.policy.max_mode)) +
           ": no workload is patched";
  Result<Labels> labels = ReadNamespaceLabels(ctx.client, ns);
  if (!labels.ok()) return labels.status();
  if (std::string why = ctx.policy.production.Why(ns, *labels); !why.empty())
    return "namespace " + ns + " is production (" + why + "): never patched";
  const std::string& key = ctx.policy.opt_out_annotation;
  const json metadata = workload.value("metadata", json::object());
  const json spec = workload.value("spec", json::object());
  const json template_metadata =
      spec.is_object() ? spec.value("template", json::object()).value("metadata", json::object())
                       : json::object();
  for (auto [where, m] : {std::pair<const char*, const json*>{"", &metadata},
                          {"pod template ", &template_metadata}}) {
    if (!m->is_object()) continue;
    const json annotations = m->value("annotations", json::object());
    if (!annotations.is_object() || !annotations.contains(key)) continue;
    const json& value = annotations[key];
    // An annotation of another JSON type than a string opts out (fail closed).
    if (!value.is_string() || OptOutValue(value.get<std::string>()))
      return workload.value("kind", std::string("workload")) + " " +
             metadata.value("name", std::string()) + " opted out (" + where + key + ")";
  }
  return std::string();
}

Status RecordEvent(KubeClient& client, const json& object, const std::string& type,
                   const std::string& reason, const std::string& message,
                   const std::string& identity) {
  const json m = object.value("metadata", json::object());
  const std::string ns = m.value("namespace", "");
  const std::string now = FormatTimestamp(UnixNowSeconds());
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", m.value("name", "object") + "."}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", object.value("apiVersion", "")},
        {"kind", object.value("kind", "")},
        {"name", m.value("name", "")},
        {"namespace", ns},
        {"uid", m.value("uid", "")},
        {"resourceVersion", m.value("resourceVersion", "")}}},
      {"reason", reason},
      {"message", SanitizeText(message, kMaxEventMessage)},
      {"type", type},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"source", {{"component", "gpuvpa-updater"}, {"host", identity}}},
      {"reportingComponent", "gpuvpa.io/updater"},
      {"reportingInstance", identity}};
  Result<json> created = client.Create(kube::kEvents, ns, event);
  return created.ok() ? OkStatus() : created.status();
}

Result<ChangeOutcome> ApplyChange(ChangeContext& ctx, const PlannedAction& a, double now_s) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  const std::string& ns = id.namespace_name();
  auto refuse = [](std::string why) { return ChangeOutcome{false, std::move(why)}; };
  if (!a.changes()) return refuse("no change planned");
  if (a.kind == PlanKind::kScaleToZero)
    return refuse(
        "scale-to-zero is proposed, never applied: its ScaledObject needs the queue "
        "the owner names");
  const KubeResource* resource = kube::WorkloadResource(id.owner_kind());
  if (resource == nullptr)
    return refuse(id.owner_kind() + " " + id.owner_name() +
                  " is not patched (only Deployments and StatefulSets; a Job's pod template is "
                  "immutable, a bare Pod is never changed)");
  // The cluster's word on the namespace and the workload, whatever the plan says, is read
  // again immediately before each write (ReadAndPatch: WriteRefusal).
  Result<GpuAllocation> from = ParseGpuAllocation(a.from_allocation);
  Result<GpuAllocation> to = ParseGpuAllocation(a.to_allocation);
  if (!from.ok()) return from.status();
  if (!to.ok()) return to.status();
  const GpuResourceRequest old_request = ResourceRequestOf(*from);
  const GpuResourceRequest new_request = ResourceRequestOf(*to);

  AppliedChange change;
  change.id =
      Row(a, "applied", ActionKind::kAppliedChange, ActionStatus::kApplied, now_s, "").action_id;
  change.container = id.container();
  change.from_allocation = a.from_allocation;
  change.to_allocation = a.to_allocation;
  change.from_model = a.from_model;
  change.to_model = a.to_model;
  change.applied_at_s = now_s;
  change.to_vram_capacity_bytes = a.to_vram_capacity_bytes;
  change.monthly_before = a.monthly_before;
  change.monthly_after = a.monthly_after;
  change.cost_center = id.cost_center();
  change.cuda_oom_count = a.evidence.cuda_oom_count();

  auto build = [&](const json& w) -> Result<PatchAttempt> {
    const json pod_spec = w.value("spec", json::object())
                              .value("template", json::object())
                              .value("spec", json::object());
    json containers = pod_spec.value("containers", json::array());
    auto c = std::find_if(containers.begin(), containers.end(), [&](const json& x) {
      return x.is_object() && x.value("name", "") == id.container();
    });
    if (c == containers.end())
      return Status(NotFoundError(resource->Describe(ns, id.owner_name()) + " has no container \"" +
                                  id.container() + "\""));
    const json resources = c->value("resources", json::object());
    const json limits = resources.value("limits", json::object());
    const json node_selector = pod_spec.value("nodeSelector", json());
    const bool model_change = a.to_model != a.from_model;
    if (limits.value(new_request.name, "") == new_request.quantity &&
        (old_request.name == new_request.name || !limits.contains(old_request.name)) &&
        (!model_change || (node_selector.is_object() && node_selector.value(kGpuProductLabel, "") ==
                                                            ProductLabelPrefix(a.to_model))))
      return PatchAttempt{nullptr, "already at " + a.to_allocation};
    if (std::string limited = ctx.limiter.Check(ns, now_s); !limited.empty())
      return PatchAttempt{nullptr, limited};
    change.previous_resources = resources;
    change.previous_node_selector = node_selector;
    (*c)["resources"] = ReplaceResource(resources, old_request, new_request);
    json patch = {{"metadata",
                   {{"annotations",
                     {{kAppliedChangeAnnotation, change.ToSignedJson(ctx.change_key).dump()}}}}},
                  {"spec", {{"template", {{"spec", {{"containers", containers}}}}}}}};
    if (model_change)
      patch["spec"]["template"]["spec"]["nodeSelector"] = {
          {kGpuProductLabel, ProductLabelPrefix(a.to_model)}};
    return PatchAttempt{patch, ""};
  };
  std::string nothing;
  json workload_seen;
  Result<json> patched = ReadAndPatch(
      ctx, *resource, ns, id.owner_name(), /*dry_run_first=*/true, build,
      [&](const json& w) {
        workload_seen = w;
        Append(ctx, {Row(a, "dry-run", ActionKind::kAppliedChange, ActionStatus::kProposed, now_s,
                         "server-side dry run accepted")});
        Event(ctx, w, "Normal", "GpuvpaDryRun",
              "dry run accepted: " + id.container() + " " + a.from_allocation + " -> " +
                  a.to_allocation);
      },
      &nothing);
  if (!patched.ok()) {
    const std::string message = patched.status().message();
    Append(ctx,
           {Row(a, "failed", ActionKind::kAppliedChange, ActionStatus::kFailed, now_s, message)});
    json object = workload_seen;
    if (object.is_null()) {
      object = {{"apiVersion", resource->api_version()},
                {"kind", resource->kind},
                {"metadata", {{"name", id.owner_name()}, {"namespace", ns}}}};
    }
    Event(ctx, object, "Warning", "GpuvpaApplyFailed", message);
    return patched.status();
  }
  if (!nothing.empty()) return refuse(nothing);
  ctx.limiter.Record(ns, now_s);
  Append(ctx, AppliedRows(ns, id.owner_kind(), id.owner_name(), change));
  const std::string message = id.container() + " " + a.from_allocation + " -> " + a.to_allocation +
                              (a.to_model != a.from_model ? " on " + a.to_model : "") +
                              ", monthly " + FormatUsd(a.monthly_before) + " -> " +
                              FormatUsd(a.monthly_after);
  Event(ctx, *patched, "Normal", "GpuvpaApplied", "applied: " + message);
  return ChangeOutcome{true, "applied: " + message};
}

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
                                      double now_s) {
  RollbackOutcome out;
  const KubeResource* resource = kube::WorkloadResource(kind);
  if (resource == nullptr) return out;
  Result<json> w = ctx.client.Get(*resource, ns, name);
  if (!w.ok()) return w.status();
  const json annotations = (*w)["metadata"].value("annotations", json::object());
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
