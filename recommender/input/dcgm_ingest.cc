// DCGM + kube-state-metrics → fleet store samples.
#include "recommender/input/dcgm_ingest.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <unordered_map>

#include "core/base/names.h"
#include "core/base/workload_key.h"
#include "recommender/input/admission.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// DCGM's blank values start at DCGM_FP64_BLANK / DCGM_INT64_BLANK-range markers.
constexpr double kDcgmNoValue = 9223372036854775792.0;
constexpr size_t kMaxIssues = 20;

enum MetricKind {
  kVramKind = kSmSourceCount,
  kAgentVramKind,  // the node agent's per-container series (bytes, ratios)
  kAgentBusyKind,
  kAgentSmKind,
  kOtherKind
};

bool In(const std::vector<std::string>& names, const std::string& metric) {
  return std::find(names.begin(), names.end(), metric) != names.end();
}

std::string_view FirstLabel(const LabeledSeries& s, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (std::string_view v = s.Label(n); !v.empty()) return v;
  return {};
}

bool ParseIndex(std::string_view text, int& out) {
  if (text.empty() || text.size() > 4) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

void AddIssue(DcgmIngestReport& report, std::string text) {
  if (report.issues.size() < kMaxIssues) report.issues.push_back(std::move(text));
}

// Which usage metric a series is (an SmSource, kVramKind) or kOtherKind.
int KindOf(const DcgmNames& names, const std::string& metric) {
  if (In(names.vram_mib, metric)) return kVramKind;
  if (In(names.sm_active, metric)) return kSmActive;
  if (In(names.gr_engine_active, metric)) return kGrEngineActive;
  if (In(names.gpu_util_percent, metric)) return kGpuUtil;
  if (const NodeAgentNames& a = names.node_agent; a.enabled) {
    if (metric == a.memory_bytes) return kAgentVramKind;
    if (metric == a.busy_ratio) return kAgentBusyKind;
    if (metric == a.sm_active_ratio) return kAgentSmKind;
  }
  return kOtherKind;
}

int64_t TimeKey(double time_s) { return std::llround(time_s * 1000); }

// What the node agent's SM figure stands on, by its `method` label (gpu_sampler.h): "alone"
// and "idle" are measured, "mps-equal-split" and "mig-equal-split" are the device's (or
// instance's) measured activity split equally between its processes (an estimate, flagged as
// DCGM's equal split is).
struct AgentMethod {
  SmBasis basis;
  bool equal_split;
};
std::optional<AgentMethod> AgentMethodBasis(std::string_view method) {
  if (method == "alone" || method == "idle") return AgentMethod{SmBasis::kMeasured, false};
  if (method == "solo-calibrated") return AgentMethod{SmBasis::kSmActiveSoloCalibrated, false};
  if (method == "busy-proportional") return AgentMethod{SmBasis::kSmActiveByBusyShare, false};
  if (method == "mps-equal-split" || method == "mig-equal-split")
    return AgentMethod{SmBasis::kMeasured, true};
  return std::nullopt;
}

// The value of `series` at `time_s` (same millisecond), walking forward from `cursor`.
std::optional<double> ValueAt(const LabeledSeries& series, double time_s, size_t& cursor) {
  const int64_t key = TimeKey(time_s);
  while (cursor < series.points.size() && TimeKey(series.points[cursor].time_s) < key) ++cursor;
  if (cursor < series.points.size() && TimeKey(series.points[cursor].time_s) == key)
    return series.points[cursor].value;
  return std::nullopt;
}

}  // namespace

int WorkloadShard(const v1::WorkloadIdentity& id, int count) {
  std::string key;
  AssignWorkloadKey(key, id.namespace_name(), id.owner_kind(), id.owner_name(), id.container());
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return count <= 1 ? 0 : static_cast<int>(h % static_cast<uint64_t>(count));
}

