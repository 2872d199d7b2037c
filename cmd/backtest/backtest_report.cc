// The backtest's comparison: a text table and an HTML page with bars.
#include <algorithm>

#include "cmd/backtest/backtest.h"
#include "core/base/time_format.h"
#include "updater/report/text_format.h"

namespace gpuvpa::cmd {

// The planner and its policy are the updater's; the backtest runs them on replayed history.
using namespace updater;  // NOLINT(build/namespaces)

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Num(double v, int digits) { return FormatFixed(v, digits); }
std::string Esc(std::string_view text) { return HtmlEscape(text); }

}  // namespace

std::string FormatBacktestTable(const BacktestResult& r) {
  std::string out = "backtest: trained on " + FormatTimestamp(r.first_time_s) + " .. " +
                    FormatTimestamp(r.split_time_s) + ", checked against .. " +
                    FormatTimestamp(r.last_time_s) + "; " + std::to_string(r.workloads.size()) +
                    " workload-containers evaluated, " + std::to_string(r.workloads_skipped) +
                    " skipped (no target, no price or no future sample); today's allocation " +
                    FormatUsd(r.monthly_before) + "/month\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-26s %8s %8s %12s %10s %12s %12s\n", "STRATEGY", "OOM MISS",
                "TGT MISS", "COST/TODAY", "TGT/DEVICE", "TGT/PAST PK", "MONTHLY");
  out += line;
  for (const StrategySummary& s : r.strategies) {
    const std::string misses = std::to_string(s.misses) + "/" + std::to_string(r.workloads.size());
    const std::string target_misses =
        std::to_string(s.target_misses) + "/" + std::to_string(r.workloads.size());
    std::snprintf(line, sizeof line, "%-26s %8s %8s %12.3f %10.3f %12.3f %12s\n", s.name.c_str(),
                  misses.c_str(), target_misses.c_str(), s.cost_ratio, s.mean_target_share,
                  s.mean_target_to_peak, FormatUsd(s.monthly_after).c_str());
    out += line;
  }
  out +=
      "OOM MISS: the future VRAM peak overflows the picked allocation (a CUDA OOM); TGT MISS: "
      "it passes the target itself. COST/TODAY: planned monthly cost over today's.\n";
  return out;
}

std::string RenderBacktestHtml(const BacktestResult& r, const std::string& trace_path) {
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuvpa backtest"
      "</title><style>body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330}"
      "table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #e3e6ea;"
      "text-align:left}td.n{text-align:right}.miss{color:#b3261e;font-weight:600}</style></head>"
      "<body><h1>Backtest</h1><p>" +
      Esc(trace_path) + ": trained on " + Esc(FormatTimestamp(r.first_time_s)) + " .. " +
      Esc(FormatTimestamp(r.split_time_s)) + ", checked against the rest (.. " +
      Esc(FormatTimestamp(r.last_time_s)) + "). " + std::to_string(r.workloads.size()) +
      " workload-containers; today's allocation " + Esc(FormatUsd(r.monthly_before)) +
      " per month.</p>";
  const int w = 720, row_h = 40, label_w = 190, bar_w = 380;
  html += "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"" + std::to_string(w) +
          "\" height=\"" + std::to_string(kBacktestStrategies * row_h + 10) +
          "\"><title>Cost relative to today and future-peak misses per strategy</title>";
  int y = 4;
  for (const StrategySummary& s : r.strategies) {
    const double bw = bar_w * std::clamp(s.cost_ratio, 0.0, 1.5) / 1.5;
    html += "<text x=\"0\" y=\"" + std::to_string(y + 16) + "\" font-size=\"13\">" + Esc(s.name) +
            "</text><rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y + 4) +
            "\" width=\"" + Num(bw, 1) + "\" height=\"16\" fill=\"#5b7fb8\"/><text x=\"" +
            Num(label_w + bw + 6, 1) + "\" y=\"" + std::to_string(y + 16) + "\" font-size=\"12\">" +
            Num(s.cost_ratio, 3) + " of today, " + std::to_string(s.misses) + " OOM misses</text>";
    y += row_h;
  }
  html +=
      "</svg><h2>Per workload</h2><table><tr><th>workload</th><th>past peak GiB</th>"
      "<th>future peak GiB</th>";
  for (const StrategySummary& s : r.strategies) html += "<th>" + Esc(s.name) + "</th>";
  html += "</tr>";
  for (const WorkloadBacktest& wb : r.workloads) {
    const v1::WorkloadIdentity& id = wb.identity;
    html += "<tr><td>" + Esc(id.namespace_name() + "/" + id.owner_name() + "/" + id.container()) +
            "</td><td class=\"n\">" + Num(wb.history_peak_bytes / kGiB, 1) +
            "</td><td class=\"n\">" + Num(wb.future_peak_bytes / kGiB, 1) + "</td>";
    for (const StrategyOutcome& o : wb.outcomes)
      html += std::string("<td") + (o.miss ? " class=\"miss\"" : "") + ">" +
              Num(o.vram_target_bytes / kGiB, 1) + " GiB &rarr; " + Esc(o.to_allocation) +
              (o.miss ? " (OOM)" : "") + "</td>";
    html += "</tr>";
  }
  return html + "</table></body></html>\n";
}

}  // namespace gpuvpa::cmd
