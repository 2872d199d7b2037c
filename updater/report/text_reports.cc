// The plan report as Markdown, JSON and CSV.
#include <nlohmann/json.hpp>

#include "core/base/csv.h"
#include "core/base/names.h"
#include "core/base/time_format.h"
#include "updater/report/report.h"
#include "updater/report/text_format.h"

namespace gpuvpa::updater {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Money(const PlannedAction& a, MicroUsd v) {
  return a.priced ? FormatUsd(v) : "no price";
}

// Markdown table cells: a '|' would end the cell, a newline the row.
std::string MdCell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

nlohmann::ordered_json ActionJson(const PlannedAction& a, const ReportInput& input,
                                  const std::optional<WorkloadCharts>& charts) {
  const v1::Recommendation& r = a.evidence;
  const v1::WorkloadIdentity& id = r.identity();
  nlohmann::ordered_json j = {
      {"namespace", id.namespace_name()},
      {"owner_kind", id.owner_kind()},
      {"owner_name", id.owner_name()},
      {"container", id.container()},
      {"action", PlanKindName(a.kind)},
      {"action_label", ActionLabel(a)},
      {"resize", PlanKindName(a.resize_kind)},
      {"queue_list", a.queue_list},
      {"reason", a.reason},
      {"mode", UpdateModeName(a.mode)},
      {"production", a.production},
      {"auto_apply", a.auto_apply},
      {"from", {{"allocation", a.from_allocation}, {"gpu_model", a.from_model}}},
      {"to",
       {{"allocation", a.to_allocation},
        {"gpu_model", a.to_model},
        {"vram_capacity_bytes", a.to_vram_capacity_bytes}}},
      {"risk",
       {{"level", RiskName(a.risk)},
        {"headroom_ratio", a.headroom_ratio},
        {"reason", a.risk_reason}}},
      {"cost",
       {{"priced", a.priced},
        {"monthly_before_usd", MicroToUsd(a.monthly_before)},
        {"monthly_after_usd", MicroToUsd(a.monthly_after)},
        {"monthly_savings_usd", MicroToUsd(a.monthly_savings())},
        {"pods", a.pods},
        {"idle_tax_usd_vram", r.priced() ? r.idle_tax_usd_vram() : 0.0}}},
      {"evidence",
       {{"has_target", r.has_target()},
        {"vram_target_bytes", r.vram_target_bytes()},
        {"vram_lower_bytes", r.vram_lower_bytes()},
        {"vram_upper_bytes", r.vram_upper_bytes()},
        {"vram_observed_peak_bytes", r.vram_observed_peak_bytes()},
        {"vram_history_peak_bytes", r.vram_history_peak_bytes()},
        {"sm_p90_ratio", r.sm_p90_ratio()},
        {"sm_p99_ratio", r.sm_p99_ratio()},
        {"sm_need_gpu_fraction", a.sm_need_gpu_fraction},
        {"gpus_per_pod", a.gpus_per_pod},
        {"sm_need_gpus_total", a.sm_need_gpus_total()},
        {"sm_slices_needed", a.sm_slices_needed},
        {"active_duty_ratio", r.active_duty_ratio()},
        {"idle_hours_ratio", r.idle_hours_ratio()},
        {"longest_idle_gap_s", r.longest_idle_gap_s()},
        {"busy_devices", r.busy_devices()},
        {"confidence", r.confidence()},
        {"history_s", r.history_s()},
        {"sample_count", r.sample_count()},
        {"cuda_oom_count", r.cuda_oom_count()},
        {"vram_set_by_allocator", r.vram_set_by_allocator()},
        {"shared_device_estimate", r.shared_device_estimate()},
        {"per_process_usage", r.per_process_usage()},
        {"sm_basis", r.sm_basis().empty() ? "sm_active" : r.sm_basis()}}},
      {"yaml_change", YamlChange(a, input.scale_to_zero)},
  };
  nlohmann::ordered_json changes = nlohmann::ordered_json::array();
  for (const ChangeDocument& d : ChangeDocuments(a, input.scale_to_zero))
    changes.push_back(
        {{"title", d.title}, {"file", d.file}, {"command", d.command}, {"yaml", d.yaml}});
  j["changes"] = std::move(changes);
  j["cost"]["gpu_per_replica"] = a.to_gpu_per_pod;
  if (charts) {
    auto bars = [](const std::vector<WorkloadCharts::Bar>& in) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& b : in) out.push_back({b.from, b.to, b.weight});
      return out;
    };
    nlohmann::ordered_json hours = nlohmann::ordered_json::array();
    for (double h : charts->hourly_active_ratio)
      hours.push_back(std::isnan(h) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(h));
    j["charts"] = {{"vram_histogram", bars(charts->vram)},
                   {"sm_histogram", bars(charts->sm)},
                   {"latest_hour_unix", charts->latest_hour},
                   {"hourly_active_ratio", hours}};
  }
  return j;
}

}  // namespace

