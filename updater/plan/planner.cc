// The planner: candidates, their prices, the pick, its risk.
#include "updater/plan/planner.h"

#include <algorithm>
#include <cmath>

#include "core/base/names.h"

namespace gpuvpa::updater {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
// CUDA and the driver keep part of a device's memory: a whole GPU of another model is assumed
// to offer this share of its nominal memory (MIG profiles carry their measured usable memory).
constexpr double kUsableShareOfWholeGpu = 0.95;
// Relative compute between GPU models is not in the catalog: a workload moves to another model
// only when it needs at most half of its current GPU's SMs.
constexpr double kMaxSmNeedForModelChange = 0.5;
// Risk: less room than this between the target and the pick's capacity is a medium risk.
constexpr double kMediumRiskHeadroom = 0.10;

std::string Gib(double bytes) { return FormatNumber(std::round(bytes / kGiB * 10) / 10) + " GiB"; }
std::string Pct(double ratio) { return FormatNumber(std::round(ratio * 1000) / 10) + " %"; }

bool Scalable(std::string_view owner_kind) {
  return owner_kind == "Deployment" || owner_kind == "StatefulSet";
}

// The Redis list the policy's workload annotations name for `id`'s owner; "" when none.
std::string KnownQueue(const UpdaterPolicy& policy, const v1::WorkloadIdentity& id) {
  const auto it = policy.workload_annotations.find(
      PolicyWorkloadKey(id.namespace_name(), id.owner_kind(), id.owner_name()));
  if (it == policy.workload_annotations.end()) return "";
  const auto queue = it->second.find(std::string(kQueueListAnnotation));
  return queue == it->second.end() ? "" : queue->second;
}

}  // namespace

std::string_view PlanKindName(PlanKind kind) {
  switch (kind) {
    case PlanKind::kNoChange:
      return "no_change";
    case PlanKind::kMigProfile:
      return "mig_profile";
    case PlanKind::kSharedGpu:
      return "shared_gpu";
    case PlanKind::kGpuModel:
      return "gpu_model";
    case PlanKind::kFewerGpus:
      return "fewer_gpus";
    case PlanKind::kScaleToZero:
      return "scale_to_zero";
  }
  return "no_change";
}

std::string_view RiskName(Risk risk) {
  switch (risk) {
    case Risk::kLow:
      return "low";
    case Risk::kMedium:
      return "medium";
    case Risk::kHigh:
      return "high";
  }
  return "high";
}

struct Planner::Candidate {
  PlanKind kind = PlanKind::kNoChange;
  GpuAllocation allocation;
  std::string model;
  double capacity_bytes = 0;
  double device_fraction = 1;
  int order = 0;  // preference on equal cost: MIG, share, model
};

Planner::Planner(const GpuCatalog& catalog, const PriceBook& prices, std::string region,
                 UpdaterPolicy policy)
    : catalog_(catalog), prices_(prices), region_(std::move(region)), policy_(std::move(policy)) {}

Result<MicroUsd> Planner::MonthlyCost(const GpuAllocation& allocation, const std::string& model,
                                      double pods) const {
  Result<double> hourly = prices_.AllocationHourPrice(allocation, model, region_);
  if (!hourly.ok()) return hourly.status();
  return UsdToMicro(*hourly * kHoursPerMonth * pods);
}

void Planner::AddMigCandidates(const PlannedAction& a, const GpuModel& model,
                               const GpuAllocation& from, std::vector<Candidate>& out) const {
  for (const MigProfile& p : model.mig_profiles) {
    const double fraction = p.SliceFraction();
    // A 7-slice instance costs a whole GPU and holds less: never the better pick.
    if (fraction >= 1 || p.usable_memory_bytes < a.vram_target_bytes ||
        p.compute_slices < a.sm_slices_needed)
      continue;
    if (from.kind == AllocationKind::kMigInstance && from.mig_profile == p.name) continue;
    Candidate c;
    c.kind = PlanKind::kMigProfile;
    c.allocation.kind = AllocationKind::kMigInstance;
    c.allocation.mig_profile = p.name;
    c.model = model.name;
    c.capacity_bytes = p.usable_memory_bytes;
    c.device_fraction = fraction;
    c.order = 0;
    out.push_back(std::move(c));
  }
}

