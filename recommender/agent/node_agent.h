// gpuvpa-node-agent's heart: NVML passes on an interval (gpu_sampler.h), each process joined
// to its owner, the figures published in a prometheus-cpp registry for /metrics, and the
// probes. Owners: by pid (`label_by: pid`, for a machine without a kubelet such as the
// real-GPU check) or by the process's cgroup (`cgroup`: pod UID and container id from
// /proc/<pid>/cgroup under `proc_root`, the host's /proc with hostPID, read once per process),
// named through the API (pod_directory.h: namespace, pod, and the container by its runtime id).
// Where the pod's status does not name the container yet, the kubelet's pod-resources table
// (pod_resources.h, renewed every `pod_resources_refresh_s`) names it when one container of the
// pod holds the device. With the table, a process on a whole GPU its container was not
// allocated (NVIDIA_VISIBLE_DEVICES=all in a pod without a GPU request) is counted in
// gpuvpa_gpu_unallocated_processes and logged once: its readings would charge nobody, or the
// wrong team. Processes of one container on one device add up.
//
// Series (gauges; labels node, gpu, model_name, gpu_uuid, gpu_instance on every device and
// container series, and mig_uuid, mig_profile on a MIG instance's; namespace, pod, container,
// method, and the owner's pid, or pod_uid and container_id on the container series; no
// gpuvpa_gpu_busy_ratio in MIG mode, where NVML has none):
//   gpuvpa_container_gpu_memory_used_bytes, gpuvpa_container_gpu_busy_ratio (NVML smUtil:
//   busy time), gpuvpa_container_gpu_sm_active_ratio (share of the device's SMs, see
//   gpu_sampler.h for the methods) with _lower_ratio / _upper_ratio (the bounds the data
//   allows); per device gpuvpa_gpu_sm_active_ratio (GPM), gpuvpa_gpu_busy_ratio (util.gpu),
//   gpuvpa_gpu_memory_used_bytes, gpuvpa_gpu_unallocated_processes;
//   gpuvpa_node_agent_poll_errors_total, gpuvpa_node_agent_unresolved_processes (GPU processes
//   whose pod the API does not name: their series carry only pod_uid and container_id).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/net/http_server.h"
#include "recommender/agent/cgroup_path.h"
#include "recommender/agent/gpu_sampler.h"
#include "recommender/agent/nvml_library.h"
#include "recommender/agent/pod_directory.h"
#include "recommender/agent/pod_resources.h"

namespace gpuvpa::agent {

enum class LabelBy { kPid, kCgroup };

struct NodeAgentOptions {
  std::string nvml_library = "libnvidia-ml.so.1";
  double interval_s = 0.5;  // NVML keeps ~1 s of process samples: poll well inside it
  LabelBy label_by = LabelBy::kCgroup;
  std::string proc_root = "/proc";
  // This node's name: the `node` label of every device and container series (with `gpu`, the
  // device's NVML index, and `model_name`, its product name: what dcgm-exporter calls Hostname,
  // gpu and modelName, in the snake_case promtool asks for), so that the recommender can join both
  // sources on one device. Empty: no node label.
  std::string node_name;
  // The kubelet's pod-resources socket; empty: not asked.
  std::string pod_resources_socket;
  double pod_resources_refresh_s = 10;
  SamplerOptions sampler;
};

class NodeAgent {
 public:
  // `pods` names pod UIDs (label_by cgroup); null: series carry pod_uid and container_id only.
  explicit NodeAgent(NodeAgentOptions options, std::unique_ptr<PodDirectory> pods = nullptr);
  // Loads NVML and finds the devices; not ready (with the reason) until this succeeds.
  Status Start();
  // One pass: sample, join owners, publish. Returns the pass's first device error.
  Status PollOnce(double now_s);
  // Polls every interval until Stop(); retries Start() while NVML is missing.
  void Run();
  void Stop();
  HttpServerResponse HandleHttp(const std::string& path);
  prometheus::Registry& registry() { return *registry_; }

 private:
  struct Owner {
    std::string ns, pod, container, pod_uid, container_id, pid;
    auto operator<=>(const Owner&) const = default;
  };
  Owner OwnerOf(unsigned int pid, const std::string& device_uuid, double now_s);
  // True unless the pod-resources table says the owner's container holds no part of the device.
  bool Allocated(const Owner& owner, const std::string& device_uuid) const;
  void RefreshPodResources(double now_s);
  void Publish(const Snapshot& snap, const std::vector<std::vector<Owner>>& owners);
  std::string Page() const;  // the /metrics text; mu_ held

  NodeAgentOptions options_;
  std::unique_ptr<nvml::Library> library_;
  std::unique_ptr<GpuSampler> sampler_;
  std::unique_ptr<PodDirectory> pods_;
  std::optional<PodDevices> pod_devices_;
  double pod_devices_at_s_ = -1e300;
  // pid -> its cgroup owner (nullopt: not in a pod), read once while the pid stays on a GPU.
  std::unordered_map<unsigned int, std::pair<std::optional<CgroupOwner>, uint64_t>> cgroups_;
  std::unordered_set<std::string> warned_unallocated_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* poll_errors_;
  prometheus::Gauge* unresolved_;
  // The per-device and per-container series of the last pass, by family and labels, written
  // straight onto the page (Page()): prometheus-cpp's Collect() copies every label of every
  // series on each scrape, ~1 ms for a node of 8 GPUs x 32 processes; the registry keeps the
  // agent's own counters. Series a pass did not set are dropped after it.
  struct Series {
    char family = 0;
    std::string head;  // name{labels} and the space before the value
    double value = 0;
    uint64_t pass = 0;
  };
  std::unordered_map<std::string, Series> published_;
  uint64_t pass_ = 0;
  std::mutex mu_;  // the registry's contents and the state below
  std::string not_ready_ = "NVML not loaded yet";
  std::atomic<double> last_poll_s_{0};
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

}  // namespace gpuvpa::agent
