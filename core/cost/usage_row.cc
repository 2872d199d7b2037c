// allocated_usage rows (usage_row.h).
#include "core/cost/usage_row.h"

#include <utility>

namespace gpuvpa {

LedgerAction AllocatedUsageRow(UsageRowFields f) {
  LedgerAction a;
  a.action_id = std::move(f.action_id);
  a.time_s = f.time_s.value_or(f.period_end_s);
  a.kind = ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = std::move(f.namespace_name);
  a.workload = std::move(f.workload);
  a.cost_center = std::move(f.cost_center);
  a.gpu_model = std::move(f.gpu_model);
  a.before = f.allocation;
  a.after = std::move(f.allocation);
  a.period_start_s = f.period_start_s;
  a.period_end_s = f.period_end_s;
  a.allocated_gpu_time = f.allocated_gpu_time;
  a.allocated = f.allocated;
  a.usage_measured = f.used.has_value();
  if (f.used) {
    a.used_vram = f.used->vram;
    a.used_sm = f.used->sm;
  }
  a.evidence_json = std::move(f.evidence_json);
  return a;
}

}  // namespace gpuvpa
