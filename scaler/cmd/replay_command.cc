// Replay command wiring.
#include "scaler/cmd/replay_command.h"

#include <cstdio>

#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cost/money.h"
#include "core/cost/price_book.h"
#include "scaler/replay/queue_replay.h"

namespace gpuvpa::scaler {

int RunReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string arrivals_path;
  QueueReplayOptions o;
  double usd_per_gpu_hour = 0;
  auto app = NewCommandApp("gpuvpa-scaler", "replay",
                           "Replay a request-arrival trace through a simulated KEDA/HPA-scaled "
                           "queue: metered GPU time against reserved.");
  app->add_option("--arrivals", arrivals_path, "request arrivals CSV, first column a timestamp")
      ->required();
  app->add_option("--service-seconds", o.service_s, "service time per request")
      ->required()
      ->check(PositiveNumber());
  app->add_option("--target", o.target, "queue length per replica, KEDA listLength")
      ->check(PositiveNumber());
  app->add_option("--activation", o.activation_threshold, "active when depth > this")
      ->check(NonNegativeNumber());
  app->add_option("--max-replicas", o.max_replicas, "maxReplicaCount")
      ->check(NumberInRange(1, 100000));
  app->add_option("--poll-seconds", o.poll_interval_s, "KEDA pollingInterval")
      ->check(PositiveNumber());
  app->add_option("--cooldown-seconds", o.cooldown_s, "KEDA cooldownPeriod before scaling to zero")
      ->check(NonNegativeNumber());
  app->add_option("--stabilization-seconds", o.stabilization_s, "HPA scale-down stabilization")
      ->check(NonNegativeNumber());
  app->add_option("--cold-start-seconds", o.cold_start_s, "time for a new replica to serve")
      ->check(NonNegativeNumber());
  app->add_option("--gpu-per-replica", o.gpu_per_replica, "GPUs per replica")
      ->check(PositiveNumber());
  app->add_option("--usd-per-gpu-hour", usd_per_gpu_hour, "price, to show the saving in dollars")
      ->check(NumberInRange(0.0, kDefaultMaxUsdPerGpuHour));
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  Result<std::string> csv = ReadWholeFile(arrivals_path);
  Result<std::vector<double>> arrivals =
      csv.ok() ? ReadArrivals(*csv) : Result<std::vector<double>>(csv.status());
  Result<QueueReplayResult> r =
      arrivals.ok() ? ReplayQueue(*arrivals, o) : Result<QueueReplayResult>(arrivals.status());
  if (!r.ok()) {
    err << "gpuvpa-scaler replay: " << r.status().message() << "\n";
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
    Result<MicroUsd> metered = PriceGpuSeconds(r->metered_gpu_s, usd_per_gpu_hour);
    Result<MicroUsd> reserved = PriceGpuSeconds(r->reserved_gpu_s, usd_per_gpu_hour);
    if (!metered.ok() || !reserved.ok()) {
      err << "gpuvpa-scaler replay: " << (metered.ok() ? reserved : metered).status().message()
          << "\n";
      return kExitFailure;
    }
    out << "cost                metered " << FormatUsd(*metered) << " vs reserved "
        << FormatUsd(*reserved) << "\n";
  }
  return 0;
}

}  // namespace gpuvpa::scaler
