// The GPU catalog: device models (memory) and their MIG profiles (slices, usable memory).
// Figures come from NVIDIA's MIG user guide as summarised in shared/DESIGN.md ("GPU catalog").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa {

// A GPU has 7 compute slices and 8 memory slices when MIG is enabled.
inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

struct MigProfile {
  std::string name;  // e.g. "3g.40gb"
  int compute_slices = 0;
  int memory_slices = 0;
  double usable_memory_bytes = 0;  // below nominal: what CUDA sees inside the instance

  // The share of the whole GPU this instance denies to others: the binding one of its memory
  // and compute slices. Used to price and to account allocated GPU-hours.
  double SliceFraction() const;
};

struct GpuModel {
  std::string name;  // canonical, e.g. "H100-80GB"
  double memory_bytes = 0;
  std::vector<MigProfile> mig_profiles;  // empty when the model has no MIG support here

  Result<const MigProfile*> FindMigProfile(std::string_view profile) const;
};

class GpuCatalog {
 public:
  // The built-in catalog (datacenter GPUs seen in Kubernetes clusters).
  static const GpuCatalog& BuiltIn();

  explicit GpuCatalog(std::vector<GpuModel> models);

  // Accepts canonical names ("A100-80GB") and DCGM/nvidia-smi product names
  // ("NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA H100 80GB HBM3"). Unknown names are an error
  // naming the value; nothing is guessed.
  Result<const GpuModel*> FindModel(std::string_view name) const;

  const std::vector<GpuModel>& models() const { return models_; }

 private:
  std::vector<GpuModel> models_;
};

}  // namespace gpuvpa