const char* SmSourceName(SmSource source) {
  switch (source) {
    case kSmActive:
      return "sm_active";
    case kGrEngineActive:
      return "gr_engine_active";
    case kGpuUtil:
      return "gpu_util";
    case kSmSourceCount:
      break;
  }
  return "?";
}

DcgmIngester::DcgmIngester(FleetStore& store, const GpuCatalog& catalog, DcgmIngestOptions options)
    : store_(store),
      catalog_(catalog),
      options_(std::move(options)),
      kube_state_(options_.kube_state) {}

// One device of one pod's container: its VRAM series and its SM series by source.
struct DcgmIngester::Entry {
  std::string device_key;  // host | uuid | gpu | GPU_I_ID
  std::string host, uuid, model, mig_profile;
  int device = -1;
  std::string ns, pod, container;
  const LabeledSeries* vram = nullptr;
  std::array<const LabeledSeries*, kSmSourceCount> sm{};
  // The node agent's: vram (MiB), sm[kSmActive] (the container's share of the device) and
  // sm[kGpuUtil] (busy time, percent), merged from its series (see MergeAgentSeries); the basis
  // of each SM point.
  bool agent = false;
  std::array<std::vector<const LabeledSeries*>, 3> agent_parts;  // memory, busy, SM
  std::vector<std::pair<SmBasis, bool>> agent_sm_how;            // basis, an equal split (MPS)

  std::string ContainerKey() const { return ns + '/' + pod + '/' + container; }
  // How issues name it.
  std::string Who() const {
    return ContainerKey() + " on " + (host.empty() ? std::string() : host + " ") + "GPU " +
           (uuid.empty() ? std::to_string(device) : uuid) +
           (mig_profile.empty() ? "" : " MIG " + mig_profile);
  }
  // The best SM source with points, or kSmSourceCount.
  int SmSourceUsed() const {
    for (int s = 0; s < kSmSourceCount; ++s)
      if (sm[static_cast<size_t>(s)] != nullptr && !sm[static_cast<size_t>(s)]->points.empty())
        return s;
    return kSmSourceCount;
  }
};

// How many pods report each device at each time (the shared-device split), and for devices
// with per-pod readings the pods' summed busy time at each time (the busy-share split).
struct DcgmIngester::DeviceLoad {
  std::unordered_map<std::string, std::unordered_map<int64_t, int>> pods_at;
  std::unordered_map<std::string, int> max_pods;
  std::map<std::string, int> devices_of_container;  // ns/pod/container → devices
  std::unordered_map<std::string, std::unordered_map<int64_t, double>> busy_sum_at;
  // Device-level SM series without pod labels, by device and source (SM active, GR engine).
  std::unordered_map<std::string, std::array<const LabeledSeries*, 2>> device_sm;
  // Times at which the node agent reports a container on a device (GPU UUID): DCGM's points of
  // that container and device at those times are superseded.
  std::unordered_map<std::string, std::unordered_set<int64_t>> agent_times;
  // The node agent's merged series (Entry points into them).
  std::deque<LabeledSeries> merged;

  static std::string AgentKey(const Entry& e) {
    return e.uuid + '\x1f' + std::to_string(e.device) + '\x1f' + e.ContainerKey();
  }
  bool Superseded(const Entry& e, double time_s) const {
    if (e.agent || agent_times.empty()) return false;
    const auto it = agent_times.find(AgentKey(e));
    return it != agent_times.end() && it->second.contains(TimeKey(time_s));
  }
};

struct DcgmIngester::Pending {
  double time_s;
  uint32_t row;
  uint32_t series;
  GpuSample sample;
};

