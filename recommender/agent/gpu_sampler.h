// One node's GPUs read through NVML, pass after pass: per device its memory, busy time
// (util.gpu) and, where GPM exists (Hopper and later), SM activity between two GPM samples at
// least `min_gpm_interval_s` apart; per process its memory and its busy time (smUtil), and the
// share of the device's SM activity the data lets us give it. Facts: shared/DESIGN.md, "Metric
// sources" (NVML), measured on a real H200.
//
// What NVML says and what it does not:
//  - nvmlDeviceGetProcessUtilization returns, for all processes of a device together, the
//    samples newer than one timestamp, and only for processes that were busy in NVML's last
//    sample period. The timestamp is kept per device; NOT_FOUND means "no new sample", not
//    "idle". A process without a sample keeps its last figure (busy basis "held") until it has
//    been absent for `idle_after_missing_polls` passes; then it is idle ("confirmed-idle").
//    One that never had a sample is unknown until then (no busy figure is exported).
//  - smUtil is busy time, not SM coverage: one thread spinning reads ~100 %. Only GPM's SM
//    activity says how much of the GPU ran, and GPM is per device, never per process.
//
// SM activity per process on a shared device (`method`):
//  - "alone": the only busy process gets the device's SM activity; such passes also teach the
//    process's coverage (SM activity per unit of busy time, an exponential average);
//  - "solo-calibrated": several busy processes that all have a learned coverage share the
//    device's SM activity in proportion to busy time × coverage;
//  - "busy-proportional": otherwise, in proportion to busy time (a floor on the error: a
//    one-thread job beside a full-GPU job takes credit for SMs it never used);
//  - "busy-time-only": the device has no GPM; no SM figure, only busy time;
//  - "idle": a busy time of zero (no SM activity); "unknown": no busy figure yet.
// Under CUDA MPS (a process named nvidia-cuda-mps-server on the device: nvmlSystemGetProcessName)
// NVML reports each client's memory, but every utilization sample belongs to the server
// (recorded on a real H200: shared/data/fixtures/nvml-h200/mps/). The clients' busy time is
// then unknown, never idle, and the device's SM activity is theirs: one client gets all of it
// ("alone"), several share it equally ("mps-equal-split", bounds 0 and the device's activity:
// NVML says nothing finer, and the figure says so), without GPM none ("mps-unattributed"). The
// server keeps its own memory and the device's busy time ("mps-server"), and no SM figure.
// Every split figure is capped at the process's busy time (kernels occupy SMs only while the
// process is busy) and comes with the bounds the data allows: lower = what the others cannot
// account for, upper = min(busy time, device SM activity).
// MIG mode: per instance, through its MIG device (memory, processes, nvmlGpmMigSampleGet SM
// activity as a ratio of the instance); NVML has no util.gpu or per-process utilization there.
// A process alone on its instance gets the instance's activity ("alone"); several share it
// equally ("mig-equal-split", bounds 0 and the instance's activity).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "recommender/agent/nvml_library.h"

namespace gpuvpa::agent {

struct SamplerOptions {
  // GPM metrics need two samples; NVML documents at least 100 ms between them.
  double min_gpm_interval_s = 0.1;
  // Passes without a utilization sample after which a process counts as idle.
  int idle_after_missing_polls = 3;
  // Passes alone (busy ≥ min_busy_for_coverage) before a coverage is trusted.
  int min_solo_passes = 3;
  double min_busy_for_coverage = 0.05;
  double coverage_smoothing = 0.2;  // weight of the newest pass in the coverage average
  // Process names (as nvmlSystemGetProcessName gives them, path or not) of CUDA MPS servers.
  std::vector<std::string> mps_server_names = {"nvidia-cuda-mps-server"};
};

enum class BusyBasis { kUnknown, kSampled, kHeld, kConfirmedIdle };
const char* BusyBasisName(BusyBasis basis);

struct ProcessReading {
  unsigned int pid = 0;
  unsigned int gpu_instance = nvml::kNoGpuInstance;
  double memory_used_bytes = 0;
  BusyBasis busy_basis = BusyBasis::kUnknown;
  double busy_ratio = 0;  // meaningful unless busy_basis is kUnknown
  // SM activity as a share of the whole device (0..1); absent without GPM or a busy figure.
  std::optional<double> sm_active_ratio;
  double sm_active_lower_ratio = 0, sm_active_upper_ratio = 0;
  std::string method;  // see the header comment
  bool mps_server = false;
};

// A MIG GPU instance: its memory and its own GPM SM activity (nvmlGpmMigSampleGet), a ratio of
// the instance's SMs, as DCGM's per-instance profiling metrics are.
struct InstanceReading {
  unsigned int gpu_instance = 0;
  std::string uuid;     // MIG-...
  std::string profile;  // "1g.18gb", from the MIG device's name; "" when it has none
  double memory_used_bytes = 0, memory_total_bytes = 0;
  std::optional<double> sm_active_ratio;
};

struct DeviceReading {
  unsigned int index = 0;
  std::string uuid;
  std::string name;  // the product name (nvmlDeviceGetName), "" when the library has none
  double memory_used_bytes = 0, memory_total_bytes = 0;
  bool mig = false;                       // MIG mode: figures per instance, no util.gpu
  double busy_ratio = 0;                  // util.gpu / 100 (not in MIG mode)
  std::optional<double> sm_active_ratio;  // GPM SM_UTIL / 100, when supported
  std::optional<double> sm_occupancy_ratio;
  std::vector<ProcessReading> processes;
  std::vector<InstanceReading> instances;  // MIG mode
  Status status;  // the first failure of this pass (the device's figures are then partial)

