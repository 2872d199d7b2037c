// DCGM exporter series (VRAM, SM activity) joined with kube-state-metrics (owners, requests,
// cost centers) into the fleet store's samples, from Prometheus query results or exposition
// text. Facts: shared/DESIGN.md, "Metric sources".
//
// Mapping, per series:
//  - VRAM: DCGM_FI_DEV_FB_USED (MiB). SM activity: DCGM_FI_PROF_SM_ACTIVE, else
//    DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL / 100 — the best one present for
//    the series is used for all its samples and counted in the report.
//  - Pod: exported_pod/exported_namespace/exported_container (honorLabels: false), else
//    pod/namespace/container unless the container is the exporter itself (then the GPU has no
//    pod), else the old pod_name/pod_namespace/container_name. Empty values: no pod.
//  - Device: Hostname|hostname, UUID|uuid, gpu; a MIG instance adds GPU_I_PROFILE and GPU_I_ID
//    (the series' device number is 1000 * (gpu + 1) + GPU_I_ID, whole GPUs keep gpu).
//  - Model: modelName through the GPU catalog.
//  - Owner, allocation and cost center from kube-state-metrics (see kube_state.h); without a
//    request the allocation is what DCGM shows (a MIG profile, a shared device, one GPU).
//
// Shared devices (the rule, also in the README): DCGM's counters are per device. When k pods
// report the same device at the same time with the same values (the device's counters copied to
// each pod), each pod gets 1/k of the device's VRAM and 1/k of its SM activity.
// Per-pod readings (dcgm-exporter's per-pod mode, KUBERNETES_VIRTUAL_GPUS=true; the node
// agent): when the pods of one device report different FB_USED or GPU_UTIL values at one time,
// the device's readings are per process from then on: VRAM as read, SM activity the device's
// PROF_SM_ACTIVE (or GR_ENGINE_ACTIVE; on the pod's series or a pod-less device series) times
// the pod's share of the pods' busy time (GPU_UTIL, NVML's per-process smUtil), never more than
// its busy time (sm_basis "sm_active_by_busy_share"); with GPU_UTIL alone, busy time stands in
// for SM activity ("busy_time": a one-thread job reads 100 %). Such workloads are flagged
// `per_process_usage`; every workload carries the weakest `sm_basis` of its samples. Like every SM
// figure in gpuvpa, a pod's SM ratio is relative to its allocation unit (its share of the device:
// 1/replicas), so the pods' used GPU-seconds — VRAM and SM — add up to the device's. Such workloads
// are flagged `shared_device_estimate` in every output. Values of 9223372036854775792 and above are
// DCGM's "no value" markers and skipped.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/cost/cost_center.h"
#include "core/gpu/gpu_catalog.h"
#include "core/metrics/labeled_series.h"
#include "recommender/input/kube_state.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

// gpuvpa-node-agent's per-container series (recommender/agent/node_agent.h), a source the
// config names (`node_agent: {enabled: true}`). Where the agent reports a container on a device
// (same GPU UUID), its series win over DCGM's for that container and device: VRAM as NVML's
// per-process figure, SM activity as the agent attributed it (the `method` label gives the
// basis: "alone" measured, "solo-calibrated", "busy-proportional"), else its busy time (basis
// busy_time). Pod labels are the DCGM lists' (exported_* first: a PodMonitor without
// honorLabels moves the agent's namespace/pod/container there); a series whose namespace is
// the agent's own is a process the agent could not name, and has no pod. A MIG instance's
// series (gpu_instance and mig_profile set) are the instance's device (1000 * (gpu + 1) +
// gpu_instance, as DCGM's GPU_I_ID), its SM a ratio of the instance; one without a profile is
// left to DCGM's, counted in agent_mig_series.
struct NodeAgentNames {
  bool enabled = false;
  std::string memory_bytes = "gpuvpa_container_gpu_memory_used_bytes";
  std::string busy_ratio = "gpuvpa_container_gpu_busy_ratio";
  std::string sm_active_ratio = "gpuvpa_container_gpu_sm_active_ratio";
  std::string node_label = "node", gpu_label = "gpu", uuid_label = "gpu_uuid";
  std::string instance_label = "gpu_instance", model_label = "model_name";
  std::string mig_profile_label = "mig_profile";
  std::string method_label = "method";
  std::string own_namespace = "gpuvpa-node-agent";
};

struct DcgmNames {
  std::vector<std::string> vram_mib = {"DCGM_FI_DEV_FB_USED", "dcgm_fb_used"};
  // SM activity sources in order of preference; the last is a percentage.
  std::vector<std::string> sm_active = {"DCGM_FI_PROF_SM_ACTIVE"};
  std::vector<std::string> gr_engine_active = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"};
  std::vector<std::string> gpu_util_percent = {"DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"};
  // Label variants, in order of preference (index i of each list forms one set).
  std::vector<std::string> pod_labels = {"exported_pod", "pod", "pod_name"};
  std::vector<std::string> namespace_labels = {"exported_namespace", "namespace", "pod_namespace"};
  std::vector<std::string> container_labels = {"exported_container", "container", "container_name"};
  std::vector<std::string> host_labels = {"Hostname", "hostname"};
  std::vector<std::string> uuid_labels = {"UUID", "uuid"};
  std::string gpu_index_label = "gpu";
  std::string mig_profile_label = "GPU_I_PROFILE";
  std::string mig_instance_label = "GPU_I_ID";
  std::string model_label = "modelName";
  // With honorLabels: false a GPU without a pod carries the exporter's own pod labels.
  std::vector<std::string> exporter_containers = {"nvidia-dcgm-exporter", "dcgm-exporter"};
  NodeAgentNames node_agent;
};

