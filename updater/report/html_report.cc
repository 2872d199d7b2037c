// The plan report as one self-contained HTML page: inline CSS and SVG, no script, no network.
#include <algorithm>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "updater/report/report.h"
#include "updater/report/text_format.h"

namespace gpuvpa::updater {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Esc(std::string_view text) { return HtmlEscape(text); }
std::string Num(double v, int digits = 1) { return FormatFixed(v, digits); }

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 8px;color:#444}.muted{color:#667}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #e3e6ea;text-align:left}
th{font-weight:600;background:#f0f2f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.card{background:#fff;border:1px solid #d9dde3;border-radius:6px;padding:12px 16px;margin:10px 0}
.card h4{margin:0 0 6px;font-size:14px}.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
pre{background:#f3f4f6;border:1px solid #e1e4e8;padding:8px;overflow-x:auto;font-size:12px;max-width:100%;box-sizing:border-box}
.scroll{overflow-x:auto;max-width:100%}svg{max-width:100%;height:auto}
.stats{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}.stat{background:#fff;border:1px solid #d9dde3;border-radius:6px;padding:6px 10px;min-width:120px}
.stat b{display:block;font-size:16px;font-variant-numeric:tabular-nums}.cmd{font:12px ui-monospace,monospace;margin:8px 0 2px;overflow-wrap:anywhere}
.oom{color:#a40000;font-weight:600}
@media (max-width:600px){body{margin:8px}.card{padding:8px}h1{font-size:19px}}
.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;margin-left:6px}
.low{background:#dff3e4}.medium{background:#fff1c2}.high{background:#ffd9d6}.none{background:#eceff3}
)";

// Horizontal bars of one measure per cost center, on a scale of its own (idle tax over the
// history and savings per month are different quantities: never one scale).
std::string CostCenterBars(const std::vector<CostCenterGroup>& groups, const std::string& title,
                           MicroUsd (*value)(const CostCenterGroup&), const std::string& suffix,
                           const char* color) {
  MicroUsd top = 1;
  for (const CostCenterGroup& g : groups) top = std::max(top, std::max<MicroUsd>(0, value(g)));
  const int label_w = 160, bar_w = 300, row_h = 22;
  const int width = label_w + bar_w + 130;
  const int height = static_cast<int>(groups.size()) * row_h + 24;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 " +
                    std::to_string(width) + " " + std::to_string(height) + "\" width=\"" +
                    std::to_string(width) + "\" height=\"" + std::to_string(height) + "\"><title>" +
                    Esc(title) +
                    "</title><text x=\"0\" y=\"13\" font-size=\"12\" "
                    "font-weight=\"600\">" +
                    Esc(title) + "</text>";
  int y = 20;
  for (const CostCenterGroup& g : groups) {
    const MicroUsd v = std::max<MicroUsd>(0, value(g));
    const double w = bar_w * static_cast<double>(v) / static_cast<double>(top);
    svg += "<text x=\"0\" y=\"" + std::to_string(y + 12) + "\" font-size=\"12\">" + Esc(g.name) +
           "</text><rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y + 2) +
           "\" width=\"" + Num(w) + "\" height=\"13\" fill=\"" + color + "\"/><text x=\"" +
           Num(label_w + w + 6) + "\" y=\"" + std::to_string(y + 13) + "\" font-size=\"11\">" +
           Esc(FormatUsd(value(g)) + suffix) + "</text>";
    y += row_h;
  }
  return svg + "</svg>";
}

struct Marker {
  double value;
  std::string label;
  std::string color;
  std::string dash;
};

// A histogram of `bars` over [0, x_max] with vertical markers.
std::string Histogram(const std::string& title, const std::vector<WorkloadCharts::Bar>& bars,
                      double x_max, double unit, const std::string& unit_name,
                      const std::vector<Marker>& markers) {
  const int w = 360, h = 150, left = 34, bottom = 22, top = 18;
  const double plot_w = w - left - 8, plot_h = h - bottom - top;
  double most = 0;
  for (const auto& b : bars) most = std::max(most, b.weight);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 " +
                    std::to_string(w) + " " + std::to_string(h) + "\" width=\"" +
                    std::to_string(w) + "\" height=\"" + std::to_string(h) + "\"><title>" +
                    Esc(title) + "</title><text x=\"" + std::to_string(left) +
                    "\" y=\"12\" font-size=\"12\" font-weight=\"600\">" + Esc(title) + "</text>";
  auto x_of = [&](double v) { return left + plot_w * std::clamp(v / x_max, 0.0, 1.0); };
  svg += "<line x1=\"" + std::to_string(left) + "\" y1=\"" + Num(top + plot_h) + "\" x2=\"" +
         Num(left + plot_w) + "\" y2=\"" + Num(top + plot_h) + "\" stroke=\"#888\"/>";
  if (most > 0)
    for (const auto& b : bars) {
      if (b.weight <= 0 || b.from >= x_max) continue;
      const double bh = plot_h * b.weight / most;
      svg += "<rect x=\"" + Num(x_of(b.from), 2) + "\" y=\"" + Num(top + plot_h - bh, 2) +
             "\" width=\"" + Num(std::max(1.0, x_of(b.to) - x_of(b.from)), 2) + "\" height=\"" +
             Num(bh, 2) + "\" fill=\"#5b7fb8\"/>";
    }
  for (int i = 0; i < 4; ++i) {  // the last tick would run off the plot's right edge
    const double v = x_max * i / 4;
    svg += "<text x=\"" + Num(x_of(v)) + "\" y=\"" + std::to_string(h - 6) +
           "\" font-size=\"10\" text-anchor=\"middle\">" + Num(v / unit, unit_name == "%" ? 0 : 1) +
           "</text>";
  }
  int label_y = top + 10;
  for (const Marker& m : markers) {
    if (m.value <= 0) continue;
    const double x = x_of(m.value);
    svg += "<line x1=\"" + Num(x) + "\" y1=\"" + std::to_string(top) + "\" x2=\"" + Num(x) +
           "\" y2=\"" + Num(top + plot_h) + "\" stroke=\"" + m.color + "\" stroke-width=\"2\"" +
           (m.dash.empty() ? "" : " stroke-dasharray=\"" + m.dash + "\"") + "/>";
    const bool right_side = x > left + plot_w * 0.6;
    svg += "<text x=\"" + Num(right_side ? x - 3 : x + 3) + "\" y=\"" + std::to_string(label_y) +
           "\" font-size=\"10\" fill=\"" + m.color + "\"" +
           (right_side ? " text-anchor=\"end\"" : "") + ">" + Esc(m.label) + "</text>";
    label_y += 12;
  }
  return svg + "</svg>";
}

// A week of hours, one cell each: grey without a sample, light when idle, green by active share.
std::string ActivityStrip(const WorkloadCharts& c) {
  const int cell = 4, w = 168 * cell + 60, h = 62;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 " +
                    std::to_string(w) + " " + std::to_string(h) + "\" width=\"" +
                    std::to_string(w) + "\" height=\"" + std::to_string(h) +
                    "\"><title>Active share by hour, latest week</title><text x=\"0\" y=\"12\" "
                    "font-size=\"12\" font-weight=\"600\">Activity by hour (latest week; white = "
                    "idle hour, grey = no sample)</text>";
  const size_t n = c.hourly_active_ratio.size();
  for (size_t i = 0; i < n; ++i) {
    const double r = c.hourly_active_ratio[i];
    std::string fill = "#d5d8dc";
    if (!std::isnan(r)) {
      if (r <= 0) {
        fill = "#ffffff";
      } else {
        const int g = static_cast<int>(200 - 120 * std::clamp(r, 0.0, 1.0));
        fill = "rgb(40," + std::to_string(g) + ",90)";
      }
    }
    svg += "<rect x=\"" + std::to_string(i * cell) + "\" y=\"20\" width=\"" + std::to_string(cell) +
           "\" height=\"22\" fill=\"" + fill + "\" stroke=\"#eef\"/>";
  }
  if (c.latest_hour >= 0 && n > 0) {
    // Day ticks at midnight UTC.
    const int64_t first_hour = c.latest_hour - static_cast<int64_t>(n) + 1;
    for (size_t i = 0; i < n; ++i) {
      if ((first_hour + static_cast<int64_t>(i)) % 24 != 0) continue;
      svg += "<line x1=\"" + std::to_string(i * cell) + "\" y1=\"18\" x2=\"" +
             std::to_string(i * cell) + "\" y2=\"46\" stroke=\"#555\"/><text x=\"" +
             std::to_string(i * cell + 2) + "\" y=\"56\" font-size=\"10\">" +
             Esc(FormatTimestamp(static_cast<double>((first_hour + static_cast<int64_t>(i)) * 3600))
                     .substr(5, 5)) +
             "</text>";
    }
  }
  return svg + "</svg>";
}

std::string WorkloadCard(const PlannedAction& a, const std::optional<WorkloadCharts>& charts,
                         const ReportInput& input) {
  const v1::Recommendation& r = a.evidence;
  const std::string risk_class = a.changes() ? std::string(RiskName(a.risk)) : "none";
  std::string html = "<div class=\"card\"><h4>" + Esc(ActionDisplayName(a)) + "<span class=\"tag " +
                     risk_class + "\">" + Esc(ActionLabel(a)) +
                     (a.changes() ? ", risk " + std::string(RiskName(a.risk)) : "") +
                     "</span><span class=\"tag none\">" + Esc(std::string(UpdateModeName(a.mode))) +
                     (a.production ? ", production" : "") + (a.auto_apply ? ", applies" : "") +
                     "</span></h4><div class=\"muted\">" + Esc(a.reason) +
                     (a.risk_reason.empty() ? "" : " &mdash; " + Esc(a.risk_reason)) + "</div>";
  html += "<div class=\"scroll\"><table><tr><th>from</th><td>" + Esc(a.from_allocation) + " on " +
          Esc(a.from_model) + "</td><th>monthly now</th><td class=\"n\">" +
          (a.priced ? Esc(FormatUsd(a.monthly_before)) : "no price") +
          "</td></tr><tr><th>to</th><td>" + Esc(a.to_allocation) + " on " + Esc(a.to_model) +
          "</td><th>monthly planned</th><td class=\"n\">" +
          (a.priced ? Esc(FormatUsd(a.monthly_after)) : "no price") + "</td></tr>";
  html += "<tr><th>VRAM target [lower, upper]</th><td>" + Num(r.vram_target_bytes() / kGiB) + " [" +
          Num(r.vram_lower_bytes() / kGiB) + ", " + Num(r.vram_upper_bytes() / kGiB) +
          "] GiB</td><th>peak seen</th><td class=\"n\">" + Num(r.vram_history_peak_bytes() / kGiB) +
          " GiB</td></tr>";
  html += "<tr><th>SM p90 / p99</th><td>" + Num(r.sm_p90_ratio() * 100, 0) + " % / " +
          Num(r.sm_p99_ratio() * 100, 0) + " % (need " + Esc(SmNeedText(a)) + ", " +
          std::to_string(a.sm_slices_needed) +
          "/7 slices)</td><th>active duty</th><td class=\"n\">" +
          Num(r.active_duty_ratio() * 100, 1) + " %</td></tr>";
  html += "<tr><th>history</th><td>" + Num(r.history_s() / 86400, 1) + " days, " +
          std::to_string(r.sample_count()) + " samples, confidence " + Num(r.confidence(), 2) +
          "</td><th>idle hours</th><td class=\"n\">" + Num(r.idle_hours_ratio() * 100, 0) +
          " %</td></tr><tr><th>CUDA out-of-memory</th><td" +
          (r.cuda_oom_count() > 0 ? " class=\"oom\"" : "") + ">" +
          std::to_string(r.cuda_oom_count()) +
          " in the history</td><th>pods priced</th><td class=\"n\">" + Num(a.pods, 1) +
          "</td></tr></table></div>";
  if (charts) {
    html += "<div class=\"charts\">";
    double x_max =
        std::max({a.to_vram_capacity_bytes, r.vram_target_bytes(), r.vram_history_peak_bytes()});
    for (const auto& b : charts->vram)
      if (b.weight > 0) x_max = std::max(x_max, b.to);
    html += Histogram(
        "VRAM peaks per hour, GiB (decayed weight)", charts->vram, x_max * 1.08, kGiB, "GiB",
        {{r.vram_target_bytes(), "target " + Num(r.vram_target_bytes() / kGiB) + " GiB", "#c0392b",
          "5,3"},
         {a.to_vram_capacity_bytes, "capacity " + Num(a.to_vram_capacity_bytes / kGiB) + " GiB",
          "#1f5fbf", ""}});
    html += Histogram(
        "SM activity, % (share of samples)", charts->sm, 1.0, 0.01, "%",
        {{r.sm_p90_ratio(), "p90 " + Num(r.sm_p90_ratio() * 100, 0) + " %", "#c0392b", "5,3"}});
    html += ActivityStrip(*charts) + "</div>";
  } else {
    html +=
        "<div class=\"muted\">Charts need the histograms: plan from a checkpoint "
        "(--checkpoint).</div>";
  }
  for (const ChangeDocument& d : ChangeDocuments(a, input.scale_to_zero))
    html += "<div class=\"cmd\">" + Esc(d.title) + ": save as " + Esc(d.file) + ", then<br>$ " +
            Esc(d.command) + "</div><pre>" + Esc(d.yaml) + "</pre>";
  if (const std::string advice = IdleScaleDownAdvice(a); !advice.empty())
    html += "<div class=\"muted\">" + Esc(advice) + "</div>";
  return html + "</div>";
}

}  // namespace

Result<std::string> RenderHtmlReport(const ReportInput& input) {
  Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(input.actions);
  if (!groups.ok()) return groups.status();
  Result<CostCenterGroup> total = TotalOf(*groups);
  if (!total.ok()) return total.status();
  const MicroUsd before = total->monthly_before, after = total->monthly_after,
                 idle = total->idle_tax;
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width,initial-scale=1\"><title>gpuvpa plan</title><style>" +
      std::string(kStyle) + "</style></head><body>";
  html += "<h1>GPU rightsizing plan</h1><div class=\"muted\">Evidence through " +
          Esc(FormatTimestamp(input.as_of_s)) + " from " + Esc(input.source) + "; generated " +
          Esc(FormatTimestamp(input.generated_at_s)) +
          ". Monthly = 730 h at the price book's rates; idle tax = allocated minus VRAM-resident "
          "GPU time over the history.</div>";
  if (const std::string warning = UnallocatedWarning(input.actions); !warning.empty())
    html += "<div class=\"card high\" role=\"alert\">" + Esc(warning) + "</div>";
  auto stat = [](const std::string& label, const std::string& value) {
    return "<div class=\"stat\">" + Esc(label) + "<b>" + Esc(value) + "</b></div>";
  };
  html += "<div class=\"stats\">" + stat("workloads", std::to_string(input.actions.size())) +
          stat("monthly now", FormatUsd(before)) + stat("monthly planned", FormatUsd(after)) +
          stat("proposed savings per month", FormatUsd(before - after)) +
          stat("idle tax over the history", FormatUsd(idle)) + "</div>";
  html += "<h2>Cost centers</h2>" +
          CostCenterBars(
              *groups, "Idle tax over the history (allocated minus VRAM-resident GPU time)",
              [](const CostCenterGroup& g) { return g.idle_tax; }, "", "#e8833a") +
          CostCenterBars(
              *groups, "Proposed savings per month",
              [](const CostCenterGroup& g) { return g.monthly_savings(); }, "/month", "#2f9e5b");
  for (const CostCenterGroup& g : *groups) {
    html += "<h2>Cost center " + Esc(g.name) + "</h2><div class=\"muted\">" +
            std::to_string(g.changes) + " changes; " + Esc(FormatUsd(g.monthly_before)) +
            " &rarr; " + Esc(FormatUsd(g.monthly_after)) + " per month; idle tax " +
            Esc(FormatUsd(g.idle_tax)) + "</div>";
    for (const NamespaceGroup& ns : g.namespaces) {
      html += "<h3>Namespace " + Esc(ns.name) + "</h3>";
      for (size_t i : ns.actions)
        html += WorkloadCard(input.actions[i],
                             i < input.charts.size() ? input.charts[i] : std::nullopt, input);
    }
  }
  return html + "</body></html>\n";
}

}  // namespace gpuvpa::updater
