// GpuVerticalPodAutoscaler spec parsing and status building.
#include "updater/kube/gvpa.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/names.h"
#include "core/cost/money.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

namespace {

Status FieldError(const std::string& where, const std::string& field, const json& value,
                  const std::string& why) {
  return InvalidArgumentError(where + ": " + field + ": " + value.dump() + " " + why);
}

json Condition(const json& previous, const std::string& type, bool status,
               const std::string& reason, const std::string& message, const std::string& now) {
  const std::string s = status ? "True" : "False";
  std::string since = now;
  for (const json& c : previous)
    if (c.is_object() && c.value("type", "") == type && c.value("status", "") == s)
      since = c.value("lastTransitionTime", now);
  return {{"type", type},
          {"status", s},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", since}};
}

}  // namespace

const GvpaContainerPolicy* Gvpa::PolicyFor(const std::string& container) const {
  const GvpaContainerPolicy* any = nullptr;
  for (const GvpaContainerPolicy& p : containers) {
    if (p.container == container) return &p;
    if (p.container == "*") any = &p;
  }
  return any;
}

Result<double> ParseQuantityBytes(const json& value) {
  if (value.is_number_integer() || value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < 0) return InvalidArgumentError("is not a non-negative quantity");
    return v;
  }
  if (!value.is_string()) return InvalidArgumentError("is not a quantity");
  const std::string text = value.get<std::string>();
  size_t used = 0;
  double number;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return InvalidArgumentError("is not a quantity");
  }
  static const std::pair<const char*, double> kSuffixes[] = {
      {"", 1},           {"k", 1e3},           {"M", 1e6},
      {"G", 1e9},        {"T", 1e12},          {"Ki", 1024.0},
      {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
  const std::string suffix = text.substr(used);
  for (const auto& [s, factor] : kSuffixes)
    if (suffix == s) {
      const double bytes = number * factor;
      if (!std::isfinite(bytes) || bytes < 0)
        return InvalidArgumentError("is not a non-negative quantity");
      return bytes;
    }
  return InvalidArgumentError("has an unknown suffix \"" + suffix +
                              "\" (use Ki, Mi, Gi, Ti, k, M, G, T)");
}

std::string FormatQuantityBytes(double bytes) {
  const double mib = std::ceil(std::max(0.0, bytes) / 1048576.0);
  if (std::fmod(mib, 1024.0) == 0 && mib > 0) return FormatFixed(mib / 1024.0, 0) + "Gi";
  return FormatFixed(mib, 0) + "Mi";
}

static Result<Gvpa> ParseGvpaOrThrow(const json& o);

Result<Gvpa> ParseGvpa(const json& o) {
  try {
    return ParseGvpaOrThrow(o);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type (the CRD's schema rules it out; a hostile peer need not).
    auto text_at = [&](const char* key) {
      const json* m = o.is_object() && o.contains("metadata") ? &o["metadata"] : nullptr;
      return m != nullptr && m->is_object() && m->contains(key) && (*m)[key].is_string()
                 ? (*m)[key].get<std::string>()
                 : std::string("?");
    };
    const std::string name = text_at("namespace") + "/" + text_at("name");
    return InvalidArgumentError("GpuVerticalPodAutoscaler " + name + ": " + e.what());
  }
}

static Result<Gvpa> ParseGvpaOrThrow(const json& o) {
  Gvpa g;
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object())
    return InvalidArgumentError("GpuVerticalPodAutoscaler: no metadata");
  const json& m = o["metadata"];
  g.ns = m.value("namespace", "");
  g.name = m.value("name", "");
  g.uid = m.value("uid", "");
  // Only a whole number is a generation (a float would not convert safely).
  const auto generation = m.find("generation");
  g.generation =
      generation != m.end() && generation->is_number_integer() ? generation->get<int64_t>() : 0;
  const std::string where = "GpuVerticalPodAutoscaler " + g.ns + "/" + g.name;
  const json spec = o.value("spec", json::object());
  const json ref = spec.value("targetRef", json::object());
  g.target_kind = ref.value("kind", "");
  g.target_name = ref.value("name", "");
  if (g.target_kind != "Deployment" && g.target_kind != "StatefulSet" && g.target_kind != "Job")
    return FieldError(where, "spec.targetRef.kind", ref.value("kind", json()),
                      "is not Deployment, StatefulSet or Job (never a bare Pod)");
  if (g.target_name.empty())
    return FieldError(where, "spec.targetRef.name", ref.value("name", json()), "is empty");
  const json mode = spec.value("updatePolicy", json::object()).value("updateMode", json("Report"));
  Result<UpdateMode> parsed = mode.is_string() ? ParseUpdateMode(mode.get<std::string>())
                                               : Result<UpdateMode>(InvalidArgumentError(""));
  if (!parsed.ok())
    return FieldError(where, "spec.updatePolicy.updateMode", mode, "is not Off, Report or Auto");
  g.mode = *parsed;
  const json policies =
      spec.value("resourcePolicy", json::object()).value("containerPolicies", json::array());
  for (size_t i = 0; i < policies.size(); ++i) {
    const json& p = policies[i];
    const std::string f = "spec.resourcePolicy.containerPolicies[" + std::to_string(i) + "]";
    GvpaContainerPolicy c;
    c.container = p.value("containerName", "");
    if (c.container.empty())
      return FieldError(where, f + ".containerName", p.value("containerName", json()), "is empty");
    c.opted_out = p.value("mode", "Auto") == "Off";
    for (const char* key : {"minVram", "maxVram"}) {
      if (!p.contains(key)) continue;
      Result<double> bytes = ParseQuantityBytes(p[key]);
      if (!bytes.ok()) return FieldError(where, f + "." + key, p[key], bytes.status().message());
      (std::string(key) == "minVram" ? c.min_vram_bytes : c.max_vram_bytes) = *bytes;
    }
    if (c.min_vram_bytes && c.max_vram_bytes && *c.min_vram_bytes > *c.max_vram_bytes)
      return FieldError(where, f + ".minVram", p["minVram"], "is above maxVram");
    c.allowed_mig_profiles = p.value("allowedMigProfiles", std::vector<std::string>{});
    c.allowed_gpu_models = p.value("allowedGpuModels", std::vector<std::string>{});
    g.containers.push_back(std::move(c));
  }
  const json status = o.value("status", json::object());
  if (status.contains("rollback") && status["rollback"].is_object()) {
    const json& r = status["rollback"];
    GvpaRollback rb;
    rb.time = r.value("time", "");
    rb.reason = r.value("reason", "");
    rb.evidence = r.value("evidence", "");
    if (r.contains("vramFloor")) {
      Result<double> floor = ParseQuantityBytes(r["vramFloor"]);
      if (!floor.ok())
        return FieldError(where, "status.rollback.vramFloor", r["vramFloor"],
                          floor.status().message());
      rb.vram_floor_bytes = *floor;
    }
    g.rollback = rb;
  }
  g.conditions = status.value("conditions", json::array());
  return g;
}

json BuildGvpaStatus(const Gvpa& gvpa, const GvpaStatusInput& in) {
  json containers = json::array();
  MicroUsd savings = 0;
  const PlannedAction* biggest = nullptr;
  double min_confidence = -1;
  bool any_target = false, low_confidence = false, needs_larger = false;
  std::string withheld;
  for (const PlannedAction& a : in.actions) {
    const v1::Recommendation& e = a.evidence;
    json c = {{"containerName", e.identity().container()},
              {"action", std::string(PlanKindName(a.kind))},
              {"from", a.from_allocation},
              {"to", a.to_allocation},
              {"gpuModel", a.to_model},
              {"confidence", FormatFixed(e.confidence(), 1)},
              {"applyMode", std::string(UpdateModeName(a.mode)) +
                                (a.production ? " (production namespace: never applied)" : "")},
              {"reason", a.reason}};
    if (e.has_target()) {
      any_target = true;
      c["vramTarget"] = FormatQuantityBytes(e.vram_target_bytes());
      c["vramLowerBound"] = FormatQuantityBytes(e.vram_lower_bytes());
      c["vramUpperBound"] = FormatQuantityBytes(e.vram_upper_bytes());
      c["smP90"] = FormatFixed(e.sm_p90_ratio(), 2);
    } else {
      withheld = e.withheld_reason();
    }
    if (a.changes()) c["risk"] = std::string(RiskName(a.risk));
    if (a.priced) {
      c["monthlyCostBefore"] = FormatUsd(a.monthly_before);
      c["monthlyCostAfter"] = FormatUsd(a.monthly_after);
      savings += a.monthly_savings();
    }
    if (a.changes() && (biggest == nullptr || a.monthly_savings() > biggest->monthly_savings()))
      biggest = &a;
    min_confidence = min_confidence < 0 ? e.confidence() : std::min(min_confidence, e.confidence());
    low_confidence = low_confidence || e.confidence() < 1.0;
    needs_larger = needs_larger || e.needs_larger_gpu();
    containers.push_back(std::move(c));
  }
  const json& prev = gvpa.conditions;
  json conditions = json::array();
  conditions.push_back(Condition(prev, "RecommendationProvided", any_target,
                                 any_target ? "TargetComputed" : "Withheld",
                                 any_target ? "a VRAM target exists for every container with "
                                              "enough history"
                                            : (withheld.empty() ? "no recommendation for the "
                                                                  "workload yet"
                                                                : withheld),
                                 in.now));
  conditions.push_back(Condition(
      prev, "LowConfidence", low_confidence, low_confidence ? "ShortHistory" : "EnoughHistory",
      "lowest confidence " + FormatFixed(std::max(0.0, min_confidence), 1), in.now));
  conditions.push_back(Condition(prev, "NeedsLargerGpu", needs_larger,
                                 needs_larger ? "VramAboveDevice" : "Fits",
                                 needs_larger ? "the VRAM p98 is above what the allocation holds"
                                              : "the VRAM target fits the allocation",
                                 in.now));
  conditions.push_back(Condition(
      prev, "Applied", !in.applied.empty(), in.applied.empty() ? "NotApplied" : "ChangeApplied",
      in.applied.empty() ? "no change applied by gpuvpa" : "applied " + in.applied, in.now));
  conditions.push_back(Condition(prev, "RolledBack", in.rollback.has_value(),
                                 in.rollback ? "CudaOomOrCrashLoop" : "NoRollback",
                                 in.rollback ? in.rollback->reason : "no rollback", in.now));
  json status = {{"observedGeneration", gvpa.generation},
                 {"summary",
                  {{"action", biggest ? std::string(PlanKindName(biggest->kind)) : "none"},
                   {"monthlySavings", FormatUsd(savings)},
                   {"confidence", FormatFixed(std::max(0.0, min_confidence), 1)},
                   {"applied", in.applied.empty() ? "-" : in.applied}}},
                 {"recommendation", {{"containerRecommendations", containers}}},
                 {"conditions", conditions}};
  if (!in.last_applied.is_null()) status["lastApplied"] = in.last_applied;
  if (in.rollback)
    status["rollback"] = {{"time", in.rollback->time},
                          {"reason", in.rollback->reason},
                          {"vramFloor", FormatQuantityBytes(in.rollback->vram_floor_bytes)},
                          {"evidence", in.rollback->evidence}};
  return status;
}

}  // namespace gpuvpa::updater
