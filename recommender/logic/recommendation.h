// A recommendation for one workload-container and the evidence it rests on. Plain numbers, so
// a pass over a whole fleet allocates nothing per workload; ToProto attaches the identity for
// output and the wire.
#pragma once

#include <cstdint>

#include "proto/gpuvpa.pb.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct Recommendation {
  uint32_t row = 0;  // the FleetStore row it was computed from
  // False while history is shorter than min_history_s: the evidence is reported, no target.
  bool has_target = false;
  double min_history_s = 0;
  double vram_target_bytes = 0;
  double vram_lower_bytes = 0;
  double vram_upper_bytes = 0;
  double vram_observed_peak_bytes = 0;  // the latest windows' peak, the target's floor
  double vram_history_peak_bytes = 0;   // the largest sample since tracking began
  double vram_limit_bytes = 0;          // what the allocation can hold; no bound exceeds it
  bool needs_larger_gpu = false;        // p98 above vram_limit_bytes
  double sm_p90_ratio = 0;
  double sm_p99_ratio = 0;
  double active_duty_ratio = 0;   // share of device time above the idle threshold
  double longest_idle_gap_s = 0;  // longest stretch without an active sample
  double allocated_gpu_hours = 0;
  double used_gpu_hours_vram = 0;  // billable basis: VRAM residency share
  double used_gpu_hours_sm = 0;    // advisory: SM duty share
  double idle_tax_gpu_hours_vram = 0;
  double idle_tax_gpu_hours_sm = 0;
  double confidence = 0;
  double history_s = 0;
  uint64_t sample_count = 0;
  uint32_t cuda_oom_count = 0;
  bool shared_device_estimate = false;  // split from a shared device's counters (estimate)
  bool per_process_usage = false;       // a shared device's per-pod readings
  SmBasis sm_basis = SmBasis::kMeasured;
  bool vram_set_by_allocator = false;  // flat, high residency with low compute: a pool allocator
  uint32_t busy_devices = 0;    // the most devices one pod kept busy (see DeviceCursor::Busy)
  double average_pods = 0;      // pods holding the allocation, on average over the history
  double idle_hours_ratio = 0;  // share of the latest week's observed hours with no activity
};

// The wire form, with the identity of the store row and the reason a target is withheld.
v1::Recommendation ToProto(const Recommendation& recommendation, const FleetStore& store);

}  // namespace gpuvpa::recommender
