// gpuvpa-scaler's own Prometheus metrics (prometheus-cpp), declared once here. Label sets are
// bounded: RPC method and status code, configured cost centers; never a pod, queue item or
// request id.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/cost/money.h"
#include "core/net/metrics_page.h"

namespace gpuvpa::scaler {

class ScalerMetrics {
 public:
  // `cost_centers`: the label values metered GPU-seconds may carry; any other cost center is
  // counted under "unallocated" (the ledger keeps the real one).
  explicit ScalerMetrics(std::shared_ptr<prometheus::Registry> registry,
                         std::set<std::string, std::less<>> cost_centers = {});

  void Request(const std::string& method, const std::string& code);
  void SourceRead(double seconds);
  // One round trip that read `queues` depths ahead of the asks.
  void SourceRefresh(size_t queues, double seconds);
  void CacheHit();
  void SetActiveScaledObjects(double n);
  void MeteredGpuSeconds(const std::string& cost_center, double gpu_seconds);
  // A metered row's cost, as written: gpuvpa_cost_usd_total{kind="metered"}.
  void MeteredUsd(const std::string& cost_center, MicroUsd usd);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  inline static const std::string kUnallocatedLabel = "unallocated";
  // The cost center as a label value: one of the configured set, else "unallocated".
  const std::string& CostCenterLabel(const std::string& cost_center) const;
  std::shared_ptr<prometheus::Registry> registry_;
  const std::set<std::string, std::less<>> cost_centers_;
  prometheus::Family<prometheus::Counter>& requests_;
  CostCounters cost_;
  prometheus::Histogram& source_read_seconds_;
  prometheus::Histogram& source_refresh_seconds_;
  prometheus::Counter& refreshed_queues_;
  prometheus::Counter& cache_hits_;
  prometheus::Gauge& active_scaled_objects_;
  prometheus::Family<prometheus::Counter>& metered_gpu_seconds_;
  std::mutex mu_;  // Family::Add is thread-safe; the cache of label lookups is ours
  std::map<std::string, prometheus::Counter*> request_counters_;
};

}  // namespace gpuvpa::scaler
