// Cost-center resolution: who pays for a workload's GPUs.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace gpuvpa {

// Every cost lands somewhere: what no rule claims is charged here, never dropped.
inline constexpr std::string_view kUnallocatedCostCenter = "unallocated";
// Above this share of GPU workloads without a cost center, gpuvpa warns (log, metric, report
// banner): the cost-center labels are probably not exported by kube-state-metrics.
inline constexpr double kUnallocatedWarningRatio = 0.10;
// Whether `unallocated` of `total` GPU workloads is above that share.
inline bool TooManyWithoutCostCenter(size_t unallocated, size_t total) {
  return static_cast<double>(unallocated) > kUnallocatedWarningRatio * static_cast<double>(total);
}

struct CostCenterRules {
  std::string namespace_label_key = "cost-center";
  std::string workload_annotation_key = "gpuvpa.io/cost-center";
  // For sources that carry no labels (traces): namespace -> cost center.
  std::map<std::string, std::string, std::less<>> namespace_cost_centers;
};

using StringMap = std::map<std::string, std::string, std::less<>>;

// The workload's annotation wins, then the namespace's label, then the configured namespace
// mapping, else "unallocated". Empty values count as absent. The value that wins must be valid
// label text (ValidateLabelText: UTF-8 without control characters, 1..253 bytes); one that is
// not is never used, and never drops the money either: the workload is charged to
// "unallocated" and `rejected` (when given) receives the value, quoted and cut for a message.
std::string ResolveCostCenter(const CostCenterRules& rules, std::string_view namespace_name,
                              const StringMap& namespace_labels = {},
                              const StringMap& workload_annotations = {},
                              std::string* rejected = nullptr);

}  // namespace gpuvpa
