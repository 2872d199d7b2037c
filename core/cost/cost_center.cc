// Cost-center resolution.
#include "core/cost/cost_center.h"

namespace gpuvpa {

std::string ResolveCostCenter(const CostCenterRules& rules, std::string_view namespace_name,
                              const StringMap& namespace_labels,
                              const StringMap& workload_annotations) {
  if (auto it = workload_annotations.find(rules.workload_annotation_key);
      it != workload_annotations.end() && !it->second.empty())
    return it->second;
  if (auto it = namespace_labels.find(rules.namespace_label_key);
      it != namespace_labels.end() && !it->second.empty())
    return it->second;
  if (auto it = rules.namespace_cost_centers.find(namespace_name);
      it != rules.namespace_cost_centers.end() && !it->second.empty())
    return it->second;
  return std::string(kUnallocatedCostCenter);
}

}  // namespace gpuvpa
