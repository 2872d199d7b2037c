// Who a pod UID is: namespace, name and, by the runtime's container id, the container's name,
// from the Kubernetes API's pods on this node only (`fieldSelector=spec.nodeName=<node>`, RBAC
// list pods). The agent learns a process's pod UID and container id from its cgroup
// (cgroup_path.h); this names them. A pod UID it does not know triggers a new list, at most
// one every `min_relist_s`; otherwise the list is renewed every `refresh_s`. The API being down
// keeps the last list (UNAVAILABLE in status(), the series keep their pod_uid label).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "core/kube/kube_client.h"

namespace gpuvpa::agent {

struct PodIdentity {
  std::string ns, name;
  // container id (the runtime's hex id, without "containerd://") -> container name; init and
  // ephemeral containers included.
  std::map<std::string, std::string> containers;
};

struct PodOwner {
  std::string ns, pod, container;
};

// pod UID -> identity, from a PodList's items. Items without a uid, namespace or name are
// skipped.
std::map<std::string, PodIdentity> PodIdentitiesFromList(const nlohmann::json& items);

class PodDirectory {
 public:
  PodDirectory(std::unique_ptr<KubeClient> client, std::string node_name, double refresh_s = 60,
               double min_relist_s = 5);
  // The pod, and the container's name when its status names `container_id` (else empty);
  // nullopt when the API does not know the pod (yet). May list pods.
  std::optional<PodOwner> Find(const std::string& pod_uid, const std::string& container_id,
                               double now_s);
  // The last list's outcome: OK, or why it failed (names the node and the API's answer).
  Status status() const { return status_; }
  const std::string& node_name() const { return node_; }

 private:
  void Relist(double now_s);
  std::unique_ptr<KubeClient> client_;
  std::string node_;
  double refresh_s_, min_relist_s_;
  double listed_at_s_ = -1e300;
  std::map<std::string, PodIdentity> pods_;
  Status status_;
};

}  // namespace gpuvpa::agent
