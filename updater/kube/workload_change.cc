// Applying GPU resource changes on Deployments and StatefulSets, and the applied-change
// annotation.
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
#include "updater/kube/change_steps.h"
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

}  // namespace

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

}  // namespace gpuvpa::updater