Result<std::string> RenderJsonReport(const ReportInput& input) {
  Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(input.actions);
  if (!groups.ok()) return groups.status();
  nlohmann::ordered_json cost_centers = nlohmann::ordered_json::array();
  for (const CostCenterGroup& g : *groups) {
    nlohmann::ordered_json namespaces = nlohmann::ordered_json::array();
    for (const NamespaceGroup& ns : g.namespaces) {
      nlohmann::ordered_json workloads = nlohmann::ordered_json::array();
      for (size_t i : ns.actions)
        workloads.push_back(ActionJson(input.actions[i], input,
                                       i < input.charts.size() ? input.charts[i] : std::nullopt));
      namespaces.push_back({{"name", ns.name}, {"workloads", std::move(workloads)}});
    }
    cost_centers.push_back({{"name", g.name},
                            {"idle_tax_usd_vram", MicroToUsd(g.idle_tax)},
                            {"monthly_before_usd", MicroToUsd(g.monthly_before)},
                            {"monthly_after_usd", MicroToUsd(g.monthly_after)},
                            {"monthly_savings_usd", MicroToUsd(g.monthly_savings())},
                            {"changes", g.changes},
                            {"namespaces", std::move(namespaces)}});
  }
  const nlohmann::ordered_json doc = {{"schema", kReportSchema},
                                      {"warning", UnallocatedWarning(input.actions)},
                                      {"generated_at", FormatTimestamp(input.generated_at_s)},
                                      {"evidence_through", FormatTimestamp(input.as_of_s)},
                                      {"source", input.source},
                                      {"cost_centers", std::move(cost_centers)}};
  return doc.dump(2) + "\n";
}

