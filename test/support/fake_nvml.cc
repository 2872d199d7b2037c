// A fake libnvidia-ml.so.1 for tests and benchmarks: the functions the node agent resolves,
// answering from a recording of a real GPU replayed in time, or from a synthetic node.
//   FAKE_NVML_DIR=<dir>     replay nvml_device.csv, nvml_process.csv, nvml_gpm.csv (the
//                           H200 recordings of shared/data/fixtures/nvml-h200/): one device
//   FAKE_NVML_SYNTHETIC=DxP D devices with P processes each, steady readings (benchmarks)
//   FAKE_NVML_START=<t>     replay clock at nvmlInit (default: the first device row)
//   FAKE_NVML_SPEED=<x>     replay seconds per wall second (default 1)
//   FAKE_NVML_FAIL=f=c,...  function f returns code c (e.g. nvmlDeviceGetMemoryInfo=15)
//   FAKE_NVML_NO_GPM=1      GPM not supported
//   FAKE_NVML_NAME=<name>   the product name (default "NVIDIA H200", the recording's)
//   FAKE_NVML_PROCESS_NAMES=<pid>=<name>,...  process names (default "python3")
//   FAKE_NVML_MIG=<gi>:<profile>:<sm %>:<pid>:<MiB>,...  GPU 0 in MIG mode (see nvmlInit_v2)
// Tests may pin the clock: fakeNvmlSetTime(t) (resolved with dlsym) stops the wall clock.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "recommender/agent/nvml_abi.h"

// The opaque handles of the ABI, defined here.
struct nvmlDevice_st {
  int index;
  int mig = -1;  // a MIG device: the slot of its instance on GPU `index`
};
struct nvmlGpmSample_st {
  double t;
  int device;
  int gpu_instance = -1;
};

