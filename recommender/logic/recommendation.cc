// Recommendation -> wire message.
#include "recommender/logic/recommendation.h"

#include <cstdio>

namespace gpuvpa::recommender {
namespace {

std::string Hours(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  return buf;
}

}  // namespace

v1::Recommendation ToProto(const Recommendation& r, const FleetStore& store) {
  v1::Recommendation out;
  *out.mutable_identity() = store.state(r.row).identity;
  out.set_has_target(r.has_target);
  if (!r.has_target)
    out.set_withheld_reason("history " + Hours(r.history_s) + " is below the minimum " +
                            Hours(r.min_history_s));
  out.set_vram_target_bytes(r.vram_target_bytes);
  out.set_vram_lower_bytes(r.vram_lower_bytes);
  out.set_vram_upper_bytes(r.vram_upper_bytes);
  out.set_vram_observed_peak_bytes(r.vram_observed_peak_bytes);
  out.set_sm_p90_ratio(r.sm_p90_ratio);
  out.set_sm_p99_ratio(r.sm_p99_ratio);
  out.set_active_duty_ratio(r.active_duty_ratio);
  out.set_longest_idle_gap_s(r.longest_idle_gap_s);
  out.set_allocated_gpu_hours(r.allocated_gpu_hours);
  out.set_used_gpu_hours_vram(r.used_gpu_hours_vram);
  out.set_used_gpu_hours_sm(r.used_gpu_hours_sm);
  out.set_idle_tax_gpu_hours_vram(r.idle_tax_gpu_hours_vram);
  out.set_idle_tax_gpu_hours_sm(r.idle_tax_gpu_hours_sm);
  out.set_confidence(r.confidence);
  out.set_history_s(r.history_s);
  out.set_sample_count(r.sample_count);
  out.set_cuda_oom_count(r.cuda_oom_count);
  out.set_shared_device_estimate(r.shared_device_estimate);
  out.set_per_process_usage(r.per_process_usage);
  out.set_sm_basis(SmBasisName(r.sm_basis));
  out.set_vram_set_by_allocator(r.vram_set_by_allocator);
  out.set_vram_history_peak_bytes(r.vram_history_peak_bytes);
  out.set_vram_limit_bytes(r.vram_limit_bytes);
  out.set_needs_larger_gpu(r.needs_larger_gpu);
  out.set_busy_devices(r.busy_devices);
  out.set_average_pods(r.average_pods);
  out.set_idle_hours_ratio(r.idle_hours_ratio);
  return out;
}

}  // namespace gpuvpa::recommender
