// Replays a request-arrival trace through a simulated queue driven the way KEDA drives an HPA
// from an external scaler, and meters the GPU time that costs against a fixed reservation.
//
// Model (per poll tick, every poll_interval_s):
// - depth = requests waiting + in service; active = depth > activation_threshold (strictly).
// - desired = ceil(depth / target) capped at max_replicas (the HPA's AverageValue rule), at
//   least 1 while active or within cooldown_s of the last active tick, 0 after (KEDA's
//   cooldownPeriod; scale to zero).
// - Scale-up is immediate; scale-down follows the highest desired count of the last
//   stabilization_s seconds (the HPA's default down-scale stabilization). A removed replica
//   finishes the request it is serving first.
// - A new replica serves only after cold_start_s (image pull, model load); its GPU is metered
//   from creation. Ready replicas serve one request at a time, first come first served, each
//   taking its own service time (a column of the arrivals file) or service_s.
// - Two baselines, over the same duration: (a) the fewest always-on replicas (ready, no cold
//   start) whose p99 queueing delay is no worse than the scaled run's, and (b) the run's peak
//   replica count always on. (a) is what a careful team would reserve; (b) is an upper bound.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa::scaler {

struct QueueReplayOptions {
  double service_s = 1.0;
  double target = 5;                // KEDA listLength
  double activation_threshold = 0;  // KEDA activationListLength
  int max_replicas = 10;
  double poll_interval_s = 30;   // KEDA pollingInterval
  double cooldown_s = 300;       // KEDA cooldownPeriod
  double stabilization_s = 300;  // HPA scaleDown stabilizationWindowSeconds
  double cold_start_s = 60;
  double gpu_per_replica = 1;
};

struct Arrival {
  double time_s = 0;     // Unix seconds
  double service_s = 0;  // how long one replica takes to serve it
};

struct QueueReplayResult {
  size_t requests = 0;
  double start_s = 0;         // the first arrival (Unix seconds)
  double duration_s = 0;      // first arrival to the last request served
  double metered_gpu_s = 0;   // replica lifetime x GPUs per replica
  double reserved_gpu_s = 0;  // baseline (b): peak replicas for the whole duration
  int peak_replicas = 0;
  int fixed_replicas = 0;       // baseline (a): fewest always-on replicas meeting the same p99
  double fixed_wait_p99_s = 0;  // their p99 queueing delay
  double fixed_gpu_s = 0;       // baseline (a) for the whole duration
  int cold_starts = 0;          // scale-ups from zero
  int replica_starts = 0;
  double idle_at_zero_s = 0;  // time with no replica at all
  double wait_p50_s = 0;
  double wait_p99_s = 0;
  double wait_max_s = 0;
};

// The demo's queue (README command 1): the training jobs of research/nightly-train in the demo
// fleet (recommender/input/demo_fleet.h), which trains 01:00-03:00 UTC every night on 4 GPUs and
// holds them idle the rest of the day. Jobs arrive as a Poisson process, one a minute on
// average, from 01:00 to 03:00 each night, each taking 40-80 s of one replica; the same options
// give the same bytes. CSV header: timestamp,service_seconds (RFC 3339 UTC).
struct DemoArrivalsOptions {
  double start_time_s = 1793577600;  // 2026-11-02T00:00:00Z, the demo fleet's first day
  int days = 7;
  double window_start_h = 1;  // UTC hour the nightly jobs start
  double window_hours = 2;
  double mean_interarrival_s = 60;
  uint64_t seed = 20261102;
};
std::string GenerateDemoArrivals(const DemoArrivalsOptions& options);

// Arrival times (Unix seconds) from a CSV whose first column is a timestamp, header required
// (the Azure LLM inference traces: TIMESTAMP,ContextTokens,GeneratedTokens).
Result<std::vector<double>> ReadArrivals(std::string_view csv);
// Arrivals with their service time: from column `service_column` of the header (seconds times
// `service_unit_s`, e.g. 0.001 for milliseconds) when given, else `default_service_s` each.
Result<std::vector<Arrival>> ReadArrivalRequests(std::string_view csv,
                                                 std::string_view service_column,
                                                 double service_unit_s, double default_service_s);

// Every request takes options.service_s.
Result<QueueReplayResult> ReplayQueue(std::vector<double> arrivals,
                                      const QueueReplayOptions& options);
Result<QueueReplayResult> ReplayQueue(std::vector<Arrival> arrivals,
                                      const QueueReplayOptions& options);

}  // namespace gpuvpa::scaler
