// The admission rules every input applies (admission.h).
#include "recommender/input/admission.h"

#include "core/api/recommendation_contract.h"
#include "core/base/names.h"

namespace gpuvpa::recommender {

Result<AdmittedWorkload> AdmitWorkload(const WorkloadFields& f, const GpuModel& model,
                                       const GpuAllocation& allocation,
                                       std::string* refused_field) {
  auto refuse = [&](std::string field, Status s) {
    if (refused_field != nullptr) *refused_field = std::move(field);
    return s;
  };
  Result<AllocationUnit> unit = ResolveAllocationUnit(allocation, model);
  if (!unit.ok()) return refuse("allocation", unit.status());
  AdmittedWorkload out;
  out.unit = *unit;
  v1::WorkloadIdentity& id = out.identity;
  id.set_namespace_name(std::string(f.ns));
  id.set_owner_kind(std::string(f.kind));
  id.set_owner_name(std::string(f.name));
  id.set_container(std::string(f.container));
  id.set_gpu_model(model.name);
  id.set_allocation(allocation.ToString());
  id.set_cost_center(f.cost_center);
  if (Status s = ValidateIdentity(id); !s.ok())
    return refuse(s.message().substr(0, s.message().find(' ')), s);
  if (!f.pod.empty())
    if (Status s = ValidateObjectName("pod", f.pod); !s.ok()) return refuse("pod", s);
  return out;
}

}  // namespace gpuvpa::recommender
