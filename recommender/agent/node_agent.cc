// The node agent's loop, owners and series: see node_agent.h.
#include "recommender/agent/node_agent.h"

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <map>
#include <tuple>

#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/net/metrics_page.h"
#include "recommender/agent/cgroup_path.h"

namespace gpuvpa::agent {
namespace {

// The per-device and per-container families, in the order the page lists them.
enum Family : char {
  kMemory,
  kBusy,
  kSm,
  kSmLower,
  kSmUpper,
  kDeviceSm,
  kDeviceBusy,
  kDeviceMemory,
  kDeviceUnallocated,
  kFamilies
};
struct FamilyText {
  const char* name;
  const char* help;
};
constexpr FamilyText kFamilyText[kFamilies] = {
    {"gpuvpa_container_gpu_memory_used_bytes",
     "GPU memory held by the container's processes on the device (NVML, per process)"},
    {"gpuvpa_container_gpu_busy_ratio",
     "Share of time the container had work on the device (NVML smUtil): busy time, not SM "
     "coverage"},
    {"gpuvpa_container_gpu_sm_active_ratio",
     "The container's share of the device's SM activity (GPM), by the method label"},
    {"gpuvpa_container_gpu_sm_active_lower_ratio",
     "The least SM activity the device's readings allow the container"},
    {"gpuvpa_container_gpu_sm_active_upper_ratio",
     "The most SM activity the device's readings allow the container"},
    {"gpuvpa_gpu_sm_active_ratio",
     "SM activity of the device or GPU instance (GPM SM_UTIL, = DCGM PROF_SM_ACTIVE)"},
    {"gpuvpa_gpu_busy_ratio", "util.gpu of the device: busy time"},
    {"gpuvpa_gpu_memory_used_bytes", "GPU memory used on the device"},
    {"gpuvpa_gpu_unallocated_processes",
     "Processes on the device whose container the kubelet did not allocate it to"},
};

std::string Instance(unsigned int gi) {
  return gi == nvml::kNoGpuInstance ? std::string() : std::to_string(gi);
}

}  // namespace

NodeAgent::NodeAgent(NodeAgentOptions options, std::unique_ptr<PodDirectory> pods)
    : options_(std::move(options)),
      pods_(std::move(pods)),
      registry_(std::make_shared<prometheus::Registry>()) {
  RegisterBuildInfo(*registry_, "node-agent");
  prometheus::Registry& r = *registry_;
  poll_errors_ = &prometheus::BuildCounter()
                      .Name("gpuvpa_node_agent_poll_errors_total")
                      .Help("NVML passes in which a device call failed")
                      .Register(r)
                      .Add({});
  unresolved_ = &prometheus::BuildGauge()
                     .Name("gpuvpa_node_agent_unresolved_processes")
                     .Help(
                         "GPU processes in a pod the Kubernetes API did not name (their series "
                         "carry pod_uid and container_id only)")
                     .Register(r)
                     .Add({});
}

Status NodeAgent::Start() {
  Result<std::unique_ptr<nvml::Library>> lib = nvml::Library::Open(options_.nvml_library);
  if (!lib.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    not_ready_ = lib.status().message();
    return lib.status();
  }
  auto sampler = std::make_unique<GpuSampler>(**lib, options_.sampler);
  if (Status s = sampler->Init(); !s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    not_ready_ = s.message();
    return s;
  }
  spdlog::info("NVML loaded from {}: {} device(s)", options_.nvml_library, sampler->device_count());
  library_ = std::move(*lib);
  sampler_ = std::move(sampler);
  return OkStatus();
}

NodeAgent::Owner NodeAgent::OwnerOf(unsigned int pid, const std::string& device_uuid,
                                    double now_s) {
  Owner owner;
  if (options_.label_by == LabelBy::kPid) {
    owner.pid = std::to_string(pid);
    return owner;
  }
  auto [cached, added] = cgroups_.try_emplace(pid);
  cached->second.second = pass_;
  if (added) {
    Result<std::string> text =
        ReadWholeFile(options_.proc_root + "/" + std::to_string(pid) + "/cgroup");
    if (!text.ok()) {
      cgroups_.erase(cached);  // the process ended, or is not visible (hostPID off): ask again
      return owner;
    }
    Result<std::optional<CgroupOwner>> parsed = ParseProcCgroup(*text);
    if (parsed.ok()) cached->second.first = *parsed;
  }
  const std::optional<CgroupOwner>& cgroup = cached->second.first;
  if (!cgroup) return owner;
  owner.pod_uid = cgroup->pod_uid;
  owner.container_id = cgroup->container_id;
  if (!pods_) return owner;
  std::optional<PodOwner> named = pods_->Find(owner.pod_uid, owner.container_id, now_s);
  if (!named) return owner;
  owner.ns = named->ns;
  owner.pod = named->pod;
  owner.container = named->container;
  if (owner.container.empty() && pod_devices_) {
    // The status does not name this container yet: the one container of the pod that holds
    // the device, if there is exactly one.
    std::string only;
    int holders = 0;
    for (const DeviceHolder& h : pod_devices_->HoldersOf(device_uuid))
      if (h.ns == owner.ns && h.pod == owner.pod && h.container != only) {
        only = h.container;
        ++holders;
      }
    if (holders == 1) owner.container = only;
  }
  return owner;
}

bool NodeAgent::Allocated(const Owner& owner, const std::string& device_uuid) const {
  if (!pod_devices_ || owner.pod.empty() || owner.container.empty()) return true;
  for (const DeviceHolder& h : pod_devices_->HoldersOf(device_uuid))
    if (h.ns == owner.ns && h.pod == owner.pod && h.container == owner.container) return true;
  return false;
}

void NodeAgent::RefreshPodResources(double now_s) {
  if (options_.pod_resources_socket.empty() ||
      now_s - pod_devices_at_s_ < options_.pod_resources_refresh_s)
    return;
  pod_devices_at_s_ = now_s;
  Result<PodDevices> table = ListPodDevices(options_.pod_resources_socket);
  if (!table.ok()) {
    // The last table stays: allocations change only when pods start or end.
    spdlog::warn("{}", table.status().message());
    return;
  }
  pod_devices_ = std::move(table).value();
}

Status NodeAgent::PollOnce(double now_s) {
  if (!sampler_) return UnavailableError("NVML is not loaded");
  const Snapshot snap = sampler_->Poll(now_s);
  Status first;
  for (const DeviceReading& d : snap.devices)
    if (!d.status.ok() && first.ok()) first = d.status;
  // Owners are found before the registry is locked: naming a new pod may ask the API.
  ++pass_;
  RefreshPodResources(now_s);
  std::vector<std::vector<Owner>> owners(snap.devices.size());
  double unresolved = 0;
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceReading& d = snap.devices[i];
    for (const ProcessReading& p : d.processes) {
      Owner& o = owners[i].emplace_back(OwnerOf(p.pid, d.HolderUuid(p), now_s));
      if (!o.pod_uid.empty() && pods_ && o.pod.empty()) ++unresolved;
    }
  }
  // Processes that left every GPU are read again if they come back (their pid may be reused).
  std::erase_if(cgroups_, [this](const auto& kv) { return kv.second.second != pass_; });
  {
    std::lock_guard<std::mutex> lock(mu_);
    Publish(snap, owners);
    unresolved_->Set(unresolved);
    if (!first.ok()) poll_errors_->Increment();
    // Ready once a pass read every device; a lost GPU makes the node not ready until it is back.
    not_ready_ = first.code() == StatusCode::kUnavailable ? first.message() : "";
  }
  last_poll_s_ = now_s;
  return first;
}