DcgmIngestReport DcgmIngester::Ingest(std::span<const LabeledSeries> batch) {
  DcgmIngestReport report;
  // 1. kube-state-metrics first: owners and requests apply to this batch's usage.
  for (const LabeledSeries& s : batch)
    if (kube_state_.Add(s)) ++report.kube_state_series;
  // 2. Usage series by device and pod.
  DeviceLoad load;
  const std::map<std::string, Entry> entries = GroupByDevice(batch, load, report);
  // The node agent's series win over DCGM's for the containers, devices and times it reports.
  for (const auto& [key, e] : entries)
    if (e.agent && e.vram != nullptr && !e.uuid.empty()) {
      auto& times = load.agent_times[DeviceLoad::AgentKey(e)];
      for (const MetricPoint& p : e.vram->points) times.insert(TimeKey(p.time_s));
    }
  // 3. How many pods report each device at each time; which devices have per-pod readings.
  std::unordered_set<std::string> counted;  // a container on a device is one of its pods
  for (const auto& [key, e] : entries) {
    if (e.vram == nullptr) continue;
    if (counted.insert(e.device_key + '\x1f' + e.ContainerKey()).second)
      ++load.devices_of_container[e.ContainerKey()];
    auto& counts = load.pods_at[e.device_key];
    int& most = load.max_pods[e.device_key];
    for (const MetricPoint& p : e.vram->points) {
      if (load.Superseded(e, p.time_s)) {
        ++report.superseded_by_agent;
        continue;
      }
      most = std::max(most, ++counts[TimeKey(p.time_s)]);
    }
  }
  MarkPerProcessDevices(entries, load);
  // 4. Each admitted series' samples, collected; then 5. ingested in time order.
  std::vector<Pending> pending;
  for (const auto& [key, e] : entries) {
    if (e.vram == nullptr) continue;
    const std::optional<std::pair<uint32_t, uint32_t>> tracked = Admit(e, load, report);
    if (tracked) CollectSamples(e, tracked->first, tracked->second, load, report, pending);
  }
  IngestInTimeOrder(pending, report);
  return report;
}

// A device's pods report per-process readings (dcgm-exporter's per-pod mode, the node agent)
// when, at one time, two of its pods' VRAM or busy values differ: the device's own counters,
// copied to each pod, are equal. Once seen, the device stays per-process.
void DcgmIngester::MarkPerProcessDevices(const std::map<std::string, Entry>& entries,
                                         DeviceLoad& load) {
  std::unordered_map<std::string, std::unordered_map<int64_t, double>> first_vram, first_busy;
  auto differs = [&load](std::unordered_map<int64_t, double>& first, const Entry& e,
                         const LabeledSeries& series) {
    bool found = false;
    for (const MetricPoint& p : series.points) {
      if (!(p.value < kDcgmNoValue) || load.Superseded(e, p.time_s)) continue;
      const auto [it, added] = first.try_emplace(TimeKey(p.time_s), p.value);
      found |= !added && std::abs(it->second - p.value) > 1e-9 * std::max(1.0, p.value);
    }
    return found;
  };
  for (const auto& [key, e] : entries) {
    // The agent's readings are per process by nature (CollectSamples): not a DCGM device's.
    if (e.agent || e.vram == nullptr || load.max_pods[e.device_key] < 2) continue;
    bool per_pod = differs(first_vram[e.device_key], e, *e.vram);
    if (const LabeledSeries* busy = e.sm[kGpuUtil]; busy != nullptr)
      per_pod |= differs(first_busy[e.device_key], e, *busy);
    if (per_pod) per_process_devices_.insert(e.device_key);
  }
  for (const auto& [key, e] : entries) {
    const LabeledSeries* busy = e.sm[kGpuUtil];
    if (e.agent || e.vram == nullptr || busy == nullptr ||
        !per_process_devices_.contains(e.device_key))
      continue;
    auto& sum = load.busy_sum_at[e.device_key];
    for (const MetricPoint& p : busy->points)
      if (p.value >= 0 && p.value <= 100 && !load.Superseded(e, p.time_s))
        sum[TimeKey(p.time_s)] += p.value / 100;
  }
}

