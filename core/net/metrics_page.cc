// The /metrics answer.
#include "core/net/metrics_page.h"

#include <prometheus/gauge.h>

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <type_traits>

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

void AppendMetricValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
  } else {
    // As printf's %.16g (the standard defines it so), which is what an ostream with precision
    // 16 writes.
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
    out.append(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  }
}

void AppendEscapedLabelValue(std::string& out, std::string_view v) {
  size_t from = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out.append(v.data() + from, i - from);
    out += c == '\n' ? "\\n" : c == '"' ? "\\\"" : "\\\\";
    from = i + 1;
  }
  out.append(v.data() + from, v.size() - from);
}

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type) {
  if (!help.empty()) ((((out += "# HELP ") += name) += ' ') += help) += '\n';
  ((((out += "# TYPE ") += name) += ' ') += type) += '\n';
}

namespace {

void AppendCount(std::string& out, uint64_t v) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof buf, "%" PRIu64, v);
  out.append(buf, static_cast<size_t>(n));
}

// name<suffix>{labels[,extra="value"]} and the space before the value.
void AppendHead(std::string& out, const prometheus::MetricFamily& family,
                const prometheus::ClientMetric& metric, const char* suffix = "",
                const char* extra_name = nullptr, double extra_value = 0) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || extra_name != nullptr) {
    out += '{';
    const char* sep = "";
    for (const prometheus::ClientMetric::Label& l : metric.label) {
      ((out += sep) += l.name) += "=\"";
      AppendEscapedLabelValue(out, l.value);
      out += '"';
      sep = ",";
    }
    if (extra_name != nullptr) {
      ((out += sep) += extra_name) += "=\"";
      AppendMetricValue(out, extra_value);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void AppendTail(std::string& out, const prometheus::ClientMetric& metric) {
  if (metric.timestamp_ms != 0) (out += ' ') += std::to_string(metric.timestamp_ms);
  out += '\n';
}

const char* TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    default:
      return "untyped";
  }
}

}  // namespace

std::string MetricsText(const std::vector<prometheus::MetricFamily>& families) {
  using prometheus::MetricType;
  std::string out;
  size_t estimate = 0;
  for (const prometheus::MetricFamily& f : families) estimate += 96 + f.metric.size() * 128;
  out.reserve(estimate);
  for (const prometheus::MetricFamily& f : families) {
    AppendFamilyHeader(out, f.name, f.help, TypeName(f.type));
    for (const prometheus::ClientMetric& m : f.metric) {
      // One sample line: name<suffix>{labels[,extra]} value [timestamp].
      auto line = [&](const char* suffix, auto value, const char* extra_name = nullptr,
                      double extra_value = 0) {
        AppendHead(out, f, m, suffix, extra_name, extra_value);
        if constexpr (std::is_same_v<decltype(value), uint64_t>)
          AppendCount(out, value);
        else
          AppendMetricValue(out, value);
        AppendTail(out, m);
      };
      if (f.type == MetricType::Summary || f.type == MetricType::Histogram) {
        const bool summary = f.type == MetricType::Summary;
        line("_count", summary ? m.summary.sample_count : m.histogram.sample_count);
        line("_sum", summary ? m.summary.sample_sum : m.histogram.sample_sum);
      }
      switch (f.type) {
        case MetricType::Counter:
          line("", m.counter.value);
          break;
        case MetricType::Gauge:
          line("", m.gauge.value);
          break;
        case MetricType::Summary:
          for (const auto& q : m.summary.quantile) line("", q.value, "quantile", q.quantile);
          break;
        case MetricType::Histogram: {
          double last = -HUGE_VAL;
          for (const auto& b : m.histogram.bucket) {
            line("_bucket", b.cumulative_count, "le", b.upper_bound);
            last = b.upper_bound;
          }
          if (last != HUGE_VAL) line("_bucket", m.histogram.sample_count, "le", HUGE_VAL);
          break;
        }
        default:
          line("", m.untyped.value);
          break;
      }
    }
  }
  return out;
}

HttpServerResponse MetricsPage(prometheus::Registry& registry) {
  return {200, "text/plain; version=0.0.4; charset=utf-8", MetricsText(registry.Collect())};
}

}  // namespace gpuvpa
