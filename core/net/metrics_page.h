// /metrics for every gpuvpa daemon: a prometheus-cpp registry in text format 0.0.4, served by
// the project's HTTP server (no second web server with metrics of its own), with
// gpuvpa_build_info.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/money.h"
#include "core/net/http_server.h"

namespace gpuvpa {

// gpuvpa_build_info{component, version} 1, in `registry`.
void RegisterBuildInfo(prometheus::Registry& registry, std::string_view component);

// A spool's counts as counters (the alerts' "ledger appends failing" and "spool growing"):
// gpuvpa_ledger_spooled_rows_total (rows the ledger could not take when they were written,
// kept in the spool) and gpuvpa_ledger_dead_lettered_rows_total (rows it refused as invalid),
// labelled with the component. Sync() before each scrape.
class LedgerSpoolMetrics {
 public:
  LedgerSpoolMetrics(prometheus::Registry& registry, std::string_view component);
  void Sync(uint64_t spooled_rows, uint64_t dead_lettered_rows);

 private:
  std::mutex mu_;
  prometheus::Counter* spooled_;
  prometheus::Counter* dead_lettered_;
  uint64_t spooled_seen_ = 0;
  uint64_t dead_lettered_seen_ = 0;
};

// gpuvpa_cost_usd_total{cost_center, kind}: money as it accrues (kind allocated and idle from
// the recommender's ledger charges, metered from the scaler's metered periods,
// proposed_savings from the updater's plan over the time it stood), so that PromQL
// increase(gpuvpa_cost_usd_total[30d]) answers "this month". Thread-safe.
class CostCounters {
 public:
  explicit CostCounters(prometheus::Registry& registry);
  void Add(const std::string& cost_center, std::string_view kind, MicroUsd amount);

 private:
  prometheus::Family<prometheus::Counter>* family_;
};

// The pieces of the text format 0.0.4, for a page a daemon writes from its own table: a value
// as prometheus-cpp writes it (16 significant digits; Nan, +Inf, -Inf), a label value escaped
// (backslash, double quote, newline), and a family's # HELP (when not empty) and # TYPE lines.
void AppendMetricValue(std::string& out, double value);
void AppendEscapedLabelValue(std::string& out, std::string_view value);
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type);

// Families in the text format 0.0.4, byte for byte as prometheus-cpp's TextSerializer writes
// them, about 10 times faster (no ostream; a node agent's page of 1,300 series is written on
// every scrape).
std::string MetricsText(const std::vector<prometheus::MetricFamily>& families);

// The registry's samples as Prometheus scrapes them.
HttpServerResponse MetricsPage(prometheus::Registry& registry);

}  // namespace gpuvpa