std::string RenderCsvReport(const ReportInput& input) {
  std::string out =
      "cost_center,namespace,owner_kind,owner_name,container,action,mode,auto_apply,from,to,"
      "from_gpu_model,to_gpu_model,vram_target_gib,to_vram_capacity_gib,sm_need_gpu_fraction,"
      "risk,monthly_before_usd,monthly_after_usd,monthly_savings_usd,confidence,history_hours,"
      "reason,action_label,gpus_per_pod,sm_need_gpus_total,cuda_oom_count,gpu_per_replica\r\n";
  Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(input.actions);
  std::vector<size_t> order;
  if (groups.ok()) {
    for (const CostCenterGroup& g : *groups)
      for (const NamespaceGroup& ns : g.namespaces)
        order.insert(order.end(), ns.actions.begin(), ns.actions.end());
  } else {
    for (size_t i = 0; i < input.actions.size(); ++i) order.push_back(i);
  }
  for (size_t i : order) {
    const PlannedAction& a = input.actions[i];
    const v1::WorkloadIdentity& id = a.evidence.identity();
    const std::string money[] = {a.priced ? FormatFixed(MicroToUsd(a.monthly_before), 2) : "",
                                 a.priced ? FormatFixed(MicroToUsd(a.monthly_after), 2) : "",
                                 a.priced ? FormatFixed(MicroToUsd(a.monthly_savings()), 2) : ""};
    const std::string fields[] = {id.cost_center(),
                                  id.namespace_name(),
                                  id.owner_kind(),
                                  id.owner_name(),
                                  id.container(),
                                  std::string(PlanKindName(a.kind)),
                                  std::string(UpdateModeName(a.mode)),
                                  a.auto_apply ? "true" : "false",
                                  a.from_allocation,
                                  a.to_allocation,
                                  a.from_model,
                                  a.to_model,
                                  FormatFixed(a.vram_target_bytes / kGiB, 2),
                                  FormatFixed(a.to_vram_capacity_bytes / kGiB, 2),
                                  FormatFixed(a.sm_need_gpu_fraction, 3),
                                  std::string(RiskName(a.risk)),
                                  money[0],
                                  money[1],
                                  money[2],
                                  FormatFixed(a.evidence.confidence(), 2),
                                  FormatFixed(a.evidence.history_s() / 3600, 1),
                                  a.reason,
                                  ActionLabel(a),
                                  std::to_string(a.gpus_per_pod),
                                  FormatFixed(a.sm_need_gpus_total(), 3),
                                  std::to_string(a.evidence.cuda_oom_count()),
                                  FormatFixed(a.to_gpu_per_pod, 4)};
    // Text (names, the reason: what a peer or a label could set) is neutralised; numbers this
    // code formatted (a negative saving included) stay numbers.
    constexpr bool kNumber[] = {false, false, false, false, false, false, false, false, false,
                                false, false, false, true,  true,  true,  false, true,  true,
                                true,  true,  true,  false, false, true,  true,  true,  true};
    static_assert(sizeof kNumber == sizeof fields / sizeof fields[0]);
    for (size_t f = 0; f < std::size(fields); ++f) {
      if (f > 0) out += ',';
      out += kNumber[f] ? CsvNumber(fields[f]) : CsvText(fields[f]);
    }
    out += "\r\n";
  }
  return out;
}