namespace {

namespace nv = gpuvpa::nvml;

struct DeviceRow {
  double t, used_mib, total_mib, util;
};
struct ProcessRow {
  double t;
  unsigned pid;
  double used_mib;  // < 0: not in the memory list
  int sm;           // < 0: no utilization sample
};
struct GpmRow {
  double t, sm_active, sm_occupancy;
};

// A MIG instance of GPU 0 (FAKE_NVML_MIG) and its processes.
struct MigInstance {
  unsigned gi = 0;
  std::string profile;
  double sm_pct = 0;
  std::vector<std::pair<unsigned, double>> processes;  // pid, MiB
};

struct State {
  bool initialised = false;
  bool synthetic = false;
  int devices = 1, processes_per_device = 0;
  std::vector<DeviceRow> device_rows;
  std::vector<ProcessRow> process_rows;
  std::vector<GpmRow> gpm_rows;
  std::map<std::string, int> fail;
  bool gpm = true;
  std::vector<MigInstance> mig;  // GPU 0 in MIG mode when not empty
  double start = 0, speed = 1, wall0 = 0;
  bool pinned = false;
  double pinned_time = 0;
};

std::mutex mu;
State state;
nvmlDevice_st device_handles[64];
nvmlDevice_st mig_handles[7];

double Wall() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
double Now() {
  return state.pinned ? state.pinned_time : state.start + (Wall() - state.wall0) * state.speed;
}

double Field(const std::string& s) { return s.empty() || s == "nan" ? -1 : std::atof(s.c_str()); }

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

int Failure(const char* name) {
  auto it = state.fail.find(name);
  return it == state.fail.end() ? nv::kSuccess : it->second;
}

#define FAKE_GUARD(name)                             \
  std::lock_guard<std::mutex> lock(mu);              \
  if (!state.initialised) return nv::kUninitialized; \
  if (int rc = Failure(name); rc != nv::kSuccess) return rc;

bool ValidDevice(nvmlDevice_t d) {
  return d != nullptr && d >= device_handles && d < device_handles + state.devices;
}
bool ValidMig(nvmlDevice_t d) {
  return d != nullptr && d >= mig_handles && d < mig_handles + state.mig.size();
}
bool InMigMode(nvmlDevice_t d) { return ValidDevice(d) && d->index == 0 && !state.mig.empty(); }

// The latest row at or before `t` (rows sorted by time); null before the first.
template <typename Row>
const Row* AtOrBefore(const std::vector<Row>& rows, double t) {
  auto it =
      std::upper_bound(rows.begin(), rows.end(), t, [](double v, const Row& r) { return v < r.t; });
  return it == rows.begin() ? nullptr : &*(it - 1);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fakeNvmlSetTime(double t) {
  std::lock_guard<std::mutex> lock(mu);
  state.pinned = true;
  state.pinned_time = t;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(mu);
  state = State{};
  if (const char* f = std::getenv("FAKE_NVML_FAIL")) {
    std::stringstream ss(f);
    std::string item;
    while (std::getline(ss, item, ','))
      if (size_t eq = item.find('='); eq != std::string::npos)
        state.fail[item.substr(0, eq)] = std::atoi(item.c_str() + eq + 1);
  }
  if (int rc = Failure("nvmlInit_v2"); rc != nv::kSuccess) return rc;
  state.gpm = std::getenv("FAKE_NVML_NO_GPM") == nullptr;
  if (const char* spec = std::getenv("FAKE_NVML_SYNTHETIC")) {
    state.synthetic = true;
    if (std::sscanf(spec, "%dx%d", &state.devices, &state.processes_per_device) != 2 ||
        state.devices < 1 || state.devices > 64 || state.processes_per_device < 0)
      return nv::kInvalidArgument;
  } else if (const char* dir = std::getenv("FAKE_NVML_DIR")) {
    const std::string d = dir;
    for (const auto& r : ReadCsv(d + "/nvml_device.csv"))
      if (r.size() >= 4)
        state.device_rows.push_back({Field(r[0]), Field(r[1]), Field(r[2]), Field(r[3])});
    for (const auto& r : ReadCsv(d + "/nvml_process.csv"))
      if (r.size() >= 4)
        state.process_rows.push_back({Field(r[0]), static_cast<unsigned>(std::atoi(r[1].c_str())),
                                      Field(r[2]), r[3].empty() ? -1 : std::atoi(r[3].c_str())});
    for (const auto& r : ReadCsv(d + "/nvml_gpm.csv"))
      if (r.size() >= 3) state.gpm_rows.push_back({Field(r[0]), Field(r[1]), Field(r[2])});
    if (state.device_rows.empty()) return nv::kDriverNotLoaded;
    state.start = state.device_rows.front().t;
  } else {
    return nv::kDriverNotLoaded;
  }
  // FAKE_NVML_MIG=<gi>:<profile>:<sm %>:<pid>:<MiB>,... GPU 0 in MIG mode with these instances
  // (an item per process; pid 0: an instance without one).
  if (const char* spec = std::getenv("FAKE_NVML_MIG")) {
    std::stringstream list(spec);
    std::string item;
    while (std::getline(list, item, ',')) {
      unsigned gi = 0, pid = 0;
      char profile[32] = {};
      double sm = 0, mib = 0;
      if (std::sscanf(item.c_str(), "%u:%31[^:]:%lf:%u:%lf", &gi, profile, &sm, &pid, &mib) != 5)
        return nv::kInvalidArgument;
      auto it = std::find_if(state.mig.begin(), state.mig.end(),
                             [&](const MigInstance& m) { return m.gi == gi; });
      if (it == state.mig.end()) {
        if (state.mig.size() == 7) return nv::kInvalidArgument;
        it = state.mig.insert(state.mig.end(), MigInstance{gi, profile, sm, {}});
      }
      if (pid != 0) it->processes.emplace_back(pid, mib);
    }
    for (size_t i = 0; i < 7; ++i) mig_handles[i] = {0, static_cast<int>(i)};
  }
  if (const char* s = std::getenv("FAKE_NVML_START")) state.start = std::atof(s);
  if (const char* s = std::getenv("FAKE_NVML_SPEED")) state.speed = std::atof(s);
  state.wall0 = Wall();
  for (int i = 0; i < 64; ++i) device_handles[i].index = i;
  state.initialised = true;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(mu);
  state.initialised = false;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case nv::kSuccess:
      return "Success";
    case nv::kNotSupported:
      return "Not Supported";
    case nv::kNotFound:
      return "Not Found";
    case nv::kGpuIsLost:
      return "GPU is lost";
    case nv::kInsufficientSize:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_GUARD("nvmlDeviceGetCount_v2");
  *count = static_cast<unsigned>(state.devices);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(
    unsigned int index, nvmlDevice_t* device) {
  FAKE_GUARD("nvmlDeviceGetHandleByIndex_v2");
  if (index >= static_cast<unsigned>(state.devices)) return nv::kInvalidArgument;
  *device = &device_handles[index];
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid,
                                                                      unsigned int length) {
  FAKE_GUARD("nvmlDeviceGetUUID");
  if (ValidMig(d)) {
    std::snprintf(uuid, length, "MIG-fa4e0000-0000-4000-8000-%012u", state.mig[d->mig].gi);
    return nv::kSuccess;
  }
  if (!ValidDevice(d)) return nv::kInvalidArgument;
  std::snprintf(uuid, length, "GPU-fa4e0000-0000-4000-8000-%012d", d->index);
  return nv::kSuccess;
}

// FAKE_NVML_PROCESS_NAMES=<pid>=<name>,... names processes (others are "python3"), e.g. the
// MPS recording's server: 488=nvidia-cuda-mps-server.
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid,
                                                                             char* name,
                                                                             unsigned int length) {
  FAKE_GUARD("nvmlSystemGetProcessName");
  if (name == nullptr || length == 0) return nv::kInvalidArgument;
  std::string found = "python3";
  if (const char* names = std::getenv("FAKE_NVML_PROCESS_NAMES")) {
    std::stringstream list(names);
    std::string item;
    while (std::getline(list, item, ','))
      if (const size_t eq = item.find('=');
          eq != std::string::npos && item.substr(0, eq) == std::to_string(pid))
        found = item.substr(eq + 1);
  }
  std::snprintf(name, length, "%s", found.c_str());
  return nv::kSuccess;
}

// FAKE_NVML_NAME overrides the recorded GPU's product name.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name,
                                                                      unsigned int length) {
  FAKE_GUARD("nvmlDeviceGetName");
  if (!ValidDevice(d) && !ValidMig(d)) return nv::kInvalidArgument;
  const char* override_name = std::getenv("FAKE_NVML_NAME");
  const std::string base = override_name != nullptr ? override_name : "NVIDIA H200";
  std::snprintf(name, length, "%s",
                ValidMig(d) ? (base + " MIG " + state.mig[d->mig].profile).c_str() : base.c_str());
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d,
                                                                            nvmlMemory_t* m) {
  FAKE_GUARD("nvmlDeviceGetMemoryInfo");
  const double mib = 1024.0 * 1024.0;
  if (ValidMig(d)) {
    // The profile's name in GB ("1g.18gb": 18e9 bytes, a little above what NVML reports).
    const MigInstance& in = state.mig[d->mig];
    const size_t dot = in.profile.find('.');
    m->total = static_cast<unsigned long long>(
        dot == std::string::npos ? 0 : std::atof(in.profile.c_str() + dot + 1) * 1e9);
    double used = 0;
    for (const auto& [pid, used_mib] : in.processes) used += used_mib * mib;
    m->used = static_cast<unsigned long long>(used);
    m->free = m->total - std::min(m->total, m->used);
    return nv::kSuccess;
  }
  if (!ValidDevice(d)) return nv::kInvalidArgument;
  if (state.synthetic) {
    m->total = static_cast<unsigned long long>(143771 * mib);
    m->used = static_cast<unsigned long long>(state.processes_per_device * 512 * mib);
  } else {
    const DeviceRow* r = AtOrBefore(state.device_rows, Now());
    if (r == nullptr) r = &state.device_rows.front();
    m->total = static_cast<unsigned long long>(r->total_mib * mib);
    m->used = static_cast<unsigned long long>(r->used_mib * mib);
  }
  m->free = m->total - std::min(m->total, m->used);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t d, nvmlUtilization_t* u) {
  FAKE_GUARD("nvmlDeviceGetUtilizationRates");
  if (!ValidDevice(d)) return nv::kInvalidArgument;
  if (InMigMode(d)) return nv::kNotSupported;  // as on a real GPU in MIG mode
  if (state.synthetic) {
    *u = {60, 20};
  } else {
    const DeviceRow* r = AtOrBefore(state.device_rows, Now());
    *u = {r ? static_cast<unsigned>(r->util) : 0u, 0u};
  }
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t d, unsigned int* count, nvmlProcessInfo_t* infos) {
  FAKE_GUARD("nvmlDeviceGetComputeRunningProcesses_v3");
  if ((!ValidDevice(d) && !ValidMig(d)) || count == nullptr) return nv::kInvalidArgument;
  // In MIG mode the GPU's own handle answers only to the privileged; a MIG device lists its own.
  if (InMigMode(d)) return nv::kNoPermission;
  std::vector<nvmlProcessInfo_t> list;
  const double mib = 1024.0 * 1024.0;
  if (ValidMig(d)) {
    const MigInstance& in = state.mig[d->mig];
    for (const auto& [pid, used_mib] : in.processes)
      list.push_back({pid, static_cast<unsigned long long>(used_mib * mib), in.gi, 0, 0});
  } else if (state.synthetic) {
    for (int p = 0; p < state.processes_per_device; ++p)
      list.push_back({static_cast<unsigned>(10000 + d->index * state.processes_per_device + p),
                      static_cast<unsigned long long>((p + 1) * 256 * mib), nv::kNoGpuInstance,
                      nv::kNoGpuInstance, 0});
  } else if (const ProcessRow* latest = AtOrBefore(state.process_rows, Now())) {
    // The processes listed at the latest recorded sampling tick.
    for (const ProcessRow& r : state.process_rows)
      if (std::fabs(r.t - latest->t) < 1e-6 && r.used_mib >= 0)
        list.push_back({r.pid, static_cast<unsigned long long>(r.used_mib * mib),
                        nv::kNoGpuInstance, nv::kNoGpuInstance, 0});
  }
  const unsigned have = *count;
  *count = static_cast<unsigned>(list.size());
  if (have < list.size()) return nv::kInsufficientSize;
  std::copy(list.begin(), list.end(), infos);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t d, nvmlProcessUtilizationSample_t* samples, unsigned int* count,
    unsigned long long last_seen_us) {
  FAKE_GUARD("nvmlDeviceGetProcessUtilization");
  if (!ValidDevice(d) || count == nullptr) return nv::kInvalidArgument;
  if (InMigMode(d)) return nv::kNotSupported;
  std::vector<nvmlProcessUtilizationSample_t> list;
  const unsigned long long now_us = static_cast<unsigned long long>(Now() * 1e6);
  if (state.synthetic) {
    if (now_us > last_seen_us)
      for (int p = 0; p < state.processes_per_device; ++p)
        list.push_back({static_cast<unsigned>(10000 + d->index * state.processes_per_device + p),
                        now_us, static_cast<unsigned>((p * 13) % 60 + 1), 5, 0, 0});
  } else {
    for (const ProcessRow& r : state.process_rows) {
      const unsigned long long t_us = static_cast<unsigned long long>(r.t * 1e6);
      if (r.sm >= 0 && t_us > last_seen_us && t_us <= now_us)
        list.push_back({r.pid, t_us, static_cast<unsigned>(r.sm), 0, 0, 0});
    }
  }
  if (list.empty()) return nv::kNotFound;
  const unsigned have = samples == nullptr ? 0 : *count;
  *count = static_cast<unsigned>(list.size());
  if (have < list.size()) return nv::kInsufficientSize;
  std::copy(list.begin(), list.end(), samples);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmQueryDeviceSupport(
    nvmlDevice_t d, nvmlGpmSupport_t* support) {
  FAKE_GUARD("nvmlGpmQueryDeviceSupport");
  if (!ValidDevice(d) || support == nullptr || support->version != nv::kGpmSupportVersion)
    return nv::kInvalidArgument;
  support->isSupportedDevice = state.gpm ? 1 : 0;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  FAKE_GUARD("nvmlGpmSampleAlloc");
  *s = new nvmlGpmSample_st{0, -1};
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  std::lock_guard<std::mutex> lock(mu);
  delete s;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d,
                                                                     nvmlGpmSample_t s) {
  FAKE_GUARD("nvmlGpmSampleGet");
  if (!ValidDevice(d) || s == nullptr) return nv::kInvalidArgument;
  if (!state.gpm) return nv::kNotSupported;
  s->t = Now();
  s->device = d->index;
  s->gpu_instance = -1;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d,
                                                                         unsigned int* current,
                                                                         unsigned int* pending) {
  FAKE_GUARD("nvmlDeviceGetMigMode");
  if (!ValidDevice(d) || current == nullptr || pending == nullptr) return nv::kInvalidArgument;
  *current = *pending = InMigMode(d) ? 1 : 0;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(
    nvmlDevice_t d, unsigned int* count) {
  FAKE_GUARD("nvmlDeviceGetMaxMigDeviceCount");
  if (!ValidDevice(d) || count == nullptr) return nv::kInvalidArgument;
  *count = 7;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(
    nvmlDevice_t d, unsigned int index, nvmlDevice_t* mig) {
  FAKE_GUARD("nvmlDeviceGetMigDeviceHandleByIndex");
  if (!InMigMode(d) || mig == nullptr || index >= 7) return nv::kInvalidArgument;
  if (index >= state.mig.size()) return nv::kNotFound;
  *mig = &mig_handles[index];
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d,
                                                                               unsigned int* id) {
  FAKE_GUARD("nvmlDeviceGetGpuInstanceId");
  if (!ValidMig(d) || id == nullptr) return nv::kInvalidArgument;
  *id = state.mig[d->mig].gi;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d,
                                                                        unsigned int gi,
                                                                        nvmlGpmSample_t s) {
  FAKE_GUARD("nvmlGpmMigSampleGet");
  if (!InMigMode(d) || s == nullptr) return nv::kInvalidArgument;
  if (!state.gpm) return nv::kNotSupported;
  if (std::none_of(state.mig.begin(), state.mig.end(),
                   [&](const MigInstance& m) { return m.gi == gi; }))
    return nv::kNotFound;
  s->t = Now();
  s->device = d->index;
  s->gpu_instance = static_cast<int>(gi);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  FAKE_GUARD("nvmlGpmMetricsGet");
  if (get == nullptr || get->version != nv::kGpmMetricsGetVersion || get->sample1 == nullptr ||
      get->sample2 == nullptr || get->sample1->device != get->sample2->device ||
      get->sample1->gpu_instance != get->sample2->gpu_instance ||
      get->numMetrics > sizeof get->metrics / sizeof get->metrics[0])
    return nv::kInvalidArgument;
  const double t1 = get->sample1->t, t2 = get->sample2->t;
  // Each recorded row is the metric over the interval since the row before it: average the
  // rows inside (t1, t2], or take the one whose interval covers it.
  double sm = 0, occ = 0;
  if (get->sample1->gpu_instance >= 0) {  // a MIG instance's own activity
    for (const MigInstance& m : state.mig)
      if (static_cast<int>(m.gi) == get->sample1->gpu_instance) sm = m.sm_pct;
    occ = sm / 2;
  } else if (state.synthetic) {
    sm = 50;
    occ = 20;
  } else {
    int n = 0;
    for (const GpmRow& r : state.gpm_rows)
      if (r.t > t1 && r.t <= t2 && r.sm_active >= 0) {
        sm += r.sm_active;
        occ += r.sm_occupancy;
        ++n;
      }
    if (n == 0) {
      auto it = std::find_if(state.gpm_rows.begin(), state.gpm_rows.end(),
                             [&](const GpmRow& r) { return r.t > t2; });
      // Past the end of the recording the device is idle.
      sm = it == state.gpm_rows.end() ? 0 : it->sm_active;
      occ = it == state.gpm_rows.end() ? 0 : it->sm_occupancy;
    } else {
      sm /= n;
      occ /= n;
    }
  }
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    nvmlGpmMetric_t& m = get->metrics[i];
    m.nvmlReturn = nv::kSuccess;
    if (m.metricId == nv::kGpmSmUtil)
      m.value = sm;
    else if (m.metricId == nv::kGpmSmOccupancy)
      m.value = occ;
    else
      m.nvmlReturn = nv::kNotSupported;
  }
  return nv::kSuccess;
}

}  // extern "C"