void Planner::AddShareCandidates(const PlannedAction& a, const GpuModel& model,
                                 double from_fraction, std::vector<Candidate>& out) const {
  for (int replicas : policy_.shared_gpu_replicas) {
    const double share = 1.0 / replicas;
    if (share >= from_fraction || a.vram_target_bytes > model.memory_bytes * share ||
        a.sm_need_gpu_fraction > share)
      continue;
    Candidate c;
    c.kind = PlanKind::kSharedGpu;
    c.allocation.kind = AllocationKind::kSharedReplica;
    c.allocation.shared_replicas = replicas;
    c.model = model.name;
    c.capacity_bytes = model.memory_bytes * share;
    c.device_fraction = share;
    c.order = 1;
    out.push_back(std::move(c));
  }
}

void Planner::AddModelCandidates(const PlannedAction& a, const GpuModel& model, bool needs_larger,
                                 std::vector<Candidate>& out) const {
  for (const std::string& name : policy_.allowed_gpu_models) {
    Result<const GpuModel*> other = catalog_.FindModel(name);
    if (!other.ok() || (*other)->name == model.name) continue;
    const double usable = (*other)->memory_bytes * kUsableShareOfWholeGpu;
    if (usable < a.vram_target_bytes) continue;
    if (!needs_larger && a.sm_need_gpu_fraction > kMaxSmNeedForModelChange) continue;
    Candidate c;
    c.kind = PlanKind::kGpuModel;
    c.model = (*other)->name;
    c.capacity_bytes = usable;
    c.order = 2;
    out.push_back(std::move(c));
  }
}

bool Planner::QualifiesForScaleToZero(const v1::Recommendation& r) const {
  const ScaleToZeroPolicy& s = policy_.scale_to_zero;
  return Scalable(r.identity().owner_kind()) && r.active_duty_ratio() <= s.max_active_duty &&
         r.idle_hours_ratio() >= s.min_idle_hours_ratio &&
         r.longest_idle_gap_s() >= s.min_idle_gap_s;
}

std::vector<Planner::Candidate> Planner::CandidatesFor(
    const PlannedAction& a, const v1::Recommendation& r, const GpuModel& model,
    const GpuAllocation& from, const AllocationUnit& unit, std::string& why_none) const {
  std::vector<Candidate> candidates;
  const bool multi_gpu_pod = from.kind == AllocationKind::kWholeGpu && from.count > 1;
  if (r.vram_set_by_allocator()) {
    why_none =
        "VRAM set by allocator config: residency is the pool the server reserves at start "
        "(e.g. vLLM --gpu-memory-utilization), not what it needs; lower the pool to free "
        "memory, no VRAM action is proposed";
  } else if (multi_gpu_pod) {
    if (r.busy_devices() < static_cast<uint32_t>(from.count)) {
      Candidate c;
      c.kind = PlanKind::kFewerGpus;
      c.allocation = from;
      c.allocation.count = std::max<int>(1, static_cast<int>(r.busy_devices()));
      c.model = model.name;
      c.capacity_bytes = unit.vram_limit_bytes;
      candidates.push_back(std::move(c));
    } else {
      why_none = "multi-GPU pod keeps all " + std::to_string(from.count) +
                 " GPUs busy (NCCL across devices: never MIG or a share)";
    }
  } else if (from.count > 1) {
    why_none = "holds " + std::to_string(from.count) + " instances of one kind: not planned";
  } else {
    AddMigCandidates(a, model, from, candidates);
    if (model.mig_profiles.empty()) AddShareCandidates(a, model, unit.device_fraction, candidates);
    AddModelCandidates(a, model, r.needs_larger_gpu(), candidates);
    if (r.needs_larger_gpu() && candidates.empty())
      why_none = "needs a larger GPU: p98 above " + Gib(r.vram_limit_bytes()) +
                 " and no allowed GPU model or profile fits " + Gib(a.vram_target_bytes);
  }
  return candidates;
}

