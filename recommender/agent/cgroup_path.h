// Which pod and container a host process belongs to, from its /proc/<pid>/cgroup: cgroup v2
// ("0::/path") or v1 ("N:controllers:/path"), the kubelet's systemd driver
// (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/...) or cgroupfs
// driver (kubepods/burstable/pod<uid>/...), and the runtimes' container scopes:
// containerd "cri-containerd-<id>.scope", CRI-O "crio-<id>.scope" (its "crio-conmon-" scope
// is the monitor, not the container), docker "docker-<id>.scope", or a bare <id>. In systemd
// slice names the pod UID's '-' are written '_'. A process outside kubepods has no pod.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa::agent {

struct CgroupOwner {
  std::string pod_uid;       // with '-' (as the API spells metadata.uid)
  std::string container_id;  // the runtime's id (hex); empty for the pod's sandbox cgroup
  std::string runtime;       // "containerd", "cri-o", "docker", or "" when the path names none
};

// The owner named by a /proc/<pid>/cgroup text, nullopt when the process is not in a pod's
// cgroup; INVALID_ARGUMENT naming the line when a kubepods path is malformed.
Result<std::optional<CgroupOwner>> ParseProcCgroup(std::string_view text);

}  // namespace gpuvpa::agent