void NodeAgent::Publish(const Snapshot& snap, const std::vector<std::vector<Owner>>& owners) {
  std::string key;
  auto set = [&](Family family, const std::map<std::string, std::string>& labels, double value) {
    key.assign(1, family);
    for (const auto& [k, v] : labels) (key += v) += '\x1f';
    auto [it, added] = published_.try_emplace(key);
    Series& series = it->second;
    if (added) {
      // The series' name and labels are written once, when it appears.
      series.family = family;
      series.head = kFamilyText[family].name;
      const char* sep = "{";
      for (const auto& [k, v] : labels) {
        ((series.head += sep) += k) += "=\"";
        AppendEscapedLabelValue(series.head, v);
        series.head += '"';
        sep = ",";
      }
      series.head += "} ";
    }
    series.pass = pass_;
    series.value = value;
  };
  const bool by_pid = options_.label_by == LabelBy::kPid;
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceReading& d = snap.devices[i];
    std::map<std::string, std::string> dev = {
        {"gpu_uuid", d.uuid}, {"gpu_instance", ""}, {"gpu", std::to_string(d.index)}};
    if (!d.name.empty()) dev["model_name"] = d.name;
    if (!options_.node_name.empty()) dev["node"] = options_.node_name;
    set(kDeviceMemory, dev, d.memory_used_bytes);
    if (!d.mig) set(kDeviceBusy, dev, d.busy_ratio);  // NVML has no util.gpu in MIG mode
    if (d.sm_active_ratio) set(kDeviceSm, dev, *d.sm_active_ratio);
    // MIG instances: their memory and their own SM activity (a ratio of the instance's SMs).
    for (const InstanceReading& in : d.instances) {
      std::map<std::string, std::string> labels = dev;
      labels["gpu_instance"] = Instance(in.gpu_instance);
      labels["mig_uuid"] = in.uuid;
      if (!in.profile.empty()) labels["mig_profile"] = in.profile;
      set(kDeviceMemory, labels, in.memory_used_bytes);
      if (in.sm_active_ratio) set(kDeviceSm, labels, *in.sm_active_ratio);
    }
    // Processes of one owner and instance add up.
    struct Sum {
      double memory = 0, busy = 0, sm = 0, lower = 0, upper = 0;
      bool busy_known = false, sm_known = false;
    };
    std::map<std::tuple<Owner, std::string, std::string>, Sum> sums;  // owner, instance, method
    double unallocated = 0;
    for (size_t j = 0; j < d.processes.size(); ++j) {
      const ProcessReading& p = d.processes[j];
      const Owner& o = owners[i][j];
      // A MIG instance's holder is named by the instance's MIG UUID.
      if (const std::string& holder = d.HolderUuid(p); !Allocated(o, holder)) {
        ++unallocated;
        const std::string what = o.ns + "/" + o.pod + " container " + o.container + " on " + holder;
        if (warned_unallocated_.insert(what).second)
          spdlog::warn("pod {} uses a GPU the kubelet did not allocate to it (pid {})", what,
                       p.pid);
      }
      Sum& s = sums[{o, Instance(p.gpu_instance), p.method}];
      s.memory += p.memory_used_bytes;
      if (p.busy_basis != BusyBasis::kUnknown) {
        s.busy_known = true;
        s.busy = std::min(1.0, s.busy + p.busy_ratio);
      }
      if (p.sm_active_ratio) {
        s.sm_known = true;
        s.sm = std::min(1.0, s.sm + *p.sm_active_ratio);
        s.lower = std::min(1.0, s.lower + p.sm_active_lower_ratio);
        s.upper = std::min(1.0, s.upper + p.sm_active_upper_ratio);
      }
    }
    if (!options_.pod_resources_socket.empty()) set(kDeviceUnallocated, dev, unallocated);
    for (const auto& [key, s] : sums) {
      const auto& [o, instance, method] = key;
      std::map<std::string, std::string> labels = dev;
      labels["gpu_instance"] = instance;
      for (const InstanceReading& in : d.instances)
        if (Instance(in.gpu_instance) == instance) {
          labels["mig_uuid"] = in.uuid;
          if (!in.profile.empty()) labels["mig_profile"] = in.profile;
        }
      labels["namespace"] = o.ns;
      labels["pod"] = o.pod;
      labels["container"] = o.container;
      labels["method"] = method.empty() ? "none" : method;
      if (by_pid) {
        labels["pid"] = o.pid;
      } else {
        labels["pod_uid"] = o.pod_uid;
        labels["container_id"] = o.container_id;
      }
      set(kMemory, labels, s.memory);
      if (s.busy_known) set(kBusy, labels, s.busy);
      if (s.sm_known) {
        set(kSm, labels, s.sm);
        set(kSmLower, labels, s.lower);
        set(kSmUpper, labels, s.upper);
      }
    }
  }
  // Series of processes that ended, or figures that became unknown, leave the page.
  std::erase_if(published_, [this](const auto& kv) { return kv.second.pass != pass_; });
}

