// Report grouping and the YAML change of an action.
#include <algorithm>
#include <map>

#include "core/gpu/gpu_allocation.h"
#include "updater/report/report.h"

namespace gpuvpa::updater {
namespace {

std::string ResourcePatch(const PlannedAction& a, const GpuAllocation& from,
                          const GpuAllocation& to) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  const GpuResourceRequest old_resource = ResourceRequestOf(from);
  const GpuResourceRequest new_resource = ResourceRequestOf(to);
  std::string kind_lower = id.owner_kind();
  std::transform(kind_lower.begin(), kind_lower.end(), kind_lower.begin(), ::tolower);
  std::string y = "# kubectl -n " + id.namespace_name() + " patch " + kind_lower + " " +
                  id.owner_name() + " --type strategic --patch-file change.yaml\n";
  y += "spec:\n  template:\n    spec:\n";
  if (a.to_model != a.from_model)
    y += "      nodeSelector:\n        # GPU feature discovery's product label; check your nodes' "
         "exact value\n        nvidia.com/gpu.product: " +
         ProductLabelPrefix(a.to_model) + "\n";
  y += "      containers:\n        - name: " + id.container() + "\n          resources:\n";
  for (const char* section : {"limits", "requests"}) {
    y += "            " + std::string(section) + ":\n";
    if (old_resource.name != new_resource.name)
      y += "              " + old_resource.name + ": null\n";
    // Kubernetes requires extended resources in limits; requests default to them.
    if (std::string_view(section) == "limits" || old_resource.name == new_resource.name)
      y += "              " + new_resource.name + ": \"" + new_resource.quantity + "\"\n";
  }
  return y;
}

std::string ScaledObject(const PlannedAction& a, const GpuAllocation& to,
                         const ScaleToZeroPolicy& s) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  const int gpus = to.kind == AllocationKind::kWholeGpu ? to.count : 1;
  return "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: " + id.owner_name() +
         "\n  namespace: " + id.namespace_name() +
         "\nspec:\n  scaleTargetRef: {kind: " + id.owner_kind() + ", name: " + id.owner_name() +
         "}\n  minReplicaCount: 0\n  maxReplicaCount: " +
         std::to_string(std::max(1, static_cast<int>(std::ceil(a.pods)))) +
         "\n  cooldownPeriod: 300\n  fallback: {failureThreshold: 3, replicas: 1}\n  triggers:\n"
         "    - type: external-push\n      authenticationRef: {name: gpuvpa-scaler-mtls}\n"
         "      metadata:\n        scalerAddress: " +
         s.scaler_address +
         "\n        enableTLS: \"true\"\n        source: redis\n        address: " +
         s.queue_address + "\n        listName: " + id.owner_name() +
         "  # the queue this workload consumes\n        listLength: \"5\"\n"
         "        activationListLength: \"0\"\n        costCenter: " +
         id.cost_center() + "\n        gpuModel: " + a.to_model + "\n        gpuPerReplica: \"" +
         std::to_string(gpus) + "\"\n";
}

}  // namespace

std::string ActionDisplayName(const PlannedAction& a) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  return id.namespace_name() + "/" + id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
}

std::string YamlChange(const PlannedAction& a, const ScaleToZeroPolicy& scale_to_zero) {
  if (!a.changes()) return "";
  Result<GpuAllocation> from = ParseGpuAllocation(a.from_allocation);
  Result<GpuAllocation> to = ParseGpuAllocation(a.to_allocation);
  if (!from.ok() || !to.ok()) return "";
  std::string y;
  if (a.to_allocation != a.from_allocation || a.to_model != a.from_model)
    y = ResourcePatch(a, *from, *to);
  if (a.kind == PlanKind::kScaleToZero) {
    if (!y.empty()) y += "---\n";
    y += ScaledObject(a, *to, scale_to_zero);
  }
  return y;
}

Result<std::vector<CostCenterGroup>> GroupByCostCenter(const std::vector<PlannedAction>& actions) {
  std::map<std::string, std::map<std::string, std::vector<size_t>>> tree;
  for (size_t i = 0; i < actions.size(); ++i) {
    const v1::WorkloadIdentity& id = actions[i].evidence.identity();
    tree[id.cost_center()][id.namespace_name()].push_back(i);
  }
  std::vector<CostCenterGroup> out;
  for (auto& [cost_center, namespaces] : tree) {
    CostCenterGroup g;
    g.name = cost_center;
    for (auto& [ns, indices] : namespaces) {
      std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
        return actions[a].monthly_savings() > actions[b].monthly_savings();
      });
      for (size_t i : indices) {
        const PlannedAction& a = actions[i];
        if (a.evidence.priced()) {
          Result<MicroUsd> idle = UsdToMicro(std::max(0.0, a.evidence.idle_tax_usd_vram()));
          if (!idle.ok()) return idle.status();
          if (Status s = CheckedAdd(g.idle_tax, *idle, "idle tax"); !s.ok()) return s;
        }
        if (!a.priced) continue;
        if (Status s = CheckedAdd(g.monthly_before, a.monthly_before, "monthly cost before");
            !s.ok())
          return s;
        if (Status s = CheckedAdd(g.monthly_after, a.monthly_after, "monthly cost after"); !s.ok())
          return s;
        g.changes += a.changes();
      }
      g.namespaces.push_back({ns, indices});
    }
    out.push_back(std::move(g));
  }
  return out;
}

Result<CostCenterGroup> TotalOf(const std::vector<CostCenterGroup>& groups) {
  CostCenterGroup total;
  for (const CostCenterGroup& g : groups) {
    for (Status s : {CheckedAdd(total.monthly_before, g.monthly_before, "monthly cost before"),
                     CheckedAdd(total.monthly_after, g.monthly_after, "monthly cost after"),
                     CheckedAdd(total.idle_tax, g.idle_tax, "idle tax")})
      if (!s.ok()) return s;
    total.changes += g.changes;
  }
  return total;
}

}  // namespace gpuvpa::updater
