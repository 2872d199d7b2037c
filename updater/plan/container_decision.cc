// Container policy, rollback floor and evidence hold, then the planner (container_decision.h).
#include "updater/plan/container_decision.h"

#include <algorithm>
#include <exception>

#include "core/base/names.h"
#include "core/gpu/gpu_allocation.h"

namespace gpuvpa::updater {
v1::Recommendation Constrain(const v1::Recommendation& r, const GvpaContainerPolicy* policy,
                             const std::optional<GvpaRollback>& rollback) {
  v1::Recommendation out = r;
  if (!out.has_target()) return out;
  double target = out.vram_target_bytes();
  if (policy != nullptr && policy->min_vram_bytes)
    target = std::max(target, *policy->min_vram_bytes);
  if (policy != nullptr && policy->max_vram_bytes)
    target = std::min(target, *policy->max_vram_bytes);
  if (rollback) target = std::max(target, rollback->vram_floor_bytes);
  out.set_vram_target_bytes(target);
  out.set_vram_upper_bytes(std::max(out.vram_upper_bytes(), target));
  return out;
}

std::string EvidenceMark(const v1::Recommendation& r) {
  return FormatFixed(r.history_s(), 0) + ":" + std::to_string(r.cuda_oom_count());
}

bool HasNewEvidence(const v1::Recommendation& r, const GvpaRollback& rollback, double hold_s) {
  const size_t colon = rollback.evidence.find(':');
  if (colon == std::string::npos) return true;
  double history_s = 0;
  unsigned long ooms = 0;
  try {
    history_s = std::stod(rollback.evidence.substr(0, colon));
    ooms = std::stoul(rollback.evidence.substr(colon + 1));
  } catch (const std::exception&) {
    return true;
  }
  return r.cuda_oom_count() > ooms || r.history_s() >= history_s + hold_s;
}

void Withhold(PlannedAction& a, const std::string& why) {
  a.kind = PlanKind::kNoChange;
  a.reason = why;
  a.auto_apply = false;
  a.to_allocation = a.from_allocation;
  a.to_model = a.from_model;
  a.monthly_after = a.monthly_before;
}

PlannedAction DecideContainer(const GpuCatalog& catalog, const PriceBook& prices,
                              const std::string& region, const UpdaterPolicy& policy,
                              const v1::Recommendation& r, const ContainerDecision& d) {
  const GvpaContainerPolicy* cp = d.container_policy;
  UpdaterPolicy container_policy = policy;
  if (cp != nullptr && !cp->allowed_gpu_models.empty())
    container_policy.allowed_gpu_models = cp->allowed_gpu_models;
  const Planner planner(catalog, prices, region, std::move(container_policy));
  PlannedAction a = planner.Plan(Constrain(r, cp, d.rollback));
  if (cp != nullptr && cp->opted_out && a.changes()) Withhold(a, "container policy mode Off");
  if (cp != nullptr && a.kind == PlanKind::kMigProfile && !cp->allowed_mig_profiles.empty()) {
    Result<GpuAllocation> to = ParseGpuAllocation(a.to_allocation);
    if (to.ok() && std::find(cp->allowed_mig_profiles.begin(), cp->allowed_mig_profiles.end(),
                             to->mig_profile) == cp->allowed_mig_profiles.end())
      Withhold(a, "MIG profile " + to->mig_profile + " is not in allowedMigProfiles");
  }
  if (d.rollback && a.changes() && !HasNewEvidence(r, *d.rollback, d.rollback_hold_s))
    Withhold(a, "rolled back at " + d.rollback->time + "; waiting for new evidence");
  return a;
}

}  // namespace gpuvpa::updater