std::map<std::string, DcgmIngester::Entry> DcgmIngester::GroupByDevice(
    std::span<const LabeledSeries> batch, DeviceLoad& load, DcgmIngestReport& report) const {
  const DcgmNames& names = options_.names;
  std::map<std::string, Entry> entries;
  for (const LabeledSeries& s : batch) {
    const int kind = KindOf(names, s.metric);
    if (kind == kOtherKind) continue;
    ++report.series;
    // Pod labels: the first variant set whose pod is present.
    std::string_view ns, pod, container;
    for (size_t i = 0; i < names.pod_labels.size(); ++i) {
      pod = s.Label(names.pod_labels[i]);
      if (pod.empty()) continue;
      ns = i < names.namespace_labels.size() ? s.Label(names.namespace_labels[i]) : "";
      container = i < names.container_labels.size() ? s.Label(names.container_labels[i]) : "";
      if (In(names.exporter_containers, std::string(container))) pod = {};
      break;
    }
    if (kind >= kAgentVramKind) {
      AddAgentSeries(s, kind, ns, pod, container, entries, report);
      continue;
    }
    const bool has_pod = !pod.empty() && !ns.empty() && !container.empty();
    // Without a pod only a device's SM activity counts (for per-pod busy shares).
    if (!has_pod && (kind == kVramKind || kind == kGpuUtil)) {
      if (kind == kVramKind) report.no_pod += s.points.size();
      continue;
    }
    Entry e;
    e.host = FirstLabel(s, names.host_labels);
    e.uuid = FirstLabel(s, names.uuid_labels);
    e.model = s.Label(names.model_label);
    e.mig_profile = s.Label(names.mig_profile_label);
    int gpu = 0, gi = -1;
    if (!ParseIndex(s.Label(names.gpu_index_label), gpu)) gpu = 0;  // absent or not an index
    if (!e.mig_profile.empty() && !ParseIndex(s.Label(names.mig_instance_label), gi)) {
      if (has_pod)
        AddIssue(report, "series " + s.metric + " of pod " + std::string(ns) + "/" +
                             std::string(pod) + ": " + names.mig_profile_label + " \"" +
                             e.mig_profile + "\" without a valid " + names.mig_instance_label);
      continue;
    }
    e.device = gi >= 0 ? 1000 * (gpu + 1) + gi : gpu;
    e.device_key = e.host + "|" + e.uuid + "|" + std::to_string(e.device);
    if (!has_pod) {
      load.device_sm[e.device_key][static_cast<size_t>(kind)] = &s;
      continue;
    }
    e.ns = ns;
    e.pod = pod;
    e.container = container;
    std::string key = e.device_key + '\x1f' + e.ContainerKey();
    Entry& slot = entries.try_emplace(std::move(key), std::move(e)).first->second;
    if (kind == kVramKind)
      slot.vram = &s;
    else
      slot.sm[static_cast<size_t>(kind)] = &s;
    if (slot.model.empty()) slot.model = s.Label(names.model_label);
  }
  for (auto& [key, e] : entries)
    if (e.agent) MergeAgentSeries(e, load.merged, report);
  return entries;
}

void DcgmIngester::AddAgentSeries(const LabeledSeries& s, int kind, std::string_view ns,
                                  std::string_view pod, std::string_view container,
                                  std::map<std::string, Entry>& entries,
                                  DcgmIngestReport& report) const {
  const NodeAgentNames& a = options_.names.node_agent;
  // The agent's own namespace: the scrape's target labels of a process it could not name.
  if (pod.empty() || ns.empty() || container.empty() || ns == a.own_namespace) {
    if (kind == kAgentVramKind) report.no_pod += s.points.size();
    return;
  }
  Entry e;
  int gi = -1;
  if (const std::string_view instance = s.Label(a.instance_label); !instance.empty()) {
    e.mig_profile = s.Label(a.mig_profile_label);
    if (e.mig_profile.empty() || !ParseIndex(instance, gi)) {
      if (kind == kAgentVramKind) ++report.agent_mig_series;
      return;
    }
  }
  e.agent = true;
  e.host = s.Label(a.node_label);
  e.uuid = s.Label(a.uuid_label);
  e.model = s.Label(a.model_label);
  if (!ParseIndex(s.Label(a.gpu_label), e.device)) e.device = 0;
  if (gi >= 0) e.device = 1000 * (e.device + 1) + gi;
  e.device_key = e.host + "|" + e.uuid + "|" + std::to_string(e.device);
  e.ns = ns;
  e.pod = pod;
  e.container = container;
  std::string key = e.device_key + '\x1f' + e.ContainerKey() + "\x1f" + "agent";
  Entry& slot = entries.try_emplace(std::move(key), std::move(e)).first->second;
  slot.agent_parts[static_cast<size_t>(kind - kAgentVramKind)].push_back(&s);
  if (slot.model.empty()) slot.model = s.Label(a.model_label);
}

