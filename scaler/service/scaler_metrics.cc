// Scaler metrics.
#include "scaler/service/scaler_metrics.h"

namespace gpuvpa::scaler {

ScalerMetrics::ScalerMetrics(std::shared_ptr<prometheus::Registry> registry,
                             std::set<std::string, std::less<>> cost_centers)
    : registry_(std::move(registry)),
      cost_centers_(std::move(cost_centers)),
      requests_(prometheus::BuildCounter()
                    .Name("gpuvpa_scaler_requests_total")
                    .Help("ExternalScaler RPCs by method and gRPC status code")
                    .Register(*registry_)),
      cost_(*registry_),
      source_read_seconds_(
          prometheus::BuildHistogram()
              .Name("gpuvpa_scaler_source_read_seconds")
              .Help("Latency of queue-depth reads from the backend (cache misses)")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                               0.025, 0.05, 0.1, 0.25, 0.5, 1})),
      source_refresh_seconds_(
          prometheus::BuildHistogram()
              .Name("gpuvpa_scaler_source_refresh_seconds")
              .Help("Latency of pipelined round trips that refresh the depths of asked-for "
                    "queues ahead of the next ask (count: round trips)")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                               0.025, 0.05, 0.1, 0.25, 0.5, 1})),
      refreshed_queues_(prometheus::BuildCounter()
                            .Name("gpuvpa_scaler_source_refreshed_queues_total")
                            .Help("Queue depths read by refresh round trips")
                            .Register(*registry_)
                            .Add({})),
      cache_hits_(prometheus::BuildCounter()
                      .Name("gpuvpa_scaler_cache_hits_total")
                      .Help("Depth reads answered from the cache or by a coalesced read")
                      .Register(*registry_)
                      .Add({})),
      active_scaled_objects_(prometheus::BuildGauge()
                                 .Name("gpuvpa_scaler_active_scaled_objects")
                                 .Help("ScaledObjects whose last read was active")
                                 .Register(*registry_)
                                 .Add({})),
      metered_gpu_seconds_(prometheus::BuildCounter()
                               .Name("gpuvpa_scaler_metered_gpu_seconds_total")
                               .Help("GPU-seconds of active replicas, by cost center")
                               .Register(*registry_)) {}

void ScalerMetrics::Request(const std::string& method, const std::string& code) {
  const std::string key = method + "\n" + code;
  prometheus::Counter* counter = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = request_counters_.find(key);
    if (it == request_counters_.end())
      it = request_counters_.emplace(key, &requests_.Add({{"method", method}, {"code", code}}))
               .first;
    counter = it->second;
  }
  counter->Increment();
}

void ScalerMetrics::SourceRead(double seconds) { source_read_seconds_.Observe(seconds); }
void ScalerMetrics::SourceRefresh(size_t queues, double seconds) {
  source_refresh_seconds_.Observe(seconds);
  refreshed_queues_.Increment(static_cast<double>(queues));
}
void ScalerMetrics::CacheHit() { cache_hits_.Increment(); }
void ScalerMetrics::SetActiveScaledObjects(double n) { active_scaled_objects_.Set(n); }
const std::string& ScalerMetrics::CostCenterLabel(const std::string& cost_center) const {
  // Label values come only from the configured set: a caller cannot mint series.
  return cost_centers_.contains(cost_center) ? cost_center : kUnallocatedLabel;
}

void ScalerMetrics::MeteredUsd(const std::string& cost_center, MicroUsd usd) {
  cost_.Add(CostCenterLabel(cost_center), "metered", usd);
}

void ScalerMetrics::MeteredGpuSeconds(const std::string& cost_center, double gpu_seconds) {
  metered_gpu_seconds_.Add({{"cost_center", CostCenterLabel(cost_center)}}).Increment(gpu_seconds);
}

}  // namespace gpuvpa::scaler
