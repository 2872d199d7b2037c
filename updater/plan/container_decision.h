// The decision for one container, with no API server: a recommendation within its
// GpuVerticalPodAutoscaler's container policy and any rollback's floor, planned under the
// namespace policy, then withheld where the container policy or a recent rollback says so.
// kube/ reads these rules' inputs from the API and writes their outcome back; the rules are here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cost/price_book.h"
#include "core/gpu/gpu_catalog.h"
#include "proto/gpuvpa.pb.h"
#include "updater/plan/planner.h"
#include "updater/plan/policy.h"

namespace gpuvpa::updater {

struct GvpaContainerPolicy {
  std::string container;   // "*" for every container
  bool opted_out = false;  // mode: Off
  std::optional<double> min_vram_bytes;
  std::optional<double> max_vram_bytes;
  std::vector<std::string> allowed_mig_profiles;  // empty: any
  std::vector<std::string> allowed_gpu_models;    // empty: the policy's
};

// What a rollback left on the resource: the floor the VRAM target may not go below, and the
// evidence seen when it happened (no new change until there is more).
struct GvpaRollback {
  std::string time;
  std::string reason;
  double vram_floor_bytes = 0;
  std::string evidence;  // "history_s:oom_count" at the rollback
};

// Applies a container policy to a recommendation before planning: the VRAM target clamped to
// [minVram, maxVram] and raised to a rollback's floor.
v1::Recommendation Constrain(const v1::Recommendation& r, const GvpaContainerPolicy* policy,
                             const std::optional<GvpaRollback>& rollback);

// Evidence identity used to hold a rolled-back workload until there is more.
std::string EvidenceMark(const v1::Recommendation& r);
// True when `r` carries evidence the rollback had not seen: a CUDA OOM recorded since, or at
// least `hold_s` more history.
bool HasNewEvidence(const v1::Recommendation& r, const GvpaRollback& rollback, double hold_s);

// The action with its change withheld, saying why.
void Withhold(PlannedAction& action, const std::string& why);

struct ContainerDecision {
  const GvpaContainerPolicy* container_policy = nullptr;  // null: the object has none
  std::optional<GvpaRollback> rollback;                   // the workload's last rollback
  double rollback_hold_s = 0;                             // HasNewEvidence's hold
};

// The planned action for one container of a workload whose namespace policy is `policy`.
PlannedAction DecideContainer(const GpuCatalog& catalog, const PriceBook& prices,
                              const std::string& region, const UpdaterPolicy& policy,
                              const v1::Recommendation& recommendation,
                              const ContainerDecision& decision);

}  // namespace gpuvpa::updater