// The agent writes a container's figures per method (and a container's method changes as its
// coverage is learned): each kind's series are summed at each time, into the units of DCGM's
// (MiB, busy percent, SM ratio), with the weakest method of each SM point as its basis.
void DcgmIngester::MergeAgentSeries(Entry& e, std::deque<LabeledSeries>& merged,
                                    DcgmIngestReport& report) const {
  const NodeAgentNames& a = options_.names.node_agent;
  struct Sum {
    double time_s = 0, value = 0;
    int parts = 0;
    SmBasis basis = SmBasis::kMeasured;
    bool equal_split = false;
  };
  constexpr std::array<double, 3> kScale = {1 / kMiB, 100, 1};
  constexpr std::array<double, 3> kCap = {1e300, 100, 1};  // the agent's own caps per container
  for (size_t part = 0; part < 3; ++part) {
    std::map<int64_t, Sum> sums;
    for (const LabeledSeries* s : e.agent_parts[part]) {
      AgentMethod how{SmBasis::kMeasured, false};
      if (part == 2) {
        const std::string_view method = s->Label(a.method_label);
        const std::optional<AgentMethod> known = AgentMethodBasis(method);
        if (!known) {
          AddIssue(report, e.Who() + ": node agent " + a.method_label + " \"" +
                               std::string(method) +
                               "\" is not alone, idle, solo-calibrated, busy-proportional, "
                               "mps-equal-split or mig-equal-split: its SM figures are not used "
                               "(its busy time is)");
          continue;
        }
        how = *known;
      }
      for (const MetricPoint& p : s->points) {
        Sum& sum = sums[TimeKey(p.time_s)];
        sum.time_s = p.time_s;
        sum.value += p.value * kScale[part];
        sum.basis = WeakerSmBasis(sum.basis, how.basis);
        sum.equal_split |= how.equal_split;
        ++sum.parts;
      }
    }
    if (sums.empty()) continue;
    LabeledSeries& out = merged.emplace_back();
    out.metric = e.agent_parts[part].front()->metric;
    out.points.reserve(sums.size());
    for (const auto& [time, sum] : sums) {
      // One series' value as sent (out of range is refused later); several add up to the cap.
      out.points.push_back(
          {sum.time_s, sum.parts > 1 ? std::min(kCap[part], sum.value) : sum.value});
      if (part == 2) e.agent_sm_how.push_back({sum.basis, sum.equal_split});
    }
    if (part == 0)
      e.vram = &out;
    else
      e.sm[part == 1 ? kGpuUtil : kSmActive] = &out;
  }
}

