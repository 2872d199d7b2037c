// kube-state-metrics joins: owner chains, GPU requests, namespace labels, annotations.
#include "recommender/input/kube_state.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gpuvpa::recommender {
namespace {

// Kubernetes' random suffixes and pod-template hashes use this alphabet (no vowels, no 0/1/3).
bool IsSafeAlnum(std::string_view s) {
  constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return kAlphabet.find(c) != std::string_view::npos;
  });
}

std::string KindFromKsm(std::string_view metric_prefix) {
  // "deployment" → "Deployment", "statefulset" → "StatefulSet", ...
  static const std::map<std::string, std::string, std::less<>> kKinds = {
      {"deployment", "Deployment"},
      {"statefulset", "StatefulSet"},
      {"daemonset", "DaemonSet"},
      {"job", "Job"},
      {"cronjob", "CronJob"},
      {"replicaset", "ReplicaSet"},
      {"pod", "Pod"}};
  auto it = kKinds.find(metric_prefix);
  return it == kKinds.end() ? std::string() : it->second;
}

}  // namespace

std::string SanitizeKsmName(std::string_view key) {
  std::string out(key);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return out;
}

PodOwner OwnerFromPodName(std::string_view pod) {
  const size_t last = pod.rfind('-');
  if (last != std::string_view::npos && last > 0) {
    const std::string_view suffix = pod.substr(last + 1);
    const std::string_view rest = pod.substr(0, last);
    const size_t prev = rest.rfind('-');
    if (suffix.size() == 5 && IsSafeAlnum(suffix) && prev != std::string_view::npos && prev > 0) {
      const std::string_view hash = rest.substr(prev + 1);
      if (hash.size() >= 6 && hash.size() <= 10 && IsSafeAlnum(hash))
        return {"Deployment", std::string(rest.substr(0, prev)), OwnerSource::kPodNameRule};
    }
    if (!suffix.empty() && suffix.size() <= 5 &&
        std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return {"StatefulSet", std::string(rest), OwnerSource::kPodNameRule};
  }
  return {"Pod", std::string(pod), OwnerSource::kBarePod};
}

bool KubeState::Add(const LabeledSeries& s) {
  const std::string_view ns = s.Label("namespace");
  const double seen = s.points.empty() ? 0 : s.points.back().time_s;
  auto owner_of = [&]() {
    return PodOwner{std::string(s.Label("owner_kind")), std::string(s.Label("owner_name")),
                    OwnerSource::kKubeStateMetrics, seen};
  };
  if (s.metric == names_.pod_owner) {
    pod_owner_[{std::string(ns), std::string(s.Label("pod"))}] = owner_of();
    return true;
  }
  if (s.metric == names_.replicaset_owner) {
    replicaset_owner_[{std::string(ns), std::string(s.Label("replicaset"))}] = owner_of();
    return true;
  }
  if (s.metric == names_.job_owner) {
    job_owner_[{std::string(ns), std::string(s.Label("job_name"))}] = owner_of();
    return true;
  }
  if (s.metric == names_.requests) {
    if (s.points.empty()) return true;
    auto& r = requests_[{std::string(ns), std::string(s.Label("pod")),
                         std::string(s.Label("container"))}];
    r.values[std::string(s.Label("resource"))] = s.points.back().value;
    r.seen_s = std::max(r.seen_s, seen);
    return true;
  }
  if (s.metric == names_.namespace_labels) {
    auto& labels = namespace_labels_[std::string(ns)];
    labels.seen_s = std::max(labels.seen_s, seen);
    for (const auto& [k, v] : s.labels)
      if (k.rfind("label_", 0) == 0) labels.values[k] = v;
    return true;
  }
  const std::string& suffix = names_.annotations_suffix;
  if (s.metric.size() > 5 + suffix.size() && s.metric.rfind("kube_", 0) == 0 &&
      s.metric.compare(s.metric.size() - suffix.size(), suffix.size(), suffix) == 0) {
    // kube_<object>_annotations; the object's own label is "<object>", but "job_name" for Jobs.
    const std::string object = s.metric.substr(5, s.metric.size() - 5 - suffix.size());
    const std::string kind = KindFromKsm(object);
    if (kind.empty()) return false;
    std::string name(s.Label(kind == "Job" ? "job_name" : object));
    auto& annotations = annotations_[{std::string(ns), kind, name}];
    annotations.seen_s = std::max(annotations.seen_s, seen);
    for (const auto& [k, v] : s.labels)
      if (k.rfind("annotation_", 0) == 0) annotations.values[k] = v;
    return true;
  }
  return false;
}

PodOwner KubeState::ResolveOwner(std::string_view ns, std::string_view pod) const {
  auto it = pod_owner_.find({std::string(ns), std::string(pod)});
  if (it == pod_owner_.end()) return OwnerFromPodName(pod);
  PodOwner owner = it->second;
  if (owner.kind.empty() || owner.kind == "<none>" || owner.name.empty() || owner.name == "<none>")
    return {"Pod", std::string(pod), OwnerSource::kKubeStateMetrics};
  // One more hop where KSM knows it: ReplicaSet → Deployment, Job → CronJob.
  const std::map<Key2, PodOwner>* next = owner.kind == "ReplicaSet" ? &replicaset_owner_
                                         : owner.kind == "Job"      ? &job_owner_
                                                                    : nullptr;
  if (next != nullptr) {
    auto up = next->find({std::string(ns), owner.name});
    if (up != next->end() && !up->second.kind.empty() && up->second.kind != "<none>" &&
        !up->second.name.empty() && up->second.name != "<none>")
      return up->second;
    if (up == next->end() && owner.kind == "ReplicaSet") {
      // No kube_replicaset_owner: a ReplicaSet named "<deployment>-<hash>" is a Deployment's.
      const size_t dash = owner.name.rfind('-');
      if (dash != std::string::npos && dash > 0 &&
          IsSafeAlnum(std::string_view(owner.name).substr(dash + 1)))
        return {"Deployment", owner.name.substr(0, dash), OwnerSource::kPodNameRule};
    }
  }
  return owner;
}

std::optional<GpuAllocation> KubeState::Request(std::string_view ns, std::string_view pod,
                                                std::string_view container, int shared_replicas,
                                                const GpuModel* model) const {
  auto it = requests_.find({std::string(ns), std::string(pod), std::string(container)});
  if (it == requests_.end()) return std::nullopt;
  for (const auto& [resource, value] : it->second.values) {
    if (!(value >= 1) || !(value <= 1024) || value != std::floor(value)) continue;
    const int count = static_cast<int>(value);
    GpuAllocation a;
    a.count = count;
    if (resource == "nvidia_com_gpu") {
      a.kind = AllocationKind::kWholeGpu;
      return a;
    }
    if (resource == "nvidia_com_gpu_shared") {
      a.kind = AllocationKind::kSharedReplica;
      a.shared_replicas = std::max(shared_replicas, count);
      return a;
    }
    // nvidia_com_mig_1g_10gb: match against the model's profiles spelled the same way.
    constexpr std::string_view kMig = "nvidia_com_mig_";
    if (model != nullptr && resource.rfind(kMig, 0) == 0) {
      for (const MigProfile& p : model->mig_profiles) {
        if (SanitizeKsmName(p.name) == std::string_view(resource).substr(kMig.size())) {
          a.kind = AllocationKind::kMigInstance;
          a.mig_profile = p.name;
          return a;
        }
      }
    }
  }
  return std::nullopt;
}

std::string KubeState::CostCenter(const CostCenterRules& rules, std::string_view ns,
                                  const PodOwner& owner, std::string* rejected) const {
  StringMap ns_labels;
  if (auto it = namespace_labels_.find(ns); it != namespace_labels_.end()) {
    auto label = it->second.values.find("label_" + SanitizeKsmName(rules.namespace_label_key));
    if (label != it->second.values.end()) ns_labels[rules.namespace_label_key] = label->second;
  }
  StringMap annotations;
  if (auto it = annotations_.find({std::string(ns), owner.kind, owner.name});
      it != annotations_.end()) {
    auto a = it->second.values.find("annotation_" + SanitizeKsmName(rules.workload_annotation_key));
    if (a != it->second.values.end()) annotations[rules.workload_annotation_key] = a->second;
  }
  return ResolveCostCenter(rules, ns, ns_labels, annotations, rejected);
}

size_t KubeState::ForgetBefore(double time_s) {
  size_t n = 0;
  auto drop = [&](auto& map, auto seen) {
    n += std::erase_if(map, [&](const auto& kv) { return seen(kv.second) < time_s; });
  };
  const auto owner_seen = [](const PodOwner& o) { return o.seen_s; };
  const auto stamped = [](const auto& v) { return v.seen_s; };
  drop(pod_owner_, owner_seen);
  drop(replicaset_owner_, owner_seen);
  drop(job_owner_, owner_seen);
  drop(requests_, stamped);
  drop(namespace_labels_, stamped);
  drop(annotations_, stamped);
  return n;
}

}  // namespace gpuvpa::recommender