  // The instance a process runs in (MIG mode), or null.
  const InstanceReading* InstanceOf(const ProcessReading& p) const;
  // The id the kubelet's pod-resources table names for the part of the device `p` runs on:
  // its MIG instance's UUID, else the GPU's.
  const std::string& HolderUuid(const ProcessReading& p) const;
};

struct Snapshot {
  double time_s = 0;
  std::vector<DeviceReading> devices;
};

class GpuSampler {
 public:
  GpuSampler(const nvml::Library& library, SamplerOptions options = {});
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Finds the devices (UUIDs, GPM support). UNAVAILABLE when NVML cannot list them.
  Status Init();
  // One pass over every device at `now_s` (the caller's clock; only differences matter).
  Snapshot Poll(double now_s);
  size_t device_count() const { return devices_.size(); }

 private:
  struct ProcessState {
    double busy_ratio = 0;
    bool ever_sampled = false;
    int missing_polls = 0;
    double coverage = 0;  // SM activity per unit of busy time, learned alone
    int solo_passes = 0;
    bool seen_this_pass = false;
    bool named = false, mps_server = false;  // its name asked once
  };
  // GPM of a device or a MIG instance: the two latest samples and the metrics between them.
  struct Gpm {
    bool on = false;
    nvmlGpmSample_t samples[2] = {nullptr, nullptr};
    int newest = -1;  // index of the newest sample taken, -1 none
    double time_s = 0;
    std::optional<double> sm_active, sm_occupancy;
  };
  struct Instance {
    nvmlDevice_t handle = nullptr;  // the MIG device
    unsigned int gpu_instance = 0;
    std::string uuid, profile;
    Gpm gpm;
    std::vector<nvmlProcessInfo_t> info_buffer;
  };
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string uuid, name;
    Gpm gpm;
    // MIG mode: the instances, found at Init (the GPU operator's MIG manager evicts GPU
    // clients, this agent included, while it changes the geometry).
    bool mig = false;
    std::vector<Instance> instances;
    unsigned long long last_seen_us = 0;
    std::map<unsigned int, ProcessState> processes;
    std::vector<nvmlProcessInfo_t> info_buffer;
    std::vector<nvmlProcessUtilizationSample_t> util_buffer;
  };
  void ReadDevice(Device& d, double now_s, DeviceReading& out);
  // One GPM sample through `take` when the last is old enough, and the metrics since it.
  template <typename Take>
  void SampleGpm(Gpm& g, const std::string& sample_call, const std::string& what, double now_s,
                 Status& status, Take take);
  bool AllocGpm(Gpm& g) const;
  void FreeGpm(Gpm& g) const;
  Status FindInstances(Device& d);
  void ReadInstances(Device& d, double now_s, DeviceReading& out);
  // Appends the processes `handle` lists (the GPU, or one MIG device) to out.processes.
  Status ListProcesses(Device& d, nvmlDevice_t handle, const std::string& what,
                       std::vector<nvmlProcessInfo_t>& buffer, DeviceReading& out);
  Status ReadProcesses(Device& d, DeviceReading& out);
  void ReadBusyTime(Device& d, DeviceReading& out);
  bool IsMpsServer(unsigned int pid) const;
  static void AttributeMps(const DeviceReading& device, std::vector<ProcessReading*>& clients,
                           std::vector<ProcessReading*>& servers);
  void AttributeSm(Device& d, DeviceReading& out);
  static void AttributeMig(DeviceReading& out);

  const nvml::Library& lib_;
  SamplerOptions options_;
  std::vector<Device> devices_;
};

}  // namespace gpuvpa::agent
