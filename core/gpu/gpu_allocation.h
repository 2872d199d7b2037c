// What GPU capacity a container holds, as its resource request names it, and what one unit of
// that request is worth as a share of a physical GPU.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/gpu/gpu_catalog.h"

namespace gpuvpa {

enum class AllocationKind {
  kWholeGpu,       // nvidia.com/gpu=N
  kMigInstance,    // nvidia.com/mig-<profile>=N
  kSharedReplica,  // nvidia.com/gpu.shared=N/R: N replicas of a GPU time-sliced R ways
  kMilliGpu,       // gpu-milli=M: a fractional claim of M/1000 of a GPU
};

struct GpuAllocation {
  AllocationKind kind = AllocationKind::kWholeGpu;
  int count = 1;            // devices, instances or replicas held (milli: always 1)
  std::string mig_profile;  // kMigInstance only, e.g. "3g.40gb"
  int shared_replicas = 1;  // kSharedReplica only: how many ways the GPU is shared
  int milli = 1000;         // kMilliGpu only

  // Canonical text, which ParseGpuAllocation reads back.
  std::string ToString() const;
  bool operator==(const GpuAllocation&) const = default;
};

// Parses "nvidia.com/gpu=1", "nvidia.com/mig-3g.40gb=1", "nvidia.com/gpu.shared=1/4",
// "gpu-milli=460"; the "nvidia.com/" prefix is optional and ':' may stand for '='.
Result<GpuAllocation> ParseGpuAllocation(std::string_view text);

// One device, instance or replica of an allocation on a given GPU model.
struct AllocationUnit {
  double device_fraction = 1;      // share of a physical GPU it denies to others
  double vram_capacity_bytes = 0;  // its share of device memory (the VRAM basis of usage)
  // The most VRAM it can physically hold: a MIG instance's usable memory, otherwise the whole
  // device (time-sliced replicas and fractional claims are not memory-isolated). No sample or
  // recommendation may exceed it.
  double vram_limit_bytes = 0;
};

// The share of a physical GPU one unit denies to others: 1 for a whole GPU, the binding slice
// fraction for a MIG instance, 1/replicas for a shared replica, milli/1000 for a fractional
// claim. `model` is needed (and must know the profile) only for MIG.
Result<double> DeviceFraction(const GpuAllocation& allocation, const GpuModel* model);

// The Kubernetes extended resource that requests an allocation, and the quantity of it:
// ("nvidia.com/mig-1g.10gb", "1"), ("nvidia.com/gpu.shared", "1"), ("gpu-milli", "460").
struct GpuResourceRequest {
  std::string name;
  std::string quantity;
};
GpuResourceRequest ResourceRequestOf(const GpuAllocation& allocation);

// GPU feature discovery's product label value for a catalog model ("L4-24GB" -> "NVIDIA-L4"):
// the family only, as nodes of one family differ in the label's suffix (-SXM4-80GB, -PCIe).
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
std::string ProductLabelPrefix(std::string_view model);

// MIG profiles must exist for the model (error names the profile); other kinds always resolve.
Result<AllocationUnit> ResolveAllocationUnit(const GpuAllocation& allocation,
                                             const GpuModel& model);

}  // namespace gpuvpa
