// Import of the Alibaba GPU cluster trace (openb, v2023) into the ledger as allocated usage:
// real production allocations, 43.6 % of them fractional, for cost attribution at scale.
//
// Rules (one allocated_usage row per pod that was scheduled and holds GPU):
// - GPU time = num_gpu x gpu_milli milli-GPU x (deletion_time - scheduled_time) seconds: a
//   fractional claim counts by its fraction. Pods never scheduled hold nothing and are skipped.
// - GPU model = gpu_spec when the pod names one, else "unspecified", priced at the inventory's
//   blended rate: sum over nodes of GPUs x price(model) in micro-dollars / sum of GPUs. Every
//   model in the node list must have a price (the trace's in-house "G2"/"G3" need one from the
//   config).
// - The trace has no namespaces: the pod's QoS class stands in ("openb-ls", "openb-be", ...),
//   mapped to cost centers by the config's cost_centers.namespaces; unmapped is "unallocated".
// - The trace has no usage, so rows are marked usage-unmeasured (no used cost, no idle tax).
// - Costs are rounded per pod to the nearest micro-dollar.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

inline constexpr std::string_view kUnspecifiedGpuModel = "unspecified";

struct OpenbImport {
  std::vector<LedgerAction> actions;
  size_t pods = 0;
  size_t skipped_no_gpu = 0;
  size_t skipped_unscheduled = 0;
  double blended_usd_per_gpu_hour = 0;
};

Result<OpenbImport> BuildOpenbImport(std::string_view pods_csv, std::string_view nodes_csv,
                                     const GpuvpaConfig& config);

}  // namespace gpuvpa
