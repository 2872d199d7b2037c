// Showback formatting and command.
#include "core/cost/showback.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/base/atomic_file.h"
#include "core/base/csv.h"
#include "core/base/time_format.h"

namespace gpuvpa {
namespace {

struct Column {
  const char* title;
  const char* key;  // CSV / JSON field
  bool money;
  int64_t (*get)(const ShowbackRow&);
  bool needs_measured_usage = false;  // unknown (not $0) for a group with no measured usage
};

constexpr int kJsonSchemaVersion = 2;  // 2: period, currency, null idle tax when unmeasured

// Showback columns first, chargeback last, as the labels say.
const std::vector<Column>& Columns() {
  static const std::vector<Column> columns = {
      {"ALLOCATED GPU-h", "allocated_gpu_hours", false,
       [](const ShowbackRow& r) { return r.allocated_gpu_time; }},
      {"ALLOCATED (showback)", "allocated_usd", true,
       [](const ShowbackRow& r) { return r.allocated; }},
      {"USED VRAM (billable)", "used_vram_usd", true,
       [](const ShowbackRow& r) { return r.used_vram; }},
      {"USED SM (advisory)", "used_sm_usd", true, [](const ShowbackRow& r) { return r.used_sm; }},
      {"IDLE TAX VRAM", "idle_tax_vram_usd", true,
       [](const ShowbackRow& r) { return r.idle_tax_vram; }, true},
      {"IDLE TAX SM", "idle_tax_sm_usd", true, [](const ShowbackRow& r) { return r.idle_tax_sm; },
       true},
      {"SAVINGS REALISED /mo", "savings_realised_monthly_usd", true,
       [](const ShowbackRow& r) { return r.savings_realised_monthly; }},
      {"SAVINGS PROPOSED /mo", "savings_proposed_monthly_usd", true,
       [](const ShowbackRow& r) { return r.savings_proposed_monthly; }},
      {"METERED GPU-h", "metered_gpu_hours", false,
       [](const ShowbackRow& r) { return r.metered_gpu_time; }},
      {"METERED (chargeback)", "metered_usd", true, [](const ShowbackRow& r) { return r.metered; }},
      {"RESERVED EQUIVALENT", "reserved_usd", true,
       [](const ShowbackRow& r) { return r.reserved; }},
      // The bill: every GPU-second once (metered where metered, else allocated).
      {"BILLED", "billed_usd", true, [](const ShowbackRow& r) { return r.billed; }},
      {"BILLED AS METERED", "billed_metered_usd", true,
       [](const ShowbackRow& r) { return r.billed_metered; }},
      {"ALLOCATED NOT BILLED", "allocated_not_billed_usd", true,
       [](const ShowbackRow& r) { return r.allocated_unbilled; }},
  };
  return columns;
}

bool Unknown(const Column& c, const ShowbackRow& r) {
  return c.needs_measured_usage && !r.usage_measured;
}

std::string Cell(const Column& c, const ShowbackRow& r, bool plain) {
  if (Unknown(c, r)) return plain ? "" : "unknown";
  const int64_t v = c.get(r);
  char buf[64];
  if (!c.money) {
    std::snprintf(buf, sizeof buf, "%.3f", MilliGpuSecondsToGpuHours(v));
    return buf;
  }
  return plain ? MicroUsdDecimal(v) : FormatUsd(v);
}

std::vector<const ShowbackRow*> AllRows(const Showback& s) {
  std::vector<const ShowbackRow*> rows;
  for (const ShowbackRow& r : s.groups) rows.push_back(&r);
  rows.push_back(&s.total);
  return rows;
}

std::string Window(const Showback& s) {
  if (!s.from_s && !s.to_s) return "all time";
  return "[" + (s.from_s ? FormatTimestamp(static_cast<double>(*s.from_s)) : "start") + ", " +
         (s.to_s ? FormatTimestamp(static_cast<double>(*s.to_s)) : "end") + ")";
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// A money column in whole cents, groups then the total, such that the displayed groups add up
// to the displayed total exactly: the total rounded half up, each group rounded down, and the
// cents left over go to the groups with the largest remainders (Hamilton's method), so no
// group is more than a cent off its exact amount.
std::vector<int64_t> DisplayedCents(const Showback& s, const Column& c) {
  constexpr int64_t kMicroPerCent = 10'000;
  std::vector<int64_t> cents;
  std::vector<std::pair<int64_t, size_t>> remainders;
  int64_t floors = 0;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    const int64_t v = c.get(s.groups[i]);
    cents.push_back(FloorDiv(v, kMicroPerCent));
    floors += cents.back();
    remainders.push_back({v - cents.back() * kMicroPerCent, i});
  }
  const int64_t total = FloorDiv(c.get(s.total) + kMicroPerCent / 2, kMicroPerCent);
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t left = total - floors, k = 0; left > 0 && k < static_cast<int64_t>(cents.size());
       --left, ++k)
    ++cents[remainders[static_cast<size_t>(k)].second];
  cents.push_back(total);
  return cents;
}

std::string Table(const Showback& s, const char* group_title, bool markdown) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {group_title};
  for (const Column& c : Columns()) header.push_back(c.title);
  cells.push_back(header);
  std::vector<std::vector<int64_t>> cents;
  for (const Column& c : Columns())
    cents.push_back(c.money ? DisplayedCents(s, c) : std::vector<int64_t>{});
  const std::vector<const ShowbackRow*> rows = AllRows(s);
  for (size_t row = 0; row < rows.size(); ++row) {
    std::vector<std::string> line = {rows[row]->group};
    for (size_t col = 0; col < Columns().size(); ++col) {
      const Column& c = Columns()[col];
      line.push_back(c.money && !Unknown(c, *rows[row]) ? FormatUsd(cents[col][row] * 10'000)
                                                        : Cell(c, *rows[row], false));
    }
    cells.push_back(line);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out;
  for (size_t row = 0; row < cells.size(); ++row) {
    std::string line = markdown ? "|" : "";
    for (size_t i = 0; i < cells[row].size(); ++i) {
      const std::string& v = cells[row][i];
      const std::string pad(width[i] - v.size(), ' ');
      line += markdown ? " " + v + pad + " |"
                       : (i == 0 ? v + pad : pad + v) + (i + 1 < cells[row].size() ? "  " : "");
    }
    out += line + "\n";
    if (markdown && row == 0) {
      std::string rule = "|";
      for (size_t i = 0; i < width.size(); ++i)
        rule += (i == 0 ? " :" : " ") + std::string(width[i] - 1, '-') + (i == 0 ? " |" : ": |");
      out += rule + "\n";
    }
  }
  out += markdown ? "\n" : "";
  out += "Window " + Window(s) +
         ", prorated by seconds. Allocated, used and idle tax are showback estimates; metered "
         "figures are chargeback. BILLED counts each GPU-second once: metered for workloads "
         "metered in the window, allocated for the rest; rows add up to TOTAL to the cent.";
  if (s.total.usage_unmeasured)
    out += " Idle tax counts only rows with measured usage (\"unknown\": none measured).";
  out += "\n";
  return out;
}

// One row per group, no total: a pivot table sums the groups itself (amounts to the
// micro-dollar, so the sum is exact). Each row carries the window and the currency, so that a
// file stands on its own once it is pasted elsewhere; group names are neutralised text.
std::string Csv(const Showback& s, const char* group_key) {
  std::string out = std::string(group_key) + ",period_start,period_end,currency";
  for (const Column& c : Columns()) out += std::string(",") + c.key;
  out += "\r\n";
  const std::string start =
      s.from_s ? FormatTimestamp(static_cast<double>(*s.from_s)) : std::string();
  const std::string end = s.to_s ? FormatTimestamp(static_cast<double>(*s.to_s)) : std::string();
  for (const ShowbackRow& r : s.groups) {
    out += CsvText(r.group) + "," + start + "," + end + ",USD";
    for (const Column& c : Columns()) out += "," + CsvNumber(Cell(c, r, true));
    out += "\r\n";
  }
  return out;
}

std::string Json(const Showback& s, const char* group_key) {
  nlohmann::json doc;
  doc["basis"] = {
      {"showback", "allocated, used and idle tax: estimates from allocation and sampled usage"},
      {"chargeback", "metered: per-second metering of active replicas"}};
  doc["schema_version"] = kJsonSchemaVersion;
  doc["currency"] = "USD";
  doc["period"] = {
      {"from",
       s.from_s ? nlohmann::json(FormatTimestamp(static_cast<double>(*s.from_s))) : nullptr},
      {"to", s.to_s ? nlohmann::json(FormatTimestamp(static_cast<double>(*s.to_s))) : nullptr},
      {"proration", "by seconds of each row's period inside the window"}};
  auto row_json = [&](const ShowbackRow& r) {
    nlohmann::json j;
    j[group_key] = r.group;
    for (const Column& c : Columns()) {
      if (Unknown(c, r)) {
        j[c.key] = nullptr;
        continue;
      }
      j[c.key] = c.money ? MicroToUsd(c.get(r)) : MilliGpuSecondsToGpuHours(c.get(r));
    }
    return j;
  };
  doc["groups"] = nlohmann::json::array();
  for (const ShowbackRow& r : s.groups) doc["groups"].push_back(row_json(r));
  doc["total"] = row_json(s.total);
  return doc.dump(2) + "\n";
}

std::string Summary(const ShowbackRow& t) {
  auto percent = [](MicroUsd part, MicroUsd whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%",
                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return std::string(buf);
  };
  std::string s = "fleet idle tax            ";
  if (t.allocated == 0)
    s += "none: no allocated GPU time in the ledger\n";
  else if (!t.usage_measured)
    s += "unknown: no measured usage in the ledger (allocation-only rows)\n";
  else
    s += FormatUsd(t.idle_tax_vram) + " of " + FormatUsd(t.allocated) +
         " allocated GPU cost is idle (" + percent(t.idle_tax_vram, t.allocated) +
         ", VRAM-residency basis)\n";
  s += "proposed monthly savings  " + FormatUsd(t.savings_proposed_monthly) + " a month";
  if (t.savings_realised_monthly > 0)
    s += " (realised so far: " + FormatUsd(t.savings_realised_monthly) + " a month)";
  s += "\nscale-to-zero metering    ";
  if (t.metered_gpu_time == 0)
    s += "no metered periods in the ledger\n";
  else
    s += FormatUsd(t.metered) + " metered vs " + FormatUsd(t.reserved) + " reserved" +
         (t.reserved > 0 ? " (" + percent(t.metered, t.reserved) + " of the reservation)" : "") +
         "\n";
  return s;
}

}  // namespace

Result<ReportFormat> ParseReportFormat(std::string_view text) {
  if (text == "table") return ReportFormat::kTable;
  if (text == "csv") return ReportFormat::kCsv;
  if (text == "json") return ReportFormat::kJson;
  if (text == "md" || text == "markdown") return ReportFormat::kMarkdown;
  if (text == "summary") return ReportFormat::kSummary;
  return InvalidArgumentError("--format \"" + std::string(text) +
                              "\" is not one of table, csv, json, md, summary");
}

std::string FormatShowback(const Showback& showback, ShowbackGroup group_by, ReportFormat format) {
  // The group's column: {machine name, heading, table heading}.
  const std::array<const char*, 3> names =
      group_by == ShowbackGroup::kGpuModel ? std::array{"gpu_model", "GPU model", "GPU MODEL"}
      : group_by == ShowbackGroup::kCluster
          ? std::array{"cluster", "Cluster", "CLUSTER"}
          : std::array{"cost_center", "Cost center", "COST CENTER"};
  switch (format) {
    case ReportFormat::kCsv:
      return Csv(showback, names[0]);
    case ReportFormat::kJson:
      return Json(showback, names[0]);
    case ReportFormat::kMarkdown:
      return Table(showback, names[1], true);
    case ReportFormat::kSummary:
      return Summary(showback.total);
    case ReportFormat::kTable:
      break;
  }
  return Table(showback, names[2], false);
}

}  // namespace gpuvpa
