// Replay command wiring.
#include "scaler/cmd/replay_command.h"

#include <cstdio>

#include "core/atomic_file.h"
#include "core/flags.h"
#include "core/money.h"
#include "scaler/replay/queue_replay.h"

namespace gpuvpa::scaler {

int RunReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string arrivals_path;
  QueueReplayOptions o;
  double usd_per_gpu_hour = 0;
  FlagParser flags("replay");
  flags.AddString("arrivals", &arrivals_path,
                  "request arrivals CSV, first column a timestamp (required)");
  flags.AddDouble("service-seconds", &o.service_s, "service time per request (required)");
  flags.AddDouble("target", &o.target, "queue length per replica, KEDA listLength (default 5)");
  flags.AddDouble("activation", &o.activation_threshold, "active when depth > this (default 0)");
  flags.AddInt("max-replicas", &o.max_replicas, "maxReplicaCount (default 10)");
  flags.AddDouble("poll-seconds", &o.poll_interval_s, "KEDA pollingInterval (default 30)");
  flags.AddDouble("cooldown-seconds", &o.cooldown_s,
                  "KEDA cooldownPeriod before scaling to zero (default 300)");
  flags.AddDouble("stabilization-seconds", &o.stabilization_s,
                  "HPA scale-down stabilization (default 300)");
  flags.AddDouble("cold-start-seconds", &o.cold_start_s,
                  "time for a new replica to serve (default 60)");
  flags.AddDouble("gpu-per-replica", &o.gpu_per_replica, "GPUs per replica (default 1)");
  flags.AddDouble("usd-per-gpu-hour", &usd_per_gpu_hour, "price, to show the saving in dollars");
  flags.Require("arrivals");
  flags.Require("service-seconds");
  if (!flags.ParseOrExplain(args, err)) return kExitUsage;
  Result<std::string> csv = ReadWholeFile(arrivals_path);
  Result<std::vector<double>> arrivals =
      csv.ok() ? ReadArrivals(*csv) : Result<std::vector<double>>(csv.status());
  Result<QueueReplayResult> r =
      arrivals.ok() ? ReplayQueue(*arrivals, o) : Result<QueueReplayResult>(arrivals.status());
  if (!r.ok()) {
    err << "replay: " << r.status().message() << "\n";
    return kExitFailure;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "requests            %zu over %.0f s\n"
                "GPU-seconds metered %.0f (scale-to-zero, peak %d replicas)\n"
                "GPU-seconds reserved %.0f (peak replicas always on)\n"
                "saving              %.1f %%\n"
                "cold starts         %d from zero, %d replica starts, %.0f s at zero replicas\n"
                "queueing delay      p50 %.2f s, p99 %.2f s, max %.2f s\n",
                r->requests, r->duration_s, r->metered_gpu_s, r->peak_replicas, r->reserved_gpu_s,
                r->reserved_gpu_s > 0 ? 100 * (1 - r->metered_gpu_s / r->reserved_gpu_s) : 0.0,
                r->cold_starts, r->replica_starts, r->idle_at_zero_s, r->wait_p50_s, r->wait_p99_s,
                r->wait_max_s);
  out << buf;
  if (usd_per_gpu_hour > 0) {
    out << "cost                metered "
        << FormatUsd(PriceGpuTime(std::llround(r->metered_gpu_s * 1000), usd_per_gpu_hour))
        << " vs reserved "
        << FormatUsd(PriceGpuTime(std::llround(r->reserved_gpu_s * 1000), usd_per_gpu_hour))
        << "\n";
  }
  return 0;
}

}  // namespace gpuvpa::scaler