const Planner::Candidate* Planner::Cheapest(const PlannedAction& a, const v1::Recommendation& r,
                                            const std::vector<Candidate>& candidates,
                                            MicroUsd& best_cost) const {
  // Price every candidate; the cheapest that is cheaper than today (or, when the workload does
  // not fit today, the cheapest that fits) wins; on equal cost MIG beats a share beats a model.
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates) {
    Result<MicroUsd> cost = MonthlyCost(c.allocation, c.model, a.pods);
    if (!cost.ok()) continue;
    if (a.priced && *cost >= a.monthly_before && !r.needs_larger_gpu()) continue;
    if (best == nullptr || *cost < best_cost || (*cost == best_cost && c.order < best->order)) {
      best = &c;
      best_cost = *cost;
    }
  }
  return best;
}

void Planner::AssessRisk(PlannedAction& a, const v1::Recommendation& r) {
  a.headroom_ratio =
      a.to_vram_capacity_bytes > 0
          ? (a.to_vram_capacity_bytes - a.vram_target_bytes) / a.to_vram_capacity_bytes
          : 0;
  if (a.to_vram_capacity_bytes < r.vram_history_peak_bytes()) {
    a.risk = Risk::kHigh;
    a.risk_reason = "the largest peak seen (" + Gib(r.vram_history_peak_bytes()) +
                    ") would not fit " + Gib(a.to_vram_capacity_bytes);
  } else if (r.cuda_oom_count() > 0) {
    // It ran out of memory where it is: no smaller home is low risk, whatever the target says.
    a.risk = Risk::kHigh;
    a.risk_reason = std::to_string(r.cuda_oom_count()) + " CUDA out-of-memory event" +
                    (r.cuda_oom_count() == 1 ? "" : "s") +
                    " in the history: check what ran out before any change";
  } else if (a.headroom_ratio < kMediumRiskHeadroom) {
    a.risk = Risk::kMedium;
    a.risk_reason = "target within " + Pct(kMediumRiskHeadroom) + " of the capacity";
  } else if (a.kind == PlanKind::kScaleToZero) {
    a.risk = Risk::kMedium;
    a.risk_reason = "the first request after an idle period waits for a cold start";
  } else {
    a.risk_reason = Pct(a.headroom_ratio) + " of the capacity is left above the target";
  }
}

