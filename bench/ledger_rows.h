// The ledger rows the ledger benchmarks append: one shape for both backends' numbers.
#pragma once

#include <cstdint>
#include <string>

#include "core/cost/ledger.h"

namespace gpuvpa::bench {

// Row `n`: a third metered periods, the rest allocated usage; 200 namespaces, 5,000 workloads,
// 40 cost centers, two GPU models; each an hour's period.
inline LedgerAction SampleAction(int64_t n) {
  LedgerAction a;
  a.action_id = "bench-" + std::to_string(n);
  a.time_s = 1793577600 + n;
  a.kind = n % 3 == 0 ? ActionKind::kMeteredPeriod : ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "team-" + std::to_string(n % 200);
  a.workload = "workload-" + std::to_string(n % 5000);
  a.cost_center = "cc-" + std::to_string(n % 40);
  a.gpu_model = n % 2 ? "H100-80GB" : "A100-80GB";
  a.before = a.after = "nvidia.com/gpu=1";
  a.period_start_s = a.time_s;
  a.period_end_s = a.time_s + 3600;
  a.allocated_gpu_time = 3'600'000;
  a.allocated = 6'880'000;
  a.used_vram = 2'000'000;
  a.used_sm = 1'000'000;
  a.metered = n % 3 == 0 ? 500'000 : 0;
  a.reserved = n % 3 == 0 ? 6'880'000 : 0;
  a.evidence_json = R"({"p90_sm":0.31,"history_days":7})";
  return a;
}

}  // namespace gpuvpa::bench