std::optional<std::pair<uint32_t, uint32_t>> DcgmIngester::Admit(const Entry& e,
                                                                 const DeviceLoad& load,
                                                                 DcgmIngestReport& report) {
  const size_t points = e.vram->points.size();
  Result<const GpuModel*> model = catalog_.FindModel(e.model);
  if (!model.ok()) {
    report.refused += points;
    AddIssue(report, e.Who() + ": " + options_.names.model_label + ": " + model.status().message());
    return std::nullopt;
  }
  const PodOwner owner = kube_state_.ResolveOwner(e.ns, e.pod);
  const auto most = load.max_pods.find(e.device_key);
  const int replicas = options_.shared_replicas > 0
                           ? options_.shared_replicas
                           : std::max(1, most == load.max_pods.end() ? 0 : most->second);
  std::optional<GpuAllocation> allocation =
      kube_state_.Request(e.ns, e.pod, e.container, replicas, *model);
  if (allocation) {
    ++report.allocation_from_request;
  } else {
    ++report.allocation_from_dcgm;
    GpuAllocation a;
    if (!e.mig_profile.empty()) {
      a.kind = AllocationKind::kMigInstance;
      a.mig_profile = e.mig_profile;
    } else if (replicas > 1) {
      a.kind = AllocationKind::kSharedReplica;
      a.shared_replicas = replicas;
    } else {
      a.count = load.devices_of_container.at(e.ContainerKey());
    }
    allocation = a;
  }
  WorkloadFields fields{e.ns, owner.kind, owner.name, e.container, e.pod, {}};
  std::string rejected;
  fields.cost_center = kube_state_.CostCenter(options_.cost_centers, e.ns, owner, &rejected);
  if (!rejected.empty()) {
    report.invalid_cost_center += points;
    AddIssue(report, e.Who() + ": cost center " + rejected +
                         " is not valid (UTF-8 without control characters, 1-253 bytes): "
                         "charged to " +
                         std::string(kUnallocatedCostCenter));
  }
  if (options_.shard_count > 1) {
    v1::WorkloadIdentity key;
    key.set_namespace_name(e.ns);
    key.set_owner_kind(owner.kind);
    key.set_owner_name(owner.name);
    key.set_container(e.container);
    if (WorkloadShard(key, options_.shard_count) != options_.shard_index) {
      report.other_shard += points;
      return std::nullopt;
    }
  }
  Result<AdmittedWorkload> admitted = AdmitWorkload(fields, **model, *allocation);
  if (!admitted.ok()) {
    report.refused += points;
    AddIssue(report, e.Who() + ": " + admitted.status().message());
    return std::nullopt;
  }
  switch (owner.source) {
    case OwnerSource::kKubeStateMetrics:
      ++report.owner_from_kube_state;
      break;
    case OwnerSource::kPodNameRule:
      ++report.owner_from_pod_name;
      break;
    case OwnerSource::kBarePod:
      ++report.owner_bare_pod;
      break;
  }
  if (const int source = e.SmSourceUsed(); source < kSmSourceCount)
    ++report.sm_source_series[static_cast<size_t>(source)];
  const uint32_t row = store_.Track(std::move(admitted->identity), admitted->unit);
  return std::pair{row, store_.TrackDevice(row, e.pod, e.device)};
}