Result<std::string> RenderMarkdownReport(const ReportInput& input) {
  Result<std::vector<CostCenterGroup>> groups = GroupByCostCenter(input.actions);
  if (!groups.ok()) return groups.status();
  std::string md = "# GPU rightsizing plan\n\nEvidence through " + FormatTimestamp(input.as_of_s) +
                   " (from " + MdCell(input.source) + "); generated " +
                   FormatTimestamp(input.generated_at_s) +
                   ". Monthly costs are for 730 h at the price book's rates; idle tax is "
                   "allocated minus VRAM-resident GPU time over the history.\n\n";
  if (const std::string warning = UnallocatedWarning(input.actions); !warning.empty())
    md += "> **Warning:** " + MdCell(warning) + "\n\n";
  md +=
      "| cost center | idle tax (history) | monthly now | monthly planned | savings/month | "
      "changes |\n|---|---:|---:|---:|---:|---:|\n";
  for (const CostCenterGroup& g : *groups)
    md += "| " + MdCell(g.name) + " | " + FormatUsd(g.idle_tax) + " | " +
          FormatUsd(g.monthly_before) + " | " + FormatUsd(g.monthly_after) + " | " +
          FormatUsd(g.monthly_savings()) + " | " + std::to_string(g.changes) + " |\n";
  // Changes first, largest saving first; then the workloads left as they are.
  std::vector<size_t> changed, unchanged;
  for (const CostCenterGroup& g : *groups)
    for (const NamespaceGroup& ns : g.namespaces)
      for (size_t i : ns.actions) (input.actions[i].changes() ? changed : unchanged).push_back(i);
  std::stable_sort(changed.begin(), changed.end(), [&](size_t a, size_t b) {
    return input.actions[a].monthly_savings() > input.actions[b].monthly_savings();
  });
  // Narrow rows, so that a pull-request comment shows every column.
  auto row = [&](size_t i) {
    const PlannedAction& a = input.actions[i];
    return "| " + MdCell(ActionDisplayName(a)) + " | " + MdCell(ActionLabel(a)) + " | " +
           Money(a, a.monthly_before) + " &rarr; " + Money(a, a.monthly_after) + " | " +
           std::string(RiskName(a.risk)) +
           (a.evidence.cuda_oom_count() > 0
                ? " (" + std::to_string(a.evidence.cuda_oom_count()) + " CUDA OOM)"
                : "") +
           " | " + std::string(UpdateModeName(a.mode)) + (a.auto_apply ? " (applies)" : "") +
           " |\n";
  };
  auto details = [&](size_t i) {
    const PlannedAction& a = input.actions[i];
    const v1::Recommendation& r = a.evidence;
    std::string d = "\n<details><summary>" + MdCell(ActionDisplayName(a)) + ": " +
                    MdCell(ActionLabel(a)) + "</summary>\n\n";
    d += "- " + MdCell(a.reason) + "\n- from " + MdCell(a.from_allocation) + " on " +
         MdCell(a.from_model) + " to " + MdCell(a.to_allocation) + " on " + MdCell(a.to_model) +
         "\n- VRAM target " + FormatFixed(a.vram_target_bytes / kGiB, 1) + " GiB (largest peak " +
         FormatFixed(r.vram_history_peak_bytes() / kGiB, 1) + " GiB); SM need " + SmNeedText(a) +
         "\n- CUDA out-of-memory: " + std::to_string(r.cuda_oom_count()) + " in the history\n";
    if (!a.risk_reason.empty())
      d += "- risk " + std::string(RiskName(a.risk)) + ": " + MdCell(a.risk_reason) + "\n";
    for (const ChangeDocument& c : ChangeDocuments(a, input.scale_to_zero)) {
      d += '\n';
      d += MdCell(c.title) + ": save as `" + c.file + "`, then\n\n```sh\n" + c.command +
           "\n```\n\n```yaml\n" + c.yaml + "```\n";
    }
    if (const std::string advice = IdleScaleDownAdvice(a); !advice.empty()) {
      d += '\n';
      d += MdCell(advice) + "\n";
    }
    return d + "\n</details>\n";
  };
  md += "\n## Changes (" + std::to_string(changed.size()) +
        ")\n\n| workload | action | monthly now &rarr; planned | risk | mode "
        "|\n|---|---|---|---|---|\n";
  // The table takes at most half the budget, so that the largest changes also show in full.
  size_t shown = 0;
  for (size_t i : changed) {
    const std::string line = row(i);
    if (md.size() + line.size() > kMarkdownReportBudget / 2) break;
    md += line;
    ++shown;
  }
  md += "\n## Details\n";
  for (size_t k = 0; k < shown; ++k) {
    const std::string block = details(changed[k]);
    if (md.size() + block.size() > kMarkdownReportBudget) {
      shown = k;
      break;
    }
    md += block;
  }
  if (shown < changed.size())
    md += "\n_" + std::to_string(changed.size() - shown) +
          " more changes are in report.html, report.json and report.csv: a pull-request comment "
          "holds 65,536 characters._\n";
  md += "\n## Unchanged (" + std::to_string(unchanged.size()) + ")\n\n";
  size_t listed = 0;
  for (size_t i : unchanged) {
    const PlannedAction& a = input.actions[i];
    const std::string line = "- " + MdCell(ActionDisplayName(a)) + ": " + MdCell(a.reason) + "\n";
    if (md.size() + line.size() + 200 > kMarkdownReportBudget) break;
    md += line;
    ++listed;
  }
  if (listed < unchanged.size())
    md += "\n_" + std::to_string(unchanged.size() - listed) +
          " more unchanged workloads are in report.html and report.json._\n";
  return md;
}

}  // namespace gpuvpa::updater
