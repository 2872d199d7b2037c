// What kube-state-metrics says about pods: who owns them, what GPU they requested, and the
// namespace labels and workload annotations that pick cost centers. Built from KSM series (from
// Prometheus or a scrape file); the latest batch wins, earlier knowledge is kept.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "core/cost/cost_center.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "core/metrics/labeled_series.h"

namespace gpuvpa::recommender {

struct KubeStateNames {
  std::string pod_owner = "kube_pod_owner";
  std::string replicaset_owner = "kube_replicaset_owner";
  std::string job_owner = "kube_job_owner";
  std::string requests = "kube_pod_container_resource_requests";
  std::string namespace_labels = "kube_namespace_labels";
  // kube_<kind>_annotations, exported only where KSM's annotation allow-list names the key.
  std::string annotations_suffix = "_annotations";
};

enum class OwnerSource { kKubeStateMetrics, kPodNameRule, kBarePod };

struct PodOwner {
  std::string kind;  // Deployment, StatefulSet, DaemonSet, Job, CronJob, ReplicaSet, Pod, ...
  std::string name;
  OwnerSource source = OwnerSource::kBarePod;
  double seen_s = 0;  // the newest KSM sample that said so
};

// Kubernetes label or annotation key as KSM spells it in a label name: every character outside
// [a-zA-Z0-9_] becomes '_' ("cost-center" → "cost_center").
std::string SanitizeKsmName(std::string_view key);

// The pod-template-hash rule, the last resort when KSM has no owner for a pod: "name-<hash>-<5>"
// is a Deployment's ReplicaSet pod, "name-<ordinal>" a StatefulSet's; otherwise the bare pod.
PodOwner OwnerFromPodName(std::string_view pod);

class KubeState {
 public:
  explicit KubeState(KubeStateNames names = {}) : names_(std::move(names)) {}

  // True when the series is a KSM series this class reads (and then it has read it).
  bool Add(const LabeledSeries& series);

  PodOwner ResolveOwner(std::string_view namespace_name, std::string_view pod) const;
  // The container's GPU request as an allocation (nvidia.com/gpu, nvidia.com/mig-*,
  // nvidia.com/gpu.shared with `shared_replicas` ways), or none.
  std::optional<GpuAllocation> Request(std::string_view namespace_name, std::string_view pod,
                                       std::string_view container, int shared_replicas,
                                       const GpuModel* model) const;
  // `rejected`: see ResolveCostCenter (an invalid value is charged to "unallocated").
  std::string CostCenter(const CostCenterRules& rules, std::string_view namespace_name,
                         const PodOwner& owner, std::string* rejected = nullptr) const;

  // Forgets what KSM last said before `time_s` (pods, ReplicaSets, Jobs and namespaces that
  // are gone), so a long-running daemon's knowledge stays bounded by the live cluster.
  size_t ForgetBefore(double time_s);

  size_t pods_known() const { return pod_owner_.size(); }

 private:
  using Key2 = std::pair<std::string, std::string>;
  using Key3 = std::tuple<std::string, std::string, std::string>;
  KubeStateNames names_;
  std::map<Key2, PodOwner> pod_owner_;         // (ns, pod)
  std::map<Key2, PodOwner> replicaset_owner_;  // (ns, replicaset)
  std::map<Key2, PodOwner> job_owner_;         // (ns, job)
  template <typename T>
  struct Seen {
    T values;
    double seen_s = 0;
  };
  std::map<Key3, Seen<std::map<std::string, double>>> requests_;  // (ns, pod, container)
  std::map<std::string, Seen<std::map<std::string, std::string>>, std::less<>> namespace_labels_;
  std::map<Key3, Seen<std::map<std::string, std::string>>> annotations_;  // (ns, kind, name)
};

}  // namespace gpuvpa::recommender
