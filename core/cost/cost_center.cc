// Cost-center resolution.
#include "core/cost/cost_center.h"

#include "core/base/names.h"

namespace gpuvpa {
namespace {

std::string Checked(const std::string& value, std::string* rejected) {
  if (ValidateLabelText("cost center", value).ok()) return value;
  if (rejected != nullptr) *rejected = QuoteForError(value);
  return std::string(kUnallocatedCostCenter);
}

}  // namespace

std::string ResolveCostCenter(const CostCenterRules& rules, std::string_view namespace_name,
                              const StringMap& namespace_labels,
                              const StringMap& workload_annotations, std::string* rejected) {
  if (rejected != nullptr) rejected->clear();
  if (auto it = workload_annotations.find(rules.workload_annotation_key);
      it != workload_annotations.end() && !it->second.empty())
    return Checked(it->second, rejected);
  if (auto it = namespace_labels.find(rules.namespace_label_key);
      it != namespace_labels.end() && !it->second.empty())
    return Checked(it->second, rejected);
  if (auto it = rules.namespace_cost_centers.find(namespace_name);
      it != rules.namespace_cost_centers.end() && !it->second.empty())
    return Checked(it->second, rejected);
  return std::string(kUnallocatedCostCenter);
}

}  // namespace gpuvpa
