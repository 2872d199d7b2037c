// /proc/<pid>/cgroup → pod UID and container id: see cgroup_path.h.
#include "recommender/agent/cgroup_path.h"

#include <vector>

namespace gpuvpa::agent {
namespace {

bool IsHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// A pod UID (8-4-4-4-12 hex, '-' or '_' between), normalised to '-'; empty when not one.
std::string PodUid(std::string_view s) {
  if (s.size() != 36) return "";
  std::string uid(s);
  for (size_t i = 0; i < uid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash) {
      if (uid[i] != '-' && uid[i] != '_') return "";
      uid[i] = '-';
    } else if (!IsHex(std::string_view(&uid[i], 1))) {
      return "";
    }
  }
  return uid;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool StripPrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool StripSuffix(std::string_view& s, std::string_view suffix) {
  if (s.size() < suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// The owner in one cgroup path; nullopt outside kubepods; an error text when malformed.
std::optional<CgroupOwner> OwnerOfPath(std::string_view path, std::string& error) {
  const std::vector<std::string_view> seg = Segments(path);
  size_t pod_at = seg.size();
  std::string uid;
  bool in_kubepods = false;
  for (size_t i = 0; i < seg.size(); ++i) {
    std::string_view s = seg[i];
    if (s.find("kubepods") != std::string_view::npos) in_kubepods = true;
    if (!in_kubepods) continue;
    // systemd: "<prefix>-pod<uid>.slice"; cgroupfs: "pod<uid>".
    if (StripSuffix(s, ".slice")) {
      const size_t at = s.rfind("-pod");
      if (at == std::string_view::npos) continue;
      s.remove_prefix(at + 4);
    } else if (!StripPrefix(s, "pod")) {
      continue;
    }
    uid = PodUid(s);
    if (uid.empty()) {
      error = "pod segment \"" + std::string(seg[i]) + "\" holds no pod UID";
      return std::nullopt;
    }
    pod_at = i;
    break;
  }
  if (pod_at == seg.size()) return std::nullopt;
  CgroupOwner owner;
  owner.pod_uid = std::move(uid);
  if (pod_at + 1 >= seg.size()) return owner;  // the pod's own cgroup
  std::string_view c = seg[pod_at + 1];
  const bool scope = StripSuffix(c, ".scope");
  if (StripPrefix(c, "cri-containerd-") || StripPrefix(c, "containerd-")) {
    owner.runtime = "containerd";
  } else if (StripPrefix(c, "crio-conmon-")) {
    return owner;  // CRI-O's monitor process: the pod's, no container's
  } else if (StripPrefix(c, "crio-")) {
    owner.runtime = "cri-o";
  } else if (StripPrefix(c, "docker-")) {
    owner.runtime = "docker";
  } else if (scope) {
    error = "container scope \"" + std::string(seg[pod_at + 1]) + "\" of an unknown runtime";
    return std::nullopt;
  }
  if (!IsHex(c) || c.size() < 12 || c.size() > 128) {
    error = "container segment \"" + std::string(seg[pod_at + 1]) + "\" holds no container id";
    return std::nullopt;
  }
  owner.container_id = std::string(c);
  return owner;
}

}  // namespace

Result<std::optional<CgroupOwner>> ParseProcCgroup(std::string_view text) {
  // cgroup v2's unified line wins; v1 lines all name the same pod and container.
  std::optional<CgroupOwner> v1;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      if (line.empty()) continue;
      return InvalidArgumentError("cgroup line \"" + std::string(line.substr(0, 200)) +
                                  "\" is not hierarchy:controllers:path");
    }
    const std::string_view path = line.substr(second + 1);
    std::string error;
    std::optional<CgroupOwner> owner = OwnerOfPath(path, error);
    if (!error.empty())
      return InvalidArgumentError("cgroup line \"" + std::string(line.substr(0, 200)) +
                                  "\": " + error);
    if (!owner) continue;
    if (line.substr(0, second + 1) == "0::") return owner;
    if (!v1) v1 = std::move(owner);
  }
  return v1;
}

}  // namespace gpuvpa::agent