enum SmSource { kSmActive = 0, kGrEngineActive = 1, kGpuUtil = 2, kSmSourceCount = 3 };
const char* SmSourceName(SmSource source);

struct DcgmIngestOptions {
  DcgmNames names;
  KubeStateNames kube_state;
  CostCenterRules cost_centers;
  // Ways a time-sliced GPU is shared (the device plugin's `replicas`); 0: the most pods seen on
  // the device at one time.
  int shared_replicas = 0;
  // Samples later than now + skew are refused (a clock error must not move the fleet's clock).
  double now_s = 0;
  double max_future_skew_s = 300;
  // Sharding over replicas: only workloads whose WorkloadShard is shard_index are kept.
  int shard_index = 0;
  int shard_count = 1;
};

// A workload's shard: FNV-1a of its key (namespace, kind, name, container) modulo `count`,
// stable across processes, builds and restarts.
int WorkloadShard(const v1::WorkloadIdentity& identity, int count);

struct DcgmIngestReport {
  size_t series = 0;  // DCGM usage series read (VRAM and SM)
  size_t kube_state_series = 0;
  size_t samples = 0;  // VRAM points joined to a pod
  size_t accepted = 0;
  size_t already_ingested = 0;
  size_t other_shard = 0;            // samples of workloads another replica owns
  size_t refused = 0;                // out of range, above the device, unknown model, bad names
  size_t no_pod = 0;                 // points of GPUs no pod holds (idle devices)
  size_t no_value_markers = 0;       // DCGM's "no value" markers
  size_t without_sm = 0;             // VRAM points with no SM activity at the same time
  size_t shared_device_samples = 0;  // split between pods of one device (estimates)
  size_t per_process_samples = 0;    // a shared device's per-pod readings (no equal split)
  size_t agent_samples = 0;          // of those, from the node agent's series
  size_t superseded_by_agent = 0;    // DCGM VRAM points of containers the agent reports
  size_t agent_mig_series = 0;       // agent MIG series without a profile (DCGM's are used)
  std::array<size_t, kSmSourceCount> sm_source_series{};  // series per chosen SM source
  size_t owner_from_kube_state = 0, owner_from_pod_name = 0, owner_bare_pod = 0;
  // Samples charged to "unallocated" because the cost center they named is not valid text.
  size_t invalid_cost_center = 0;
  size_t allocation_from_request = 0, allocation_from_dcgm = 0;
  std::vector<std::string> issues;           // the first 20, each naming the series and the problem
  double first_time_s = 0, last_time_s = 0;  // of accepted samples
};

class DcgmIngester {
 public:
  DcgmIngester(FleetStore& store, const GpuCatalog& catalog, DcgmIngestOptions options);

  // One batch of series over one time range: DCGM usage series and, optionally, the
  // kube-state-metrics series for the same range (kept for later batches too). Samples enter
  // the store in time order through its idempotent per-series ingest.
  DcgmIngestReport Ingest(std::span<const LabeledSeries> series);

  const KubeState& kube_state() const { return kube_state_; }
  KubeState& mutable_kube_state() { return kube_state_; }
  // The clock that future-dated samples are judged against (a daemon moves it every poll).
  void set_now(double now_s) { options_.now_s = now_s; }

 private:
  struct Entry;
  struct DeviceLoad;
  struct Pending;
  // The steps of Ingest, in order.
  std::map<std::string, Entry> GroupByDevice(std::span<const LabeledSeries> batch, DeviceLoad& load,
                                             DcgmIngestReport& report) const;
  // The node agent's series: one entry per container and device, its series merged.
  void AddAgentSeries(const LabeledSeries& s, int kind, std::string_view ns, std::string_view pod,
                      std::string_view container, std::map<std::string, Entry>& entries,
                      DcgmIngestReport& report) const;
  void MergeAgentSeries(Entry& e, std::deque<LabeledSeries>& merged,
                        DcgmIngestReport& report) const;
  void MarkPerProcessDevices(const std::map<std::string, Entry>& entries, DeviceLoad& load);
  // Tracks the entry's workload and device (row, series), or counts its samples refused.
  std::optional<std::pair<uint32_t, uint32_t>> Admit(const Entry& entry, const DeviceLoad& load,
                                                     DcgmIngestReport& report);
  void CollectSamples(const Entry& entry, uint32_t row, uint32_t series, const DeviceLoad& load,
                      DcgmIngestReport& report, std::vector<Pending>& pending);
  void IngestInTimeOrder(std::vector<Pending>& pending, DcgmIngestReport& report);

  FleetStore& store_;
  const GpuCatalog& catalog_;
  DcgmIngestOptions options_;
  KubeState kube_state_;
  // Devices whose pods have reported per-pod readings (see MarkPerProcessDevices).
  std::unordered_set<std::string> per_process_devices_;
};

}  // namespace gpuvpa::recommender
