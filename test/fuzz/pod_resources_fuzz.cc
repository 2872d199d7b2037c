// libFuzzer: a kubelet pod-resources List answer (protobuf bytes) as the node agent reads it.
// Nothing in it may crash the agent; every device it keeps is held by a named container.
#include <cstdint>
#include <cstdlib>

#include "recommender/agent/pod_resources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ::v1::ListPodResourcesResponse response;
  if (!response.ParseFromArray(data, static_cast<int>(size))) return 0;
  std::vector<std::string> issues;
  const gpuvpa::agent::PodDevices table =
      gpuvpa::agent::PodDevices::FromResponse(response, &issues);
  if (issues.size() > 20) std::abort();
  for (const auto& pod : response.pod_resources())
    for (const auto& c : pod.containers())
      for (const auto& d : c.devices())
        for (const std::string& id : d.device_ids())
          for (const auto& h : table.HoldersOf(id.substr(0, id.find("::"))))
            if (h.pod.empty() || h.ns.empty() || h.container.empty() ||
                h.resource.rfind("nvidia.com/", 0) != 0)
              std::abort();
  return 0;
}