PlannedAction Planner::Plan(const v1::Recommendation& r) const {
  const v1::WorkloadIdentity& id = r.identity();
  PlannedAction a;
  a.evidence = r;
  a.from_allocation = a.to_allocation = id.allocation();
  a.from_model = a.to_model = id.gpu_model();
  a.pods = std::max(1.0, r.average_pods());
  a.vram_target_bytes = r.vram_target_bytes();
  const PolicyDecision decision =
      DecidePolicy(policy_, id.namespace_name(), id.owner_kind(), id.owner_name());
  a.mode = decision.mode;
  a.production = decision.production;
  auto keep = [&](std::string why) {
    a.kind = PlanKind::kNoChange;
    a.reason = std::move(why);
    a.to_allocation = a.from_allocation;
    a.to_model = a.from_model;
    a.monthly_after = a.monthly_before;
    a.auto_apply = false;
    return a;
  };
  if (decision.mode == UpdateMode::kOff) return keep(decision.reason);

  Result<const GpuModel*> model = catalog_.FindModel(id.gpu_model());
  if (!model.ok()) return keep(model.status().message());
  Result<GpuAllocation> from = ParseGpuAllocation(id.allocation());
  if (!from.ok()) return keep(from.status().message());
  Result<AllocationUnit> unit = ResolveAllocationUnit(*from, **model);
  if (!unit.ok()) return keep(unit.status().message());
  a.to_vram_capacity_bytes = unit->vram_limit_bytes;
  Result<MicroUsd> before = MonthlyCost(*from, (*model)->name, a.pods);
  a.priced = before.ok();
  if (a.priced) a.monthly_before = a.monthly_after = *before;

  // SM p90 is measured on what the container holds: a MIG instance's counters are its own.
  double compute_fraction = 1;
  if (from->kind == AllocationKind::kMigInstance)
    if (Result<const MigProfile*> p = (*model)->FindMigProfile(from->mig_profile); p.ok())
      compute_fraction = static_cast<double>((*p)->compute_slices) / kMigComputeSlices;
  a.sm_need_gpu_fraction = std::clamp(r.sm_p90_ratio() * compute_fraction, 0.0, 1.0);
  a.sm_slices_needed =
      std::max(1, static_cast<int>(std::ceil(a.sm_need_gpu_fraction * kMigComputeSlices - 1e-9)));
  a.gpus_per_pod = from->kind == AllocationKind::kWholeGpu ? std::max(1, from->count) : 1;
  a.to_gpu_per_pod = unit->device_fraction * std::max(1, from->count);
  a.queue_list = KnownQueue(policy_, id);

  if (!r.has_target()) return keep(r.withheld_reason());
  if (r.confidence() < policy_.min_confidence)
    return keep("confidence " + FormatNumber(std::round(r.confidence() * 100) / 100) +
                " is below the minimum " + FormatNumber(policy_.min_confidence));

  std::string why_none;
  const std::vector<Candidate> candidates = CandidatesFor(a, r, **model, *from, *unit, why_none);
  MicroUsd best_cost = 0;
  const Candidate* best = Cheapest(a, r, candidates, best_cost);
  if (!a.priced && best == nullptr && !candidates.empty())
    why_none = "no price for " + id.gpu_model() + ": " + before.status().message();

  if (best != nullptr) {
    a.kind = best->kind;
    a.to_allocation = best->allocation.ToString();
    a.to_model = best->model;
    a.to_vram_capacity_bytes = best->capacity_bytes;
    a.to_gpu_per_pod = best->device_fraction * std::max(1, best->allocation.count);
    a.monthly_after = best_cost;
  }
  if (QualifiesForScaleToZero(r)) {
    // Hours with any activity are paid whole: KEDA's cooldown keeps the pod for a while after
    // the last request, and a cold start precedes the first.
    GpuAllocation to = best != nullptr ? best->allocation : *from;
    const std::string to_model = best != nullptr ? best->model : (*model)->name;
    if (Result<MicroUsd> cost = MonthlyCost(to, to_model, a.pods * (1 - r.idle_hours_ratio()));
        cost.ok()) {
      a.resize_kind = a.kind;
      a.kind = PlanKind::kScaleToZero;
      a.monthly_after = *cost;
    }
  }
  if (a.kind == PlanKind::kNoChange)
    return keep(why_none.empty()
                    ? "nothing cheaper fits the VRAM target " + Gib(a.vram_target_bytes) +
                          " and SM need " + Pct(a.sm_need_gpu_fraction) + " of a GPU"
                    : why_none);

  // VPA's rule: act only outside [lower, upper] or on a change worth making.
  const double capacity_now = unit->vram_limit_bytes;
  const bool within = capacity_now >= r.vram_lower_bytes() && capacity_now <= r.vram_upper_bytes();
  if (within && a.priced &&
      static_cast<double>(a.monthly_savings()) <
          policy_.min_change_ratio * static_cast<double>(a.monthly_before))
    return keep("current capacity " + Gib(capacity_now) +
                " lies within [lower, upper] and the "
                "change saves less than " +
                Pct(policy_.min_change_ratio));

  AssessRisk(a, r);
  a.reason = std::string(PlanKindName(a.kind)) + ": " + a.from_allocation + " -> " +
             a.to_allocation + (a.to_model != a.from_model ? " on " + a.to_model : "");
  a.auto_apply = a.mode == UpdateMode::kAuto && !a.production;
  return a;
}

std::vector<PlannedAction> Planner::PlanAll(
    const std::vector<v1::Recommendation>& recommendations) const {
  std::vector<PlannedAction> out;
  out.reserve(recommendations.size());
  for (const v1::Recommendation& r : recommendations) {
    PlannedAction a = Plan(r);
    if (a.mode != UpdateMode::kOff) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace gpuvpa::updater
