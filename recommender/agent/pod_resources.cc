// The kubelet's pod-resources answer as a device → containers table: see pod_resources.h.
#include "recommender/agent/pod_resources.h"

#include <grpcpp/grpcpp.h>

#include "proto/podresources.grpc.pb.h"

namespace gpuvpa::agent {
namespace {

constexpr size_t kMaxIssues = 20;
constexpr size_t kMaxNameBytes = 253;

bool Named(const std::string& s) { return !s.empty() && s.size() <= kMaxNameBytes; }

}  // namespace

PodDevices PodDevices::FromResponse(const ::v1::ListPodResourcesResponse& response,
                                    std::vector<std::string>* issues) {
  PodDevices table;
  auto issue = [&](std::string text) {
    if (issues != nullptr && issues->size() < kMaxIssues) issues->push_back(std::move(text));
  };
  for (const ::v1::PodResources& pod : response.pod_resources()) {
    if (!Named(pod.name()) || !Named(pod.namespace_())) {
      issue("a pod without a valid name or namespace (\"" + pod.namespace_().substr(0, 64) + "/" +
            pod.name().substr(0, 64) + "\")");
      continue;
    }
    for (const ::v1::ContainerResources& c : pod.containers()) {
      if (!Named(c.name())) {
        issue("pod " + pod.namespace_() + "/" + pod.name() + ": a container without a name");
        continue;
      }
      for (const ::v1::ContainerDevices& d : c.devices()) {
        if (d.resource_name().rfind("nvidia.com/", 0) != 0) continue;
        for (const std::string& id : d.device_ids()) {
          DeviceHolder h{pod.namespace_(), pod.name(), c.name(), d.resource_name(), -1};
          std::string uuid = id;
          if (const size_t sep = id.find("::"); sep != std::string::npos) {
            uuid = id.substr(0, sep);
            const std::string replica = id.substr(sep + 2);
            if (replica.empty() || replica.size() > 6 ||
                replica.find_first_not_of("0123456789") != std::string::npos) {
              issue("pod " + pod.namespace_() + "/" + pod.name() + " container " + c.name() +
                    ": device id \"" + id.substr(0, 128) + "\" has no replica number");
              continue;
            }
            h.replica = std::stoi(replica);
          }
          if (!Named(uuid)) {
            issue("pod " + pod.namespace_() + "/" + pod.name() + " container " + c.name() +
                  ": an empty or overlong device id");
            continue;
          }
          table.holders_[uuid].push_back(std::move(h));
        }
      }
    }
  }
  return table;
}

const std::vector<DeviceHolder>& PodDevices::HoldersOf(const std::string& device_uuid) const {
  static const std::vector<DeviceHolder> kNone;
  const auto it = holders_.find(device_uuid);
  return it == holders_.end() ? kNone : it->second;
}

Result<PodDevices> ListPodDevices(const std::string& socket_path,
                                  std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  // The kubelet answers for every pod of the node; bound it well above a full node.
  args.SetMaxReceiveMessageSize(16 << 20);
  auto channel =
      grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
  auto stub = ::v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  ::v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, ::v1::ListPodResourcesRequest(), &response);
  if (!status.ok())
    return UnavailableError("kubelet pod-resources at " + socket_path + ": " +
                            status.error_message() + " (" + std::to_string(status.error_code()) +
                            ")");
  return PodDevices::FromResponse(response);
}

}  // namespace gpuvpa::agent
