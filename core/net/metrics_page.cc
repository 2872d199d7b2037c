// The /metrics answer.
#include "core/net/metrics_page.h"

#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <map>

#include "core/cli/cli.h"

namespace gpuvpa {

void RegisterBuildInfo(prometheus::Registry& registry, std::string_view component) {
  prometheus::BuildGauge()
      .Name("gpuvpa_build_info")
      .Help("1, labelled with the component and its version")
      .Register(registry)
      .Add({{"component", std::string(component)}, {"version", std::string(GpuvpaVersion())}})
      .Set(1);
}

LedgerSpoolMetrics::LedgerSpoolMetrics(prometheus::Registry& registry, std::string_view component) {
  const std::map<std::string, std::string> labels = {{"component", std::string(component)}};
  spooled_ = &prometheus::BuildCounter()
                  .Name("gpuvpa_ledger_spooled_rows_total")
                  .Help("Ledger rows the ledger could not take when written, kept in the spool")
                  .Register(registry)
                  .Add(labels);
  dead_lettered_ = &prometheus::BuildCounter()
                        .Name("gpuvpa_ledger_dead_lettered_rows_total")
                        .Help("Ledger rows the ledger refused as invalid, in the dead-letter file")
                        .Register(registry)
                        .Add(labels);
}

void LedgerSpoolMetrics::Sync(uint64_t spooled_rows, uint64_t dead_lettered_rows) {
  std::lock_guard<std::mutex> lock(mu_);
  // A counter only goes up: it takes what the sink counted since the last scrape.
  auto catch_up = [](prometheus::Counter& counter, uint64_t& seen, uint64_t now) {
    if (now > seen) counter.Increment(static_cast<double>(now - seen));
    seen = std::max(seen, now);
  };
  catch_up(*spooled_, spooled_seen_, spooled_rows);
  catch_up(*dead_lettered_, dead_lettered_seen_, dead_lettered_rows);
}

CostCounters::CostCounters(prometheus::Registry& registry)
    : family_(&prometheus::BuildCounter()
                   .Name("gpuvpa_cost_usd_total")
                   .Help("US dollars accrued by cost center and kind (allocated, idle, metered, "
                         "proposed_savings); increase() over a window is its cost")
                   .Register(registry)) {}

void CostCounters::Add(const std::string& cost_center, std::string_view kind, MicroUsd amount) {
  if (amount <= 0) return;
  family_->Add({{"cost_center", cost_center}, {"kind", std::string(kind)}})
      .Increment(MicroToUsd(amount));
}

HttpServerResponse MetricsPage(prometheus::Registry& registry) {
  return {200, "text/plain; version=0.0.4; charset=utf-8",
          prometheus::TextSerializer().Serialize(registry.Collect())};
}

}  // namespace gpuvpa