void DcgmIngester::CollectSamples(const Entry& e, uint32_t row, uint32_t series,
                                  const DeviceLoad& load, DcgmIngestReport& report,
                                  std::vector<Pending>& pending) {
  const double latest_allowed_s = options_.now_s + options_.max_future_skew_s;
  const AllocationUnit unit = store_.state(row).unit;
  static const std::unordered_map<int64_t, int> kNone;
  const auto pods_it = load.pods_at.find(e.device_key);
  const auto& pods_at = pods_it == load.pods_at.end() ? kNone : pods_it->second;
  // Per-pod readings: VRAM as read, SM from the pod's busy time (and the device's activity).
  const bool per_process = e.agent || per_process_devices_.contains(e.device_key);
  const LabeledSeries* busy = nullptr;    // per-pod busy time (percent)
  const LabeledSeries* device = nullptr;  // the device's SM activity (ratio)
  SmBasis device_basis = SmBasis::kMeasured;
  int source = e.SmSourceUsed();
  if (e.agent) {
    busy = e.sm[kGpuUtil];
    device = e.sm[kSmActive];  // the container's own share of the device's SM activity
    source = device != nullptr ? kSmActive : busy != nullptr ? kGpuUtil : kSmSourceCount;
  } else if (per_process) {
    busy = e.sm[kGpuUtil] != nullptr && !e.sm[kGpuUtil]->points.empty() ? e.sm[kGpuUtil] : nullptr;
    const auto dev_it = load.device_sm.find(e.device_key);
    for (int s : {kSmActive, kGrEngineActive}) {
      const LabeledSeries* own = e.sm[static_cast<size_t>(s)];
      const LabeledSeries* dev =
          dev_it == load.device_sm.end() ? nullptr : dev_it->second[static_cast<size_t>(s)];
      const LabeledSeries* pick = own != nullptr && !own->points.empty() ? own : dev;
      if (pick != nullptr && !pick->points.empty()) {
        device = pick;
        device_basis = s == kSmActive ? SmBasis::kMeasured : SmBasis::kGrEngineActive;
        break;
      }
    }
    source =
        device != nullptr
            ? static_cast<int>(device_basis == SmBasis::kMeasured ? kSmActive : kGrEngineActive)
            : (busy != nullptr ? kGpuUtil : kSmSourceCount);
  }
  const LabeledSeries* primary =
      source < kSmSourceCount && !per_process ? e.sm[static_cast<size_t>(source)] : nullptr;
  // One SM reading as a ratio of the device, or nullopt (missing, a marker, out of range:
  // counted, and an out-of-range one named).
  enum class Read { kOk, kMissing, kRefused };
  auto read = [&](const LabeledSeries* s, int kind, double time_s, size_t& cursor, double& out) {
    if (s == nullptr) return Read::kMissing;
    const std::optional<double> v = ValueAt(*s, time_s, cursor);
    if (!v) return Read::kMissing;
    if (*v >= kDcgmNoValue) {
      ++report.no_value_markers;
      return Read::kRefused;
    }
    out = kind == kGpuUtil ? *v / 100 : *v;
    if (out >= 0 && out <= 1.0 + 1e-9) return Read::kOk;
    ++report.refused;
    AddIssue(report, e.Who() + ": " + SmSourceName(static_cast<SmSource>(kind)) + " " +
                         FormatNumber(*v) + " at " + FormatNumber(time_s) + " is out of range");
    return Read::kRefused;
  };
  const int device_kind = device_basis == SmBasis::kMeasured ? kSmActive : kGrEngineActive;
  size_t cursor = 0, busy_cursor = 0, device_cursor = 0;
  WorkloadState& st = store_.mutable_state(row);
  for (const MetricPoint& p : e.vram->points) {
    if (load.Superseded(e, p.time_s)) continue;  // counted in superseded_by_agent
    ++report.samples;
    if (p.value >= kDcgmNoValue) {
      ++report.no_value_markers;
      continue;
    }
    if (CheckSampleTime(p.time_s, latest_allowed_s) != SampleTime::kOk || !(p.value >= 0)) {
      ++report.refused;
      AddIssue(report, e.Who() + ": sample at " + FormatNumber(p.time_s) + " with " +
                           FormatNumber(p.value) +
                           " MiB is out of range (time before 2000 or in the future, or "
                           "negative)");
      continue;
    }
    const auto k_it = pods_at.find(TimeKey(p.time_s));
    const int k = k_it == pods_at.end() ? 1 : std::max(1, k_it->second);
    // The pod's share of the device's SM activity, and what it stands on.
    double share = 0;
    SmBasis basis = SmBasis::kMeasured;
    bool split = k > 1;  // split equally between the device's pods
    if (!per_process) {
      double ratio = 0;
      const Read r = read(primary, source, p.time_s, cursor, ratio);
      if (r != Read::kOk) {
        if (r == Read::kMissing) ++report.without_sm;
        continue;
      }
      share = ratio / k;
      basis = source == kGpuUtil          ? SmBasis::kBusyTime
              : source == kGrEngineActive ? SmBasis::kGrEngineActive
                                          : SmBasis::kMeasured;
    } else if (e.agent) {
      double pod_busy = 0, pod_sm = 0;
      const Read rb = read(busy, kGpuUtil, p.time_s, busy_cursor, pod_busy);
      const Read rs = read(device, kSmActive, p.time_s, device_cursor, pod_sm);
      if (rb == Read::kRefused || rs == Read::kRefused) continue;
      split = false;
      if (rs == Read::kOk) {
        share = pod_sm;
        basis = e.agent_sm_how[device_cursor].first;
        split = e.agent_sm_how[device_cursor].second;
      } else if (rb == Read::kOk) {
        share = pod_busy;
        basis = SmBasis::kBusyTime;
      } else {
        ++report.without_sm;
        continue;
      }
    } else {
      double pod_busy = 0, device_sm = 0;
      const Read rb = read(busy, kGpuUtil, p.time_s, busy_cursor, pod_busy);
      const Read rd = read(device, device_kind, p.time_s, device_cursor, device_sm);
      if (rb == Read::kRefused || rd == Read::kRefused) continue;
      split = false;
      if (rb == Read::kOk && rd == Read::kOk) {
        // The device's activity in proportion to the pods' busy time at this moment; never
        // more than the pod's own busy time.
        const auto sum_it = load.busy_sum_at.find(e.device_key);
        double sum = 0;
        if (sum_it != load.busy_sum_at.end())
          if (const auto t = sum_it->second.find(TimeKey(p.time_s)); t != sum_it->second.end())
            sum = t->second;
        share = sum > 0 ? std::min(pod_busy, device_sm * pod_busy / sum) : 0;
        basis = WeakerSmBasis(device_basis, SmBasis::kSmActiveByBusyShare);
      } else if (rb == Read::kOk) {
        share = pod_busy;
        basis = SmBasis::kBusyTime;
      } else if (rd == Read::kOk) {
        share = device_sm / k;  // no busy time for this pod: the device's, split equally
        basis = device_basis;
        split = k > 1;
      } else {
        ++report.without_sm;
        continue;
      }
    }
    GpuSample sample;
    sample.time_s = p.time_s;
    sample.vram_bytes = per_process ? p.value * kMiB : p.value * kMiB / k;
    // SM activity is relative to the allocation unit (as a MIG instance's counters are): the
    // pod's share of the device's activity over its share of the device, so that the pods'
    // used GPU-seconds add up to the device's.
    const double fraction = unit.device_fraction;
    sample.sm_ratio =
        k > 1 && fraction > 0 ? std::min(1.0, share / fraction) : std::min(1.0, share * k);
    if (unit.vram_limit_bytes > 0 && !FitsAllocation(sample.vram_bytes, unit)) {
      ++report.refused;
      AddIssue(report, e.Who() + ": " + FormatNumber(p.value) + " MiB at " +
                           FormatNumber(p.time_s) + " is more than the allocation can hold (" +
                           FormatNumber(unit.vram_limit_bytes / kMiB) + " MiB)");
      continue;
    }
    if (split) {
      ++report.shared_device_samples;
      st.shared_device_estimate = true;
    }
    if (per_process) {
      ++report.per_process_samples;
      if (e.agent) ++report.agent_samples;
      st.per_process_usage = true;
    }
    st.sm_basis = WeakerSmBasis(st.sm_basis, basis);
    pending.push_back({p.time_s, row, series, sample});
  }
}

void DcgmIngester::IngestInTimeOrder(std::vector<Pending>& pending, DcgmIngestReport& report) {
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Pending& a, const Pending& b) { return a.time_s < b.time_s; });
  bool have_time = false;
  for (const Pending& p : pending) {
    switch (store_.Ingest(p.row, p.series, p.sample)) {
      case IngestOutcome::kAlreadyIngested:
        ++report.already_ingested;
        continue;
      case IngestOutcome::kInvalid:
        ++report.refused;
        continue;
      case IngestOutcome::kAdded:
        break;
    }
    ++report.accepted;
    if (!have_time) report.first_time_s = p.time_s;
    have_time = true;
    report.last_time_s = p.time_s;
  }
}

}  // namespace gpuvpa::recommender
