// Which containers hold which NVIDIA devices on this node: the kubelet's pod-resources API v1
// (`List` on /var/lib/kubelet/pod-resources/kubelet.sock, proto/podresources.proto). Device
// ids are GPU UUIDs (`GPU-…`), MIG device UUIDs (`MIG-…`) or, for time-sliced replicas,
// `<id>::<replica>`; one device id may so be held by several containers. Only resources named
// `nvidia.com/…` count. The API carries no pod UID: the agent joins a process's cgroup (pod UID)
// through the Kubernetes API, and this table says which of the pods holding a device it is.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "proto/podresources.pb.h"

namespace gpuvpa::agent {

struct DeviceHolder {
  std::string ns, pod, container;
  std::string resource;  // nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-3g.40gb, ...
  int replica = -1;      // the time-sliced replica, -1 for a whole device
};

class PodDevices {
 public:
  // The table of one List answer. Entries without names or device ids are skipped and counted
  // in `issues` (the first 20, each naming the pod).
  static PodDevices FromResponse(const ::v1::ListPodResourcesResponse& response,
                                 std::vector<std::string>* issues = nullptr);
  // The containers holding `device_uuid` (a GPU or MIG UUID, without "::replica"); empty when
  // none.
  const std::vector<DeviceHolder>& HoldersOf(const std::string& device_uuid) const;
  size_t device_count() const { return holders_.size(); }

 private:
  std::map<std::string, std::vector<DeviceHolder>> holders_;
};

// One List call over the unix socket at `socket_path`. UNAVAILABLE naming the socket when the
// kubelet does not answer within `timeout`.
Result<PodDevices> ListPodDevices(const std::string& socket_path,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace gpuvpa::agent
