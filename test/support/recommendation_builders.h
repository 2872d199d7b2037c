// Recommendations the updater's tests and benchmarks feed it.
#pragma once

#include <string>

#include "proto/gpuvpa.pb.h"

namespace gpuvpa::testing {

// A week-old H100 Deployment container whose 12 GiB p98 and 10 % SM fit MIG 1g.20gb (the
// planner's acceptance pick).
inline v1::Recommendation MigFittingH100Recommendation(const std::string& ns,
                                                       const std::string& name,
                                                       double history_s = 7 * 86400) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  v1::Recommendation r;
  v1::WorkloadIdentity* id = r.mutable_identity();
  id->set_namespace_name(ns);
  id->set_owner_kind("Deployment");
  id->set_owner_name(name);
  id->set_container("main");
  id->set_gpu_model("H100-80GB");
  id->set_allocation("nvidia.com/gpu=1");
  id->set_cost_center("team");
  r.set_has_target(true);
  r.set_vram_target_bytes(12 * kGiB);
  r.set_vram_lower_bytes(10 * kGiB);
  r.set_vram_upper_bytes(13 * kGiB);
  r.set_vram_observed_peak_bytes(11 * kGiB);
  r.set_vram_history_peak_bytes(11 * kGiB);
  r.set_vram_limit_bytes(80 * kGiB);
  r.set_sm_p90_ratio(0.10);
  r.set_active_duty_ratio(0.9);
  r.set_confidence(7);
  r.set_history_s(history_s);
  r.set_sample_count(10000);
  r.set_busy_devices(1);
  r.set_average_pods(1);
  return r;
}

}  // namespace gpuvpa::testing
