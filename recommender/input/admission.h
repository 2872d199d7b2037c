// One admission path for every input (the DCGM ingester, the trace replayer): a workload enters
// the store only with a known GPU model, an allocation that model can hold and a valid identity
// (and pod name); a sample only with a time in [2000-01-01, now + skew] and no more VRAM than
// its allocation holds. The store checks finiteness and ranges once more at its own boundary
// (IsValidSample), whatever the input.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

// What an input knows of a workload-container, as it read it.
struct WorkloadFields {
  std::string_view ns, kind, name, container;
  std::string_view pod;  // checked as an object name when given
  std::string cost_center;
};

struct AdmittedWorkload {
  v1::WorkloadIdentity identity;
  AllocationUnit unit;
};

// The identity (the model's canonical name, the allocation's canonical text) and the unit the
// allocation takes on the model. On failure `refused_field`, when given, names what was refused:
// "allocation", or the identity's field ("namespace", "container", ...), or "pod".
Result<AdmittedWorkload> AdmitWorkload(const WorkloadFields& fields, const GpuModel& model,
                                       const GpuAllocation& allocation,
                                       std::string* refused_field = nullptr);

enum class SampleTime { kOk, kBefore2000, kInTheFuture };
// kInTheFuture: after latest_allowed_s (now + skew) or not before 2100. Inline: once per sample.
inline SampleTime CheckSampleTime(double time_s, double latest_allowed_s) {
  // Written so that NaN fails every comparison.
  if (!(time_s >= kMinSampleTimeS)) return SampleTime::kBefore2000;
  if (!(time_s <= latest_allowed_s) || time_s >= kMaxSampleTimeS) return SampleTime::kInTheFuture;
  return SampleTime::kOk;
}

// True when the allocation can hold the sample's VRAM.
inline bool FitsAllocation(double vram_bytes, const AllocationUnit& unit) {
  return !(vram_bytes > unit.vram_limit_bytes);
}

}  // namespace gpuvpa::recommender
