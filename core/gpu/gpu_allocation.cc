// Parsing and resolution of GPU allocations.
#include "core/gpu/gpu_allocation.h"

#include <charconv>

namespace gpuvpa {
namespace {

constexpr std::string_view kVendorPrefix = "nvidia.com/";
constexpr std::string_view kMigPrefix = "mig-";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParsePositiveInt(std::string_view s, int& out) {
  s = Trim(s);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out > 0;
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgumentError("allocation \"" + std::string(text) + "\": " + why);
}

}  // namespace

std::string GpuAllocation::ToString() const {
  switch (kind) {
    case AllocationKind::kWholeGpu:
      return "nvidia.com/gpu=" + std::to_string(count);
    case AllocationKind::kMigInstance:
      return "nvidia.com/mig-" + mig_profile + "=" + std::to_string(count);
    case AllocationKind::kSharedReplica:
      return "nvidia.com/gpu.shared=" + std::to_string(count) + "/" +
             std::to_string(shared_replicas);
    case AllocationKind::kMilliGpu:
      return "gpu-milli=" + std::to_string(milli);
  }
  return "";
}

Result<GpuAllocation> ParseGpuAllocation(std::string_view text) {
  std::string_view s = Trim(text);
  const size_t sep = s.find_first_of("=:");
  if (sep == std::string_view::npos) return Bad(text, "expected RESOURCE=COUNT");
  std::string_view resource = Trim(s.substr(0, sep));
  std::string_view amount = Trim(s.substr(sep + 1));
  if (resource.starts_with(kVendorPrefix)) resource.remove_prefix(kVendorPrefix.size());

  GpuAllocation a;
  if (resource == "gpu") {
    a.kind = AllocationKind::kWholeGpu;
    if (!ParsePositiveInt(amount, a.count)) return Bad(text, "count must be a positive integer");
  } else if (resource.starts_with(kMigPrefix)) {
    a.kind = AllocationKind::kMigInstance;
    a.mig_profile = std::string(resource.substr(kMigPrefix.size()));
    if (a.mig_profile.empty()) return Bad(text, "missing MIG profile");
    if (!ParsePositiveInt(amount, a.count)) return Bad(text, "count must be a positive integer");
  } else if (resource == "gpu.shared") {
    a.kind = AllocationKind::kSharedReplica;
    const size_t slash = amount.find('/');
    if (slash == std::string_view::npos) return Bad(text, "expected COUNT/REPLICAS");
    if (!ParsePositiveInt(amount.substr(0, slash), a.count) ||
        !ParsePositiveInt(amount.substr(slash + 1), a.shared_replicas))
      return Bad(text, "count and replicas must be positive integers");
  } else if (resource == "gpu-milli") {
    a.kind = AllocationKind::kMilliGpu;
    if (!ParsePositiveInt(amount, a.milli) || a.milli > 1000)
      return Bad(text, "milli-GPU must be an integer in 1..1000");
  } else {
    return Bad(text, "unknown GPU resource \"" + std::string(resource) + "\"");
  }
  return a;
}

Result<double> DeviceFraction(const GpuAllocation& allocation, const GpuModel* model) {
  switch (allocation.kind) {
    case AllocationKind::kWholeGpu:
      return 1.0;
    case AllocationKind::kMigInstance: {
      if (model == nullptr)
        return InvalidArgumentError("MIG profile \"" + allocation.mig_profile +
                                    "\" on a GPU model outside the catalog");
      Result<const MigProfile*> profile = model->FindMigProfile(allocation.mig_profile);
      if (!profile.ok()) return profile.status();
      return (*profile)->SliceFraction();
    }
    case AllocationKind::kSharedReplica:
      return 1.0 / allocation.shared_replicas;
    case AllocationKind::kMilliGpu:
      return allocation.milli / 1000.0;
  }
  return InternalError("unhandled allocation kind");
}

Result<AllocationUnit> ResolveAllocationUnit(const GpuAllocation& allocation,
                                             const GpuModel& model) {
  Result<double> fraction = DeviceFraction(allocation, &model);
  if (!fraction.ok()) return fraction.status();
  if (allocation.kind == AllocationKind::kMigInstance) {
    // An instance sees its own usable memory, not a fraction of the card's.
    const double usable = (*model.FindMigProfile(allocation.mig_profile))->usable_memory_bytes;
    return AllocationUnit{*fraction, usable, usable};
  }
  return AllocationUnit{*fraction, model.memory_bytes * *fraction, model.memory_bytes};
}

GpuResourceRequest ResourceRequestOf(const GpuAllocation& a) {
  switch (a.kind) {
    case AllocationKind::kWholeGpu:
      return {"nvidia.com/gpu", std::to_string(a.count)};
    case AllocationKind::kMigInstance:
      return {"nvidia.com/mig-" + a.mig_profile, std::to_string(a.count)};
    case AllocationKind::kSharedReplica:
      return {"nvidia.com/gpu.shared", std::to_string(a.count)};
    case AllocationKind::kMilliGpu:
      return {"gpu-milli", std::to_string(a.milli)};
  }
  return {"nvidia.com/gpu", "1"};
}

std::string ProductLabelPrefix(std::string_view model) {
  return "NVIDIA-" + std::string(model.substr(0, model.find('-')));
}

}  // namespace gpuvpa
