// Report grouping and the YAML change of an action.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/base/names.h"
#include "core/cost/cost_center.h"
#include "core/gpu/gpu_allocation.h"
#include "updater/report/report.h"
#include "updater/report/text_format.h"

namespace gpuvpa::updater {
namespace {

std::string KindLower(const v1::WorkloadIdentity& id) {
  std::string kind = id.owner_kind();
  std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
  return kind;
}

// A strategic-merge patch of the owner's pod template: the container's GPU resource and, for
// another GPU model, the node selector.
std::string ResourcePatch(const PlannedAction& a, const GpuAllocation& from,
                          const GpuAllocation& to) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  const GpuResourceRequest old_resource = ResourceRequestOf(from);
  const GpuResourceRequest new_resource = ResourceRequestOf(to);
  std::string y = "spec:\n  template:\n    spec:\n";
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

// A KEDA ScaledObject on gpuvpa's scaler, driven by the workload's known queue, metering each
// replica at the share of a GPU the plan priced.
std::string ScaledObject(const PlannedAction& a, const ScaleToZeroPolicy& s) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
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
         s.queue_address + "\n        listName: " + a.queue_list +
         "\n        listLength: \"5\"\n"
         "        activationListLength: \"0\"\n        costCenter: " +
         id.cost_center() + "\n        gpuModel: " + a.to_model + "\n        gpuPerReplica: \"" +
         FormatNumber(a.to_gpu_per_pod) + "\"\n";
}

std::string ResizeLabel(PlanKind kind, const PlannedAction& a) {
  switch (kind) {
    case PlanKind::kMigProfile:
      return "MIG instance " + a.to_allocation;
    case PlanKind::kSharedGpu:
      return "shared GPU " + a.to_allocation;
    case PlanKind::kGpuModel:
      return "GPU model " + a.to_model;
    case PlanKind::kFewerGpus:
      return "fewer GPUs: " + a.to_allocation;
    default:
      return "";
  }
}

}  // namespace

std::optional<WorkloadCharts> ChartsOf(const v1::Recommendation& recommendation) {
  if (!recommendation.has_charts()) return std::nullopt;
  const v1::WorkloadCharts& in = recommendation.charts();
  WorkloadCharts c;
  for (const auto& [from, to] : {std::pair{&in.vram(), &c.vram}, std::pair{&in.sm(), &c.sm}})
    for (const v1::ChartBar& b : *from) to->push_back({b.from(), b.to(), b.weight()});
  c.latest_hour = in.latest_hour();
  const int hours = std::min(in.hourly_samples_size(), in.hourly_active_size());
  for (int i = 0; i < hours; ++i)
    c.hourly_active_ratio.push_back(in.hourly_samples(i) == 0
                                        ? std::numeric_limits<double>::quiet_NaN()
                                        : static_cast<double>(in.hourly_active(i)) /
                                              in.hourly_samples(i));
  return c;
}

std::vector<std::optional<WorkloadCharts>> ChartsOf(const std::vector<PlannedAction>& actions) {
  std::vector<std::optional<WorkloadCharts>> charts;
  charts.reserve(actions.size());
  for (const PlannedAction& a : actions) charts.push_back(ChartsOf(a.evidence));
  return charts;
}

std::string ActionDisplayName(const PlannedAction& a) {
  const v1::WorkloadIdentity& id = a.evidence.identity();
  return id.namespace_name() + "/" + id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
}

std::string ActionLabel(const PlannedAction& a) {
  if (a.kind == PlanKind::kNoChange) return "no change";
  if (a.kind != PlanKind::kScaleToZero) return ResizeLabel(a.kind, a);
  const std::string resize = ResizeLabel(a.resize_kind, a);
  const std::string scale = a.queue_list.empty() ? "idle-timeout scale-down (no known queue)"
                                                 : "scale to zero on queue " + a.queue_list;
  return resize.empty() ? scale : resize + " + " + scale;
}

std::string IdleScaleDownAdvice(const PlannedAction& a) {
  if (a.kind != PlanKind::kScaleToZero || !a.queue_list.empty()) return "";
  return "No queue is known for " + a.evidence.identity().owner_name() +
         ", so no ScaledObject is proposed: scale it to zero after an idle timeout instead (for a "
         "notebook, the hub's idle culler; otherwise a job that scales the " +
         a.evidence.identity().owner_kind() +
         " to 0 after its idle hours). The planned cost counts its active hours only. If it "
         "consumes a Redis list, give it the policy workload annotation " +
         std::string(kQueueListAnnotation) + ": <list> and a KEDA ScaledObject is proposed.";
}

std::string UnallocatedWarning(const std::vector<PlannedAction>& actions) {
  size_t unallocated = 0;
  for (const PlannedAction& a : actions)
    unallocated += a.evidence.identity().cost_center() == kUnallocatedCostCenter;
  if (!TooManyWithoutCostCenter(unallocated, actions.size())) return "";
  return std::to_string(unallocated) + " of " + std::to_string(actions.size()) +
         " GPU workloads have no cost center and are charged to \"" +
         std::string(kUnallocatedCostCenter) +
         "\": kube-state-metrics exports a namespace label or workload annotation only when its "
         "--metric-labels-allowlist / --metric-annotations-allowlist name it (README, \"Install "
         "on a cluster\", step 3).";
}

std::string SmNeedText(const PlannedAction& a) {
  const std::string per = FormatFixed(a.sm_need_gpu_fraction * 100, 0) + " %";
  if (a.gpus_per_pod <= 1) return per + " of a GPU";
  return per + " of each of " + std::to_string(a.gpus_per_pod) + " GPUs (" +
         FormatFixed(a.sm_need_gpus_total(), 2) + " GPU in total)";
}

std::vector<ChangeDocument> ChangeDocuments(const PlannedAction& a,
                                            const ScaleToZeroPolicy& scale_to_zero) {
  std::vector<ChangeDocument> docs;
  if (!a.changes()) return docs;
  Result<GpuAllocation> from = ParseGpuAllocation(a.from_allocation);
  Result<GpuAllocation> to = ParseGpuAllocation(a.to_allocation);
  if (!from.ok() || !to.ok()) return docs;
  const v1::WorkloadIdentity& id = a.evidence.identity();
  if (a.to_allocation != a.from_allocation || a.to_model != a.from_model) {
    const std::string file = id.owner_name() + "-gpu.patch.yaml";
    docs.push_back({"patch the " + id.owner_kind() + " (a change: kubectl patch)", file,
                    "kubectl -n " + id.namespace_name() + " patch " + KindLower(id) + " " +
                        id.owner_name() + " --type strategic --patch-file " + file,
                    ResourcePatch(a, *from, *to)});
  }
  if (a.kind == PlanKind::kScaleToZero && !a.queue_list.empty()) {
    const std::string file = id.owner_name() + "-scaledobject.yaml";
    docs.push_back({"create the ScaledObject (a new object: kubectl apply)", file,
                    "kubectl apply -f " + file, ScaledObject(a, scale_to_zero)});
  }
  return docs;
}

std::string YamlChange(const PlannedAction& a, const ScaleToZeroPolicy& scale_to_zero) {
  std::string y;
  for (const ChangeDocument& d : ChangeDocuments(a, scale_to_zero))
    y += (y.empty() ? "" : "---\n") + ("# " + d.command + "\n") + d.yaml;
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