std::string NodeAgent::Page() const {
  std::string page = MetricsText(registry_->Collect());
  std::array<size_t, kFamilies> bytes{};
  for (const auto& [key, series] : published_) bytes[series.family] += series.head.size() + 24;
  size_t total = page.size();
  for (size_t b : bytes) total += b + 256;
  page.reserve(total);
  for (int f = 0; f < kFamilies; ++f) {
    AppendFamilyHeader(page, kFamilyText[f].name, kFamilyText[f].help, "gauge");
    if (bytes[static_cast<size_t>(f)] == 0) continue;
    for (const auto& [key, series] : published_) {
      if (series.family != f) continue;
      page += series.head;
      AppendMetricValue(page, series.value);
      page += '\n';
    }
  }
  return page;
}

void NodeAgent::Run() {
  const auto interval = std::chrono::duration<double>(options_.interval_s);
  while (!stop_) {
    if (!sampler_) {
      if (Status s = Start(); !s.ok()) spdlog::warn("{}", s.message());
    }
    if (sampler_) {
      if (Status s = PollOnce(UnixNowSeconds()); !s.ok()) spdlog::warn("{}", s.message());
    }
    std::unique_lock<std::mutex> lock(stop_mu_);
    stop_cv_.wait_for(lock, sampler_ ? interval : std::chrono::duration<double>(10),
                      [this] { return stop_.load(); });
  }
}

void NodeAgent::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
}

HttpServerResponse NodeAgent::HandleHttp(const std::string& path) {
  if (path == "/metrics") {
    std::lock_guard<std::mutex> lock(mu_);
    return {200, "text/plain; version=0.0.4; charset=utf-8", Page()};
  }
  if (path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
  if (path == "/readyz") {
    std::lock_guard<std::mutex> lock(mu_);
    if (!not_ready_.empty()) return {503, "text/plain; charset=utf-8", not_ready_ + "\n"};
    if (last_poll_s_.load() == 0) return {503, "text/plain; charset=utf-8", "no pass yet\n"};
    return {200, "text/plain; charset=utf-8", "ready\n"};
  }
  return {404, "text/plain; charset=utf-8", "not found\n"};
}

}  // namespace gpuvpa::agent
