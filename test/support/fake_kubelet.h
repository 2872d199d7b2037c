// The kubelet's pod-resources API (v1 List) on a unix socket, answering what a test sets: for
// the node agent's tests and the manifest run of its DaemonSet.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/podresources.grpc.pb.h"

namespace gpuvpa::testing {

class FakeKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  ::v1::ListPodResourcesResponse answer;  // set before serving, or through Replace()
  void Replace(::v1::ListPodResourcesResponse next) {
    std::lock_guard<std::mutex> lock(mu_);
    answer = std::move(next);
  }
  int list_calls() const { return list_calls_.load(); }
  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++list_calls_;
    *response = answer;
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::atomic<int> list_calls_{0};
};

inline std::unique_ptr<grpc::Server> ServeKubelet(FakeKubelet& kubelet, const std::string& socket) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&kubelet);
  return builder.BuildAndStart();
}

// Adds (ns, pod)'s container holding `ids` of `resource` to `r`.
inline void AddContainer(::v1::ListPodResourcesResponse& r, const std::string& ns,
                         const std::string& pod, const std::string& container,
                         const std::string& resource, const std::vector<std::string>& ids) {
  ::v1::PodResources* p = nullptr;
  for (auto& existing : *r.mutable_pod_resources())
    if (existing.name() == pod && existing.namespace_() == ns) p = &existing;
  if (p == nullptr) {
    p = r.add_pod_resources();
    p->set_name(pod);
    p->set_namespace_(ns);
  }
  ::v1::ContainerResources* c = p->add_containers();
  c->set_name(container);
  ::v1::ContainerDevices* d = c->add_devices();
  d->set_resource_name(resource);
  for (const std::string& id : ids) d->add_device_ids(id);
}

}  // namespace gpuvpa::testing
