// NVML passes over a node's GPUs: see gpu_sampler.h.
#include "recommender/agent/gpu_sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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
  for (Device& d : devices_)
    for (nvmlGpmSample_t s : d.gpm_samples)
      if (s != nullptr) lib_.fn().GpmSampleFree(s);
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
    if (fn.GpmQueryDeviceSupport != nullptr) {
      nvmlGpmSupport_t support{};
      support.version = nvml::kGpmSupportVersion;
      d.gpm = fn.GpmQueryDeviceSupport(d.handle, &support) == nvml::kSuccess &&
              support.isSupportedDevice != 0 &&
              fn.GpmSampleAlloc(&d.gpm_samples[0]) == nvml::kSuccess &&
              fn.GpmSampleAlloc(&d.gpm_samples[1]) == nvml::kSuccess;
    }
  }
  return OkStatus();
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
  nvmlUtilization_t util{};
  if (nvmlReturn_t rc = fn.DeviceGetUtilizationRates(d.handle, &util); rc == nvml::kSuccess)
    out.busy_ratio = std::min(100u, util.gpu) / 100.0;
  else
    note(lib_.Error("nvmlDeviceGetUtilizationRates(" + d.uuid + ")", rc));
  SampleGpm(d, now_s, out);
  if (Status s = ReadProcesses(d, out); !s.ok()) {
    note(std::move(s));
    return;  // no process list: no per-process figures this pass
  }
  ReadBusyTime(d, out);
  AttributeSm(d, out);
}

void GpuSampler::SampleGpm(Device& d, double now_s, DeviceReading& out) {
  if (!d.gpm) return;
  const nvml::Functions& fn = lib_.fn();
  if (d.gpm_newest < 0 || now_s - d.gpm_time_s >= options_.min_gpm_interval_s) {
    const int next = d.gpm_newest < 0 ? 0 : 1 - d.gpm_newest;
    if (nvmlReturn_t rc = fn.GpmSampleGet(d.handle, d.gpm_samples[next]); rc != nvml::kSuccess) {
      const Status s = lib_.Error("nvmlGpmSampleGet(" + d.uuid + ")", rc);
      if (rc == nvml::kNoPermission || rc == nvml::kNotSupported) {
        // A refusal that every later pass would repeat (a driver that keeps GPM to admins, a
        // vGPU without it): said once, and this device's SM figures are busy time from now on.
        spdlog::warn(
            "{}: SM activity of this GPU is not read from now on; its processes' SM "
            "figures are busy time (method busy-time-only)",
            s.message());
        d.gpm = false;
        d.sm_active.reset();
        d.sm_occupancy.reset();
        return;
      }
      if (out.status.ok()) out.status = s;
      return;
    }
    if (d.gpm_newest >= 0) {
      nvmlGpmMetricsGet_t get{};
      get.version = nvml::kGpmMetricsGetVersion;
      get.numMetrics = 2;
      get.sample1 = d.gpm_samples[d.gpm_newest];
      get.sample2 = d.gpm_samples[next];
      get.metrics[0].metricId = nvml::kGpmSmUtil;
      get.metrics[1].metricId = nvml::kGpmSmOccupancy;
      if (nvmlReturn_t rc = fn.GpmMetricsGet(&get); rc != nvml::kSuccess) {
        if (out.status.ok()) out.status = lib_.Error("nvmlGpmMetricsGet(" + d.uuid + ")", rc);
        d.sm_active.reset();
      } else {
        auto ratio = [](const nvmlGpmMetric_t& m) -> std::optional<double> {
          if (m.nvmlReturn != nvml::kSuccess || !(m.value >= 0)) return std::nullopt;
          return std::min(1.0, m.value / 100.0);
        };
        d.sm_active = ratio(get.metrics[0]);
        d.sm_occupancy = ratio(get.metrics[1]);
      }
    }
    d.gpm_newest = next;
    d.gpm_time_s = now_s;
  }
  out.sm_active_ratio = d.sm_active;
  out.sm_occupancy_ratio = d.sm_occupancy;
}

Status GpuSampler::ReadProcesses(Device& d, DeviceReading& out) {
  const nvml::Functions& fn = lib_.fn();
  unsigned int count = static_cast<unsigned int>(d.info_buffer.size());
  nvmlReturn_t rc = fn.DeviceGetComputeRunningProcesses(d.handle, &count, d.info_buffer.data());
  for (int tries = 0; rc == nvml::kInsufficientSize && tries < 3; ++tries) {
    d.info_buffer.resize(count + 8);  // room for processes that start meanwhile
    count = static_cast<unsigned int>(d.info_buffer.size());
    rc = fn.DeviceGetComputeRunningProcesses(d.handle, &count, d.info_buffer.data());
  }
  if (rc != nvml::kSuccess)
    return lib_.Error("nvmlDeviceGetComputeRunningProcesses_v3(" + d.uuid + ")", rc);
  for (auto& [pid, state] : d.processes) state.seen_this_pass = false;
  out.processes.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    const nvmlProcessInfo_t& info = d.info_buffer[i];
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
    const double sm = std::min(1.0, *device.sm_active_ratio);
    const bool alone = clients.size() == 1;
    p->sm_active_ratio = alone ? sm : sm / static_cast<double>(clients.size());
    p->sm_active_lower_ratio = alone ? sm : 0;
    p->sm_active_upper_ratio = sm;
    p->method = alone ? "alone" : "mps-equal-split";
  }
}

void GpuSampler::AttributeSm(Device& d, DeviceReading& out) {
  std::vector<ProcessReading*> clients, servers;
  for (ProcessReading& p : out.processes) (p.mps_server ? servers : clients).push_back(&p);
  if (!servers.empty()) {
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
