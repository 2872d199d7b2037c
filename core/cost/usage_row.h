// The one builder of allocated_usage rows (GPU time a workload held over a period, priced),
// whoever measured it: the recommender's usage charges and the openb trace import.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/cost/ledger.h"
#include "core/cost/money.h"

namespace gpuvpa {

struct UsageRowFields {
  std::string action_id;  // the exactly-once key (usage/..., openb/...)
  std::string namespace_name;
  std::string workload;  // Kind/name/container, or the source's own name
  std::string cost_center;
  std::string gpu_model;
  std::string allocation;  // before and after: the allocation does not change
  int64_t period_start_s = 0;
  int64_t period_end_s = 0;  // also the row's time unless time_s is set
  std::optional<int64_t> time_s;
  MilliGpuSeconds allocated_gpu_time = 0;
  MicroUsd allocated = 0;
  // What was used, VRAM (the billable basis) and SM (advisory); none: the source knows the
  // allocation only, and the row adds to allocated cost but not to used cost or idle tax.
  struct Used {
    MicroUsd vram = 0;
    MicroUsd sm = 0;
  };
  std::optional<Used> used;
  std::string evidence_json = "{}";
};

LedgerAction AllocatedUsageRow(UsageRowFields fields);

}  // namespace gpuvpa
