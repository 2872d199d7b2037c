// libFuzzer: a /proc/<pid>/cgroup text as the node agent reads it from the host. Nothing in it
// may crash the agent; an owner it names has a pod UID in the API's form and a hex container id.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "recommender/agent/cgroup_path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuvpa::Result<std::optional<gpuvpa::agent::CgroupOwner>> owner =
      gpuvpa::agent::ParseProcCgroup(text);
  if (!owner.ok() || !owner->has_value()) return 0;
  const gpuvpa::agent::CgroupOwner& o = **owner;
  if (o.pod_uid.size() != 36 || o.pod_uid[8] != '-' || o.pod_uid[23] != '-') std::abort();
  for (char c : o.container_id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) std::abort();
  return 0;
}
