// A deterministic demo fleet: the trace behind the README's demo and many tests.
//
// Load shapes (one trace row per device per sample period, UTC, starting on a Monday):
// - agents/Deployment/agent-loop/worker (A100-80GB, 1 GPU): bursty agent loop. Bursts of 2-8
//   minutes start with probability 1/45 per idle minute; SM 0.55-0.85 and VRAM 14-18 GiB in a
//   burst, SM ~0 and 14 GiB (weights stay loaded) between; one CUDA OOM in the first burst of
//   day 4.
// - search/Deployment/embed-server/server (L4-24GB, 1 GPU, 2 replicas): steady inference server
//   with a diurnal cycle, SM 0.15-0.65, VRAM 9.5-10.2 GiB.
// - chat/StatefulSet/vllm-llama/vllm (H100-80GB, 1 GPU): pool allocator. VRAM flat at 90 % of
//   the card from start; SM 0.03-0.18.
// - research/StatefulSet/nightly-train/trainer (H100-80GB, 4 GPUs): trains 01:00-03:00 every
//   night (SM 0.85-0.95, VRAM 62-68 GiB per GPU) and holds its GPUs idle the rest of the day.
// - ml-team/StatefulSet/notebook-alice/notebook (T4-16GB, 1 GPU): idle notebook, 2.1 GiB
//   resident, active 20 minutes after lunch on weekdays.
// - fraud/Deployment/fraud-scorer/scorer (H100-80GB MIG 3g.40gb): small steady model, 7 GiB.
// - dev/Deployment/batch-embed/embed (A100-80GB time-sliced 4 ways): 10 minutes of work an hour.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace gpuvpa::recommender {

struct DemoFleetOptions {
  double start_time_s = 1793577600;  // 2026-11-02T00:00:00Z, a Monday
  int days = 7;
  double sample_period_s = 60;
  uint64_t seed = 20261102;
};

// The trace as CSV text in the documented format; the same options give the same bytes.
std::string GenerateDemoFleetTrace(const DemoFleetOptions& options);

// Writes it atomically to `path`.
Status WriteDemoFleetTrace(const DemoFleetOptions& options, const std::string& path);

}  // namespace gpuvpa::recommender
