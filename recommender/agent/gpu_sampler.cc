// NVML passes over a node's GPUs: see gpu_sampler.h.
#include "recommender/agent/gpu_sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>

namespace gpuvpa::agent {

const char* BusyBasisName(BusyBasis basis) {
  switch (basis) {
    case BusyBasis::kUnknown:
      return "unknown";
    case BusyBasis::kSampled:
      return "sampled";
    case BusyBasis::kHeld:
      return "held";
    case BusyBasis::kConfirmedIdle:
      return "confirmed-idle";
  }
  return "?";
}

GpuSampler::GpuSampler(const nvml::Library& library, SamplerOptions options)
    : lib_(library), options_(options) {}

GpuSampler::~GpuSampler() {
  for (Device& d : devices_) {
    FreeGpm(d.gpm);
    for (Instance& in : d.instances) FreeGpm(in.gpm);
  }
}

bool GpuSampler::AllocGpm(Gpm& g) const {
  const nvml::Functions& fn = lib_.fn();
  g.on = fn.GpmSampleAlloc(&g.samples[0]) == nvml::kSuccess &&
         fn.GpmSampleAlloc(&g.samples[1]) == nvml::kSuccess;
  return g.on;
}

void GpuSampler::FreeGpm(Gpm& g) const {
  for (nvmlGpmSample_t& s : g.samples)
    if (s != nullptr) lib_.fn().GpmSampleFree(s), s = nullptr;
}

Status GpuSampler::Init() {
  const nvml::Functions& fn = lib_.fn();
  unsigned int count = 0;
  if (nvmlReturn_t rc = fn.DeviceGetCount(&count); rc != nvml::kSuccess)
    return UnavailableError(lib_.Error("nvmlDeviceGetCount_v2", rc).message());
  devices_.resize(count);
  for (unsigned int i = 0; i < count; ++i) {
    Device& d = devices_[i];
    if (nvmlReturn_t rc = fn.DeviceGetHandleByIndex(i, &d.handle); rc != nvml::kSuccess)
      return UnavailableError(
          lib_.Error("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ")", rc).message());
    char uuid[nvml::kUuidBufferSize] = {};
    if (nvmlReturn_t rc = fn.DeviceGetUUID(d.handle, uuid, sizeof uuid); rc != nvml::kSuccess)
      return UnavailableError(
          lib_.Error("nvmlDeviceGetUUID(" + std::to_string(i) + ")", rc).message());
    d.uuid = uuid;
    // The product name names the model for the recommender (dcgm-exporter's modelName).
    char name[nvml::kNameBufferSize] = {};
    if (fn.DeviceGetName != nullptr &&
        fn.DeviceGetName(d.handle, name, sizeof name) == nvml::kSuccess)
      d.name = name;
    bool gpm = false;
    if (fn.GpmQueryDeviceSupport != nullptr) {
      nvmlGpmSupport_t support{};
      support.version = nvml::kGpmSupportVersion;
      gpm = fn.GpmQueryDeviceSupport(d.handle, &support) == nvml::kSuccess &&
            support.isSupportedDevice != 0;
    }
    unsigned int current = 0, pending = 0;
    d.mig = fn.DeviceGetMigMode != nullptr &&
            fn.DeviceGetMigMode(d.handle, &current, &pending) == nvml::kSuccess && current == 1;
    if (d.mig) {
      if (Status s = FindInstances(d); !s.ok()) return s;
      for (Instance& in : d.instances)
        if (gpm && fn.GpmMigSampleGet != nullptr) AllocGpm(in.gpm);
    } else if (gpm) {
      AllocGpm(d.gpm);
    }
  }
  return OkStatus();
}

Status GpuSampler::FindInstances(Device& d) {
  const nvml::Functions& fn = lib_.fn();
  unsigned int slots = 0;
  if (nvmlReturn_t rc = fn.DeviceGetMaxMigDeviceCount(d.handle, &slots); rc != nvml::kSuccess)
    return UnavailableError(
        lib_.Error("nvmlDeviceGetMaxMigDeviceCount(" + d.uuid + ")", rc).message());
  for (unsigned int i = 0; i < slots; ++i) {
    Instance in;
    const nvmlReturn_t rc = fn.DeviceGetMigDeviceHandleByIndex(d.handle, i, &in.handle);
    if (rc == nvml::kNotFound) continue;  // an empty slot
    const std::string what = "MIG device " + std::to_string(i) + " of " + d.uuid;
    if (rc != nvml::kSuccess)
      return UnavailableError(
          lib_.Error("nvmlDeviceGetMigDeviceHandleByIndex(" + what + ")", rc).message());
    if (nvmlReturn_t r = fn.DeviceGetGpuInstanceId(in.handle, &in.gpu_instance);
        r != nvml::kSuccess)
      return UnavailableError(lib_.Error("nvmlDeviceGetGpuInstanceId(" + what + ")", r).message());
    char uuid[nvml::kUuidBufferSize] = {};
    if (nvmlReturn_t r = fn.DeviceGetUUID(in.handle, uuid, sizeof uuid); r != nvml::kSuccess)
      return UnavailableError(lib_.Error("nvmlDeviceGetUUID(" + what + ")", r).message());
    in.uuid = uuid;
    // A MIG device's name ends in its profile: "NVIDIA H200 MIG 1g.18gb".
    char name[nvml::kNameBufferSize] = {};
    if (fn.DeviceGetName != nullptr &&
        fn.DeviceGetName(in.handle, name, sizeof name) == nvml::kSuccess) {
      const std::string_view text(name);
      if (const size_t at = text.rfind("MIG "); at != std::string_view::npos)
        in.profile = text.substr(at + 4);
    }
    d.instances.push_back(std::move(in));
  }
  return OkStatus();
}

const InstanceReading* DeviceReading::InstanceOf(const ProcessReading& p) const {
  for (const InstanceReading& in : instances)
    if (in.gpu_instance == p.gpu_instance) return &in;
  return nullptr;
}

const std::string& DeviceReading::HolderUuid(const ProcessReading& p) const {
  const InstanceReading* in = InstanceOf(p);
  return in != nullptr ? in->uuid : uuid;
}

Snapshot GpuSampler::Poll(double now_s) {
  Snapshot snap;
  snap.time_s = now_s;
  snap.devices.resize(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    snap.devices[i].index = static_cast<unsigned int>(i);
    ReadDevice(devices_[i], now_s, snap.devices[i]);
  }
  return snap;
}

void GpuSampler::ReadDevice(Device& d, double now_s, DeviceReading& out) {
  const nvml::Functions& fn = lib_.fn();
  out.uuid = d.uuid;
  out.name = d.name;
  out.mig = d.mig;
  auto note = [&](Status s) {
    if (out.status.ok()) out.status = std::move(s);
  };
  nvmlMemory_t memory{};
  if (nvmlReturn_t rc = fn.DeviceGetMemoryInfo(d.handle, &memory); rc == nvml::kSuccess) {
    out.memory_used_bytes = static_cast<double>(memory.used);
    out.memory_total_bytes = static_cast<double>(memory.total);
  } else {
    note(lib_.Error("nvmlDeviceGetMemoryInfo(" + d.uuid + ")", rc));
  }
  if (d.mig) {
    // In MIG mode NVML has no util.gpu and no per-process utilization: per instance GPM and
    // memory, and the processes of each instance.
    ReadInstances(d, now_s, out);
    AttributeMig(out);
    return;
  }
  nvmlUtilization_t util{};
  if (nvmlReturn_t rc = fn.DeviceGetUtilizationRates(d.handle, &util); rc == nvml::kSuccess)
    out.busy_ratio = std::min(100u, util.gpu) / 100.0;
  else
    note(lib_.Error("nvmlDeviceGetUtilizationRates(" + d.uuid + ")", rc));
  SampleGpm(d.gpm, "nvmlGpmSampleGet", d.uuid, now_s, out.status,
            [&](nvmlGpmSample_t s) { return fn.GpmSampleGet(d.handle, s); });
  out.sm_active_ratio = d.gpm.sm_active;
  out.sm_occupancy_ratio = d.gpm.sm_occupancy;
  if (Status s = ReadProcesses(d, out); !s.ok()) {
    note(std::move(s));
    return;  // no process list: no per-process figures this pass
  }
  ReadBusyTime(d, out);
  AttributeSm(d, out);
}

void GpuSampler::ReadInstances(Device& d, double now_s, DeviceReading& out) {
  const nvml::Functions& fn = lib_.fn();
  for (auto& [pid, state] : d.processes) state.seen_this_pass = false;
  for (Instance& in : d.instances) {
    InstanceReading& r = out.instances.emplace_back();
    r.gpu_instance = in.gpu_instance;
    r.uuid = in.uuid;
    r.profile = in.profile;
    nvmlMemory_t memory{};
    if (nvmlReturn_t rc = fn.DeviceGetMemoryInfo(in.handle, &memory); rc == nvml::kSuccess) {
      r.memory_used_bytes = static_cast<double>(memory.used);
      r.memory_total_bytes = static_cast<double>(memory.total);
    } else if (out.status.ok()) {
      out.status = lib_.Error("nvmlDeviceGetMemoryInfo(" + in.uuid + ")", rc);
    }
    const unsigned int gi = in.gpu_instance;
    SampleGpm(in.gpm, "nvmlGpmMigSampleGet", in.uuid, now_s, out.status,
              [&](nvmlGpmSample_t s) { return fn.GpmMigSampleGet(d.handle, gi, s); });
    r.sm_active_ratio = in.gpm.sm_active;
    const size_t first = out.processes.size();
    if (Status s = ListProcesses(d, in.handle, in.uuid, in.info_buffer, out); !s.ok()) {
      if (out.status.ok()) out.status = std::move(s);
      continue;
    }
    for (size_t i = first; i < out.processes.size(); ++i) out.processes[i].gpu_instance = gi;
  }
  std::erase_if(d.processes, [](const auto& kv) { return !kv.second.seen_this_pass; });
}

// `p`, one of `n` processes that share a measured SM activity `sm` with no busy time to split
// it by: all of it when alone, else an equal share with bounds 0 and all of it.
namespace {
void SplitEqually(ProcessReading& p, double sm, size_t n, const char* split_method) {
  sm = std::min(1.0, sm);
  p.sm_active_ratio = n == 1 ? sm : sm / static_cast<double>(n);
  p.sm_active_lower_ratio = n == 1 ? sm : 0;
  p.sm_active_upper_ratio = sm;
  p.method = n == 1 ? "alone" : split_method;
}
}  // namespace

// Processes of one MIG instance share its SM activity; NVML has no busy time there to split it
// by, so several share it equally ("mig-equal-split", bounds 0 and the instance's activity).
void GpuSampler::AttributeMig(DeviceReading& out) {
  std::map<unsigned int, size_t> per_instance;
  for (const ProcessReading& p : out.processes) ++per_instance[p.gpu_instance];
  for (ProcessReading& p : out.processes) {
    const InstanceReading* in = out.InstanceOf(p);
    if (in == nullptr || !in->sm_active_ratio) {
      p.method = "busy-time-only";  // no GPM on this instance: memory only
      continue;
    }
    SplitEqually(p, *in->sm_active_ratio, per_instance[p.gpu_instance], "mig-equal-split");
  }
}

template <typename Take>
void GpuSampler::SampleGpm(Gpm& g, const std::string& sample_call, const std::string& what,
                           double now_s, Status& status, Take take) {
  if (!g.on) return;
  const nvml::Functions& fn = lib_.fn();
  if (g.newest >= 0 && now_s - g.time_s < options_.min_gpm_interval_s) return;
  const int next = g.newest < 0 ? 0 : 1 - g.newest;
  if (nvmlReturn_t rc = take(g.samples[next]); rc != nvml::kSuccess) {
    const Status s = lib_.Error(sample_call + "(" + what + ")", rc);
    if (rc == nvml::kNoPermission || rc == nvml::kNotSupported) {
      // A refusal that every later pass would repeat (a driver that keeps GPM to admins, a
      // vGPU without it): said once, and SM figures here are busy time from now on.
      spdlog::warn(
          "{}: SM activity of this GPU is not read from now on; its processes' SM "
          "figures are busy time (method busy-time-only)",
          s.message());
      g.on = false;
      g.sm_active.reset();
      g.sm_occupancy.reset();
      return;
    }
    if (status.ok()) status = s;
    return;
  }
  if (g.newest >= 0) {
    nvmlGpmMetricsGet_t get{};
    get.version = nvml::kGpmMetricsGetVersion;
    get.numMetrics = 2;
    get.sample1 = g.samples[g.newest];
    get.sample2 = g.samples[next];
    get.metrics[0].metricId = nvml::kGpmSmUtil;
    get.metrics[1].metricId = nvml::kGpmSmOccupancy;
    if (nvmlReturn_t rc = fn.GpmMetricsGet(&get); rc != nvml::kSuccess) {
      if (status.ok()) status = lib_.Error("nvmlGpmMetricsGet(" + what + ")", rc);
      g.sm_active.reset();
    } else {
      auto ratio = [](const nvmlGpmMetric_t& m) -> std::optional<double> {
        if (m.nvmlReturn != nvml::kSuccess || !(m.value >= 0)) return std::nullopt;
        return std::min(1.0, m.value / 100.0);
      };
      g.sm_active = ratio(get.metrics[0]);
      g.sm_occupancy = ratio(get.metrics[1]);
    }
  }
  g.newest = next;
  g.time_s = now_s;
}

Status GpuSampler::ListProcesses(Device& d, nvmlDevice_t handle, const std::string& what,
                                 std::vector<nvmlProcessInfo_t>& buffer, DeviceReading& out) {
  const nvml::Functions& fn = lib_.fn();
  unsigned int count = static_cast<unsigned int>(buffer.size());
  nvmlReturn_t rc = fn.DeviceGetComputeRunningProcesses(handle, &count, buffer.data());
  for (int tries = 0; rc == nvml::kInsufficientSize && tries < 3; ++tries) {
    buffer.resize(count + 8);  // room for processes that start meanwhile
    count = static_cast<unsigned int>(buffer.size());
    rc = fn.DeviceGetComputeRunningProcesses(handle, &count, buffer.data());
  }
  if (rc != nvml::kSuccess)
    return lib_.Error("nvmlDeviceGetComputeRunningProcesses_v3(" + what + ")", rc);
  out.processes.reserve(out.processes.size() + count);
  for (unsigned int i = 0; i < count; ++i) {
    const nvmlProcessInfo_t& info = buffer[i];
    ProcessReading p;
    p.pid = info.pid;
    p.gpu_instance = info.gpuInstanceId;
    p.memory_used_bytes = static_cast<double>(info.usedGpuMemory);
    ProcessState& st = d.processes[info.pid];
    st.seen_this_pass = true;
    if (!st.named) {
      st.named = true;
      st.mps_server = IsMpsServer(info.pid);
    }
    p.mps_server = st.mps_server;
    out.processes.push_back(p);
  }
  return OkStatus();
}

Status GpuSampler::ReadProcesses(Device& d, DeviceReading& out) {
  for (auto& [pid, state] : d.processes) state.seen_this_pass = false;
  Status s = ListProcesses(d, d.handle, d.uuid, d.info_buffer, out);
  if (!s.ok()) return s;
  // Processes that ended forget what was learned of them (a pid may be reused).
  std::erase_if(d.processes, [](const auto& kv) { return !kv.second.seen_this_pass; });
  return OkStatus();
}

bool GpuSampler::IsMpsServer(unsigned int pid) const {
  const nvml::Functions& fn = lib_.fn();
  char name[256] = {};
  if (fn.SystemGetProcessName == nullptr ||
      fn.SystemGetProcessName(pid, name, sizeof name) != nvml::kSuccess)
    return false;
  std::string_view base(name);
  if (const size_t slash = base.rfind('/'); slash != std::string_view::npos)
    base.remove_prefix(slash + 1);
  return std::find(options_.mps_server_names.begin(), options_.mps_server_names.end(), base) !=
         options_.mps_server_names.end();
}

void GpuSampler::ReadBusyTime(Device& d, DeviceReading& out) {
  const nvml::Functions& fn = lib_.fn();
  unsigned int count = 0;
  nvmlReturn_t rc = fn.DeviceGetProcessUtilization(d.handle, nullptr, &count, d.last_seen_us);
  // Asked for the count first (a null buffer), then read; samples that arrive in between get
  // a few more tries with room to spare.
  for (int tries = 0;
       tries < 3 && (rc == nvml::kInsufficientSize || (rc == nvml::kSuccess && count > 0));
       ++tries) {
    d.util_buffer.resize(count + 8);
    count = static_cast<unsigned int>(d.util_buffer.size());
    rc = fn.DeviceGetProcessUtilization(d.handle, d.util_buffer.data(), &count, d.last_seen_us);
    if (rc == nvml::kSuccess) break;
  }
  std::map<unsigned int, unsigned int> sampled;  // pid → smUtil of its newest sample
  if (rc == nvml::kSuccess) {
    std::map<unsigned int, unsigned long long> newest;
    for (unsigned int i = 0; i < count && i < d.util_buffer.size(); ++i) {
      const nvmlProcessUtilizationSample_t& s = d.util_buffer[i];
      d.last_seen_us = std::max(d.last_seen_us, s.timeStamp);
      if (s.timeStamp >= newest[s.pid]) {
        newest[s.pid] = s.timeStamp;
        sampled[s.pid] = std::min(100u, s.smUtil);
      }
    }
  } else if (rc != nvml::kNotFound && out.status.ok()) {
    // NOT_FOUND: no sample newer than the timestamp, which is news, not an error.
    out.status = lib_.Error("nvmlDeviceGetProcessUtilization(" + d.uuid + ")", rc);
  }
  for (ProcessReading& p : out.processes) {
    ProcessState& st = d.processes[p.pid];
    if (auto it = sampled.find(p.pid); it != sampled.end()) {
      st.busy_ratio = it->second / 100.0;
      st.ever_sampled = true;
      st.missing_polls = 0;
      p.busy_basis = BusyBasis::kSampled;
    } else if (++st.missing_polls >= options_.idle_after_missing_polls) {
      st.busy_ratio = 0;
      p.busy_basis = BusyBasis::kConfirmedIdle;
    } else {
      p.busy_basis = st.ever_sampled ? BusyBasis::kHeld : BusyBasis::kUnknown;
    }
    p.busy_ratio = st.busy_ratio;
  }
}

void GpuSampler::AttributeMps(const DeviceReading& device, std::vector<ProcessReading*>& clients,
                              std::vector<ProcessReading*>& servers) {
  for (ProcessReading* p : servers) {
    p->method = "mps-server";
    p->sm_active_ratio.reset();
  }
  for (ProcessReading* p : clients) {
    // NVML samples only the server: a client's busy time is unknown, not idle.
    p->busy_basis = BusyBasis::kUnknown;
    p->busy_ratio = 0;
    if (!device.sm_active_ratio) {
      p->method = "mps-unattributed";
      continue;
    }
    SplitEqually(*p, *device.sm_active_ratio, clients.size(), "mps-equal-split");
  }
}

void GpuSampler::AttributeSm(Device& d, DeviceReading& out) {
  // Two lists only on a device under MPS: the common pass allocates nothing for it.
  if (std::any_of(out.processes.begin(), out.processes.end(),
                  [](const ProcessReading& p) { return p.mps_server; })) {
    std::vector<ProcessReading*> clients, servers;
    for (ProcessReading& p : out.processes) (p.mps_server ? servers : clients).push_back(&p);
    AttributeMps(out, clients, servers);
    return;
  }
  std::vector<ProcessReading*> busy;
  bool all_calibrated = true;
  for (ProcessReading& p : out.processes) {
    if (!out.sm_active_ratio) {
      p.method = "busy-time-only";
      continue;
    }
    if (p.busy_basis == BusyBasis::kUnknown) {
      p.method = "unknown";
      continue;
    }
    if (p.busy_ratio <= 0) {
      p.sm_active_ratio = 0;
      p.method = "idle";
      continue;
    }
    busy.push_back(&p);
    all_calibrated = all_calibrated && d.processes[p.pid].solo_passes >= options_.min_solo_passes;
  }
  if (busy.empty()) return;
  const double device_sm = *out.sm_active_ratio;
  if (busy.size() == 1) {
    ProcessReading& p = *busy.front();
    p.sm_active_ratio = std::min(device_sm, 1.0);
    p.sm_active_lower_ratio = p.sm_active_upper_ratio = *p.sm_active_ratio;
    p.method = "alone";
    ProcessState& st = d.processes[p.pid];
    if (p.busy_basis == BusyBasis::kSampled && p.busy_ratio >= options_.min_busy_for_coverage) {
      const double coverage = std::min(1.0, device_sm / p.busy_ratio);
      st.coverage = st.solo_passes == 0
                        ? coverage
                        : st.coverage + options_.coverage_smoothing * (coverage - st.coverage);
      ++st.solo_passes;
    }
    return;
  }
  double total_weight = 0, total_upper = 0;
  for (ProcessReading* p : busy) {
    const double weight =
        all_calibrated ? p->busy_ratio * d.processes[p->pid].coverage : p->busy_ratio;
    p->sm_active_ratio = weight;  // the weight for now
    total_weight += weight;
    p->sm_active_upper_ratio = std::min(p->busy_ratio, device_sm);
    total_upper += p->sm_active_upper_ratio;
  }
  for (ProcessReading* p : busy) {
    const double share = total_weight > 0 ? *p->sm_active_ratio / total_weight : 0;
    p->sm_active_lower_ratio =
        std::min(p->sm_active_upper_ratio,
                 std::max(0.0, device_sm - (total_upper - p->sm_active_upper_ratio)));
    p->sm_active_ratio =
        std::clamp(device_sm * share, p->sm_active_lower_ratio, p->sm_active_upper_ratio);
    p->method = all_calibrated ? "solo-calibrated" : "busy-proportional";
  }
}

}  // namespace gpuvpa::agent
