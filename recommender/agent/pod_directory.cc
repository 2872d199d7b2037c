// Pod UIDs to names through the API, pods of this node only: see pod_directory.h.
#include "recommender/agent/pod_directory.h"

namespace gpuvpa::agent {
namespace {

// "containerd://0123abcd" -> "0123abcd"; an id without a scheme as it is.
std::string RuntimeIdOf(const std::string& container_id) {
  const size_t sep = container_id.find("://");
  return sep == std::string::npos ? container_id : container_id.substr(sep + 3);
}

std::string StringAt(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::map<std::string, PodIdentity> PodIdentitiesFromList(const nlohmann::json& items) {
  std::map<std::string, PodIdentity> pods;
  if (!items.is_array()) return pods;
  for (const nlohmann::json& pod : items) {
    if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) continue;
    const nlohmann::json& meta = pod["metadata"];
    const std::string uid = StringAt(meta, "uid");
    PodIdentity id{StringAt(meta, "namespace"), StringAt(meta, "name"), {}};
    if (uid.empty() || id.ns.empty() || id.name.empty()) continue;
    const auto status = pod.find("status");
    if (status != pod.end() && status->is_object()) {
      for (const char* list :
           {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
        const auto statuses = status->find(list);
        if (statuses == status->end() || !statuses->is_array()) continue;
        for (const nlohmann::json& c : *statuses) {
          if (!c.is_object()) continue;
          const std::string runtime_id = RuntimeIdOf(StringAt(c, "containerID"));
          const std::string name = StringAt(c, "name");
          if (!runtime_id.empty() && !name.empty()) id.containers[runtime_id] = name;
        }
      }
    }
    pods[uid] = std::move(id);
  }
  return pods;
}

PodDirectory::PodDirectory(std::unique_ptr<KubeClient> client, std::string node_name,
                           double refresh_s, double min_relist_s)
    : client_(std::move(client)),
      node_(std::move(node_name)),
      refresh_s_(refresh_s),
      min_relist_s_(min_relist_s) {}

void PodDirectory::Relist(double now_s) {
  listed_at_s_ = now_s;
  Result<KubeList> list =
      client_->List(kube::kPods, "", KubeListOptions{"", "spec.nodeName=" + node_});
  if (!list.ok()) {
    status_ = Status(list.status().code(),
                     "listing the pods of node " + node_ + ": " + list.status().message());
    return;
  }
  pods_ = PodIdentitiesFromList(list->items);
  status_ = OkStatus();
}

std::optional<PodOwner> PodDirectory::Find(const std::string& pod_uid,
                                           const std::string& container_id, double now_s) {
  auto known = [&](auto it) {
    return it != pods_.end() &&
           (container_id.empty() || it->second.containers.contains(container_id));
  };
  auto it = pods_.find(pod_uid);
  // Stale, or a new pod or container (its id not in the statuses yet): list again.
  if (now_s - listed_at_s_ >= refresh_s_ || (!known(it) && now_s - listed_at_s_ >= min_relist_s_)) {
    Relist(now_s);
    it = pods_.find(pod_uid);
  }
  if (it == pods_.end()) return std::nullopt;
  PodOwner owner{it->second.ns, it->second.name, ""};
  if (const auto c = it->second.containers.find(container_id); c != it->second.containers.end())
    owner.container = c->second;
  return owner;
}

}  // namespace gpuvpa::agent
