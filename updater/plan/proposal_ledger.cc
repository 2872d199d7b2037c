// Proposal rows.
#include "updater/plan/proposal_ledger.h"

#include <nlohmann/json.hpp>

#include "core/base/names.h"

namespace gpuvpa::updater {

std::vector<LedgerAction> ProposalRows(const std::vector<PlannedAction>& actions, int64_t as_of_s) {
  std::vector<LedgerAction> rows;
  rows.reserve(actions.size());
  for (const PlannedAction& a : actions) {
    const v1::Recommendation& r = a.evidence;
    if (!a.priced || !r.has_target() || a.mode == UpdateMode::kOff) continue;
    const v1::WorkloadIdentity& id = r.identity();
    LedgerAction row;
    row.action_id = EncodeIdParts({"recommendation", id.namespace_name(), id.owner_kind(),
                                   id.owner_name(), id.container(), PlanKindName(a.kind),
                                   a.to_allocation, a.to_model, std::to_string(as_of_s)});
    row.time_s = as_of_s;
    row.kind = ActionKind::kRecommendation;
    row.status = ActionStatus::kProposed;
    row.namespace_name = id.namespace_name();
    row.workload = id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
    row.cost_center = id.cost_center();
    row.gpu_model = id.gpu_model();
    row.before = a.from_allocation;
    row.after =
        a.to_model == a.from_model ? a.to_allocation : a.to_allocation + " on " + a.to_model;
    row.monthly_before = a.monthly_before;
    row.monthly_after = a.monthly_after;
    row.evidence_json = nlohmann::json{
        {"action", PlanKindName(a.kind)},
        {"reason", a.reason},
        {"mode", UpdateModeName(a.mode)},
        {"production", a.production},
        {"vram_target_bytes", a.vram_target_bytes},
        {"vram_lower_bytes", r.vram_lower_bytes()},
        {"vram_upper_bytes", r.vram_upper_bytes()},
        {"vram_history_peak_bytes", r.vram_history_peak_bytes()},
        {"to_vram_capacity_bytes", a.to_vram_capacity_bytes},
        {"sm_p90_ratio", r.sm_p90_ratio()},
        {"sm_need_gpu_fraction", a.sm_need_gpu_fraction},
        {"active_duty_ratio", r.active_duty_ratio()},
        {"idle_hours_ratio", r.idle_hours_ratio()},
        {"confidence", r.confidence()},
        {"history_s", r.history_s()},
        {"risk", RiskName(a.risk)},
        {"pods", a.pods}}.dump();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gpuvpa::updater
