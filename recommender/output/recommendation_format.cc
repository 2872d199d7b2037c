// Table and JSON rendering of recommendations.
#include "recommender/output/recommendation_format.h"

#include <algorithm>
#include <cstdio>

#include "core/api/recommendation_json.h"
#include "core/base/workload_key.h"
#include "core/cost/money.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr size_t kNarrowNameWidth = 40;  // longer workload names are cut in the middle

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Gib(double bytes) { return Fmt("%.1f", bytes / kGiB); }
std::string Percent(double ratio) { return Fmt("%.0f%%", ratio * 100); }
std::string Duration(double seconds) {
  if (seconds >= 86400) return Fmt("%.1fd", seconds / 86400);
  if (seconds >= 3600) return Fmt("%.1fh", seconds / 3600);
  return Fmt("%.0fm", seconds / 60);
}

std::string DisplayName(const v1::WorkloadIdentity& id, bool with_kind) {
  if (with_kind)
    return WorkloadDisplayName(id.namespace_name(), id.owner_kind(), id.owner_name(),
                               id.container());
  return id.namespace_name() + "/" + id.owner_name() + "/" + id.container();
}

std::string CutMiddle(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  const size_t head = (width - 1) / 2;
  return s.substr(0, head) + "~" + s.substr(s.size() - (width - 1 - head));
}

// Narrow notes fit the 120-column table; the VRAM column already names an allocator pool.
std::string Note(const v1::Recommendation& r, bool narrow) {
  std::string note;
  auto add = [&](const std::string& s) { note += (note.empty() ? "" : "; ") + s; };
  if (!r.has_target())
    add(narrow ? "history " + Duration(r.history_s()) + " < minimum"
               : "no recommendation: " + r.withheld_reason());
  if (r.needs_larger_gpu())
    add(narrow ? "needs larger GPU"
               : "needs a larger GPU (p98 above " + Gib(r.vram_limit_bytes()) + " GiB)");
  if (r.vram_set_by_allocator() && !narrow) add("VRAM set by allocator config");
  if (r.shared_device_estimate())
    add(narrow ? "shared GPU: estimate" : "shared GPU: usage split between pods (estimate)");
  if (r.per_process_usage())
    add(narrow ? "shared GPU: per-pod" : "shared GPU: per-pod (per-process) readings");
  if (r.sm_basis() == "busy_time")
    add(narrow ? "SM = busy time" : "SM figures are busy time (GPU_UTIL), not SM coverage");
  else if (r.sm_basis() == "sm_active_by_busy_share")
    add(narrow ? "SM by busy share" : "SM: the device's SM activity split by busy time (estimate)");
  else if (r.sm_basis() == "sm_active_solo_calibrated")
    add(narrow ? "SM by solo coverage"
               : "SM: the device's SM activity split by busy time x coverage learned alone "
                 "(estimate)");
  else if (r.sm_basis() == "gr_engine_active" && !narrow)
    add("SM figures are graphics engine time");
  if (r.cuda_oom_count() > 0) add(std::to_string(r.cuda_oom_count()) + " CUDA OOM");
  return note;
}

// A pool allocator's residency is its configuration, not its need: no number is shown for it.
std::string VramColumn(const v1::Recommendation& r, bool narrow) {
  if (!r.has_target()) return "-";
  if (r.vram_set_by_allocator()) return narrow ? "allocator pool" : "n/a (allocator pool)";
  return Gib(r.vram_target_bytes()) + " [" + Gib(r.vram_lower_bytes()) + "-" +
         Gib(r.vram_upper_bytes()) + "]";
}

struct Row {
  v1::Recommendation rec;
  bool priced = false;
  MicroUsd idle_tax_vram = 0;
  MicroUsd allocated = 0;
  std::string name;  // DisplayName with the kind: the sort's last key, built once
};

std::string Money(const Row& r, MicroUsd v) { return r.priced ? FormatUsd(v) : "no price"; }

std::string Table(const std::vector<const Row*>& rows, bool wide) {
  std::vector<std::vector<std::string>> cells;
  if (wide) {
    cells.push_back({"WORKLOAD", "GPU", "ALLOCATION", "COST CENTER",
                     "VRAM GiB target [lower-upper]", "PEAK GiB history", "PEAK GiB last 1h",
                     "SM p90/p99", "DUTY", "IDLE GAP", "GPU-h", "COST", "IDLE TAX GPU-h vram/sm",
                     "IDLE TAX", "CONF", "HISTORY", "NOTE"});
  } else {
    cells.push_back({"WORKLOAD", "GPU", "VRAM GiB [lo-up]", "PEAK hist/1h", "SM p90", "DUTY",
                     "IDLE TAX", "NOTE"});
  }
  for (const Row* row_pointer : rows) {
    const Row& row = *row_pointer;
    const v1::Recommendation& r = row.rec;
    const v1::WorkloadIdentity& id = r.identity();
    if (wide) {
      cells.push_back(
          {row.name, id.gpu_model(), id.allocation(), id.cost_center(), VramColumn(r, false),
           Gib(r.vram_history_peak_bytes()), Gib(r.vram_observed_peak_bytes()),
           Fmt("%.2f", r.sm_p90_ratio()) + "/" + Fmt("%.2f", r.sm_p99_ratio()),
           Percent(r.active_duty_ratio()), Duration(r.longest_idle_gap_s()),
           Fmt("%.1f", r.allocated_gpu_hours()), Money(row, row.allocated),
           Fmt("%.1f", r.idle_tax_gpu_hours_vram()) + "/" + Fmt("%.1f", r.idle_tax_gpu_hours_sm()),
           Money(row, row.idle_tax_vram), Fmt("%.2f", r.confidence()), Duration(r.history_s()),
           Note(r, false)});
    } else {
      cells.push_back({CutMiddle(DisplayName(id, false), kNarrowNameWidth), id.gpu_model(),
                       VramColumn(r, true),
                       Gib(r.vram_history_peak_bytes()) + "/" + Gib(r.vram_observed_peak_bytes()),
                       Fmt("%.2f", r.sm_p90_ratio()), Percent(r.active_duty_ratio()),
                       row.priced ? FormatUsd(row.idle_tax_vram)
                                  : Fmt("%.1f GPU-h", r.idle_tax_gpu_hours_vram()),
                       Note(r, true)});
    }
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  if (!wide) {
    // The note takes what is left of the table width (at least its title).
    size_t used = 0;
    for (size_t c = 0; c + 1 < width.size(); ++c) used += width[c] + 2;
    width.back() = std::max(cells[0].back().size(), kTableWidth > used ? kTableWidth - used : 0);
    for (auto& line : cells)
      if (line.back().size() > width.back())
        line.back() = line.back().substr(0, width.back() - 3) + "...";
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(width[c] - line[c].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  out +=
      "IDLE TAX: allocated minus VRAM-resident GPU time over the history, priced where the "
      "model has a price.\n";
  if (!wide)
    out +=
        "VRAM GiB: target [lower-upper]. PEAK GiB: largest sample since tracking began / in the\n"
        "latest 1 h window. --wide shows every column.\n";
  return out;
}

std::string Json(const std::vector<const Row*>& rows) {
  std::vector<const v1::Recommendation*> recs;
  recs.reserve(rows.size());
  for (const Row* r : rows) recs.push_back(&r->rec);
  return RecommendationsJson(recs);
}

void AddBars(const Bucketing& bucketing, std::span<const double> weights, double total,
             google::protobuf::RepeatedPtrField<v1::ChartBar>& bars) {
  if (!(total > 0)) return;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    const int b = static_cast<int>(i);
    v1::ChartBar* bar = bars.Add();
    bar->set_from(bucketing.BucketStart(b));
    bar->set_to(bucketing.BucketEnd(b));
    bar->set_weight(weights[i] / total);
  }
}

}  // namespace

v1::Recommendation PricedRecommendation(const Recommendation& r, const FleetStore& store,
                                        const PriceBook* prices, const std::string& region,
                                        PricedMoney* money) {
  v1::Recommendation out = ToProto(r, store);
  if (prices == nullptr) return out;
  Result<double> price = prices->GpuHourPrice(out.identity().gpu_model(), region);
  auto priced = [&](double gpu_hours) -> Result<MicroUsd> {
    if (!price.ok()) return price.status();
    return PriceGpuSeconds(std::max(0.0, gpu_hours) * 3600, *price);
  };
  Result<MicroUsd> idle = priced(r.idle_tax_gpu_hours_vram);
  Result<MicroUsd> allocated = priced(r.allocated_gpu_hours);
  if (idle.ok() && allocated.ok()) {
    out.set_priced(true);
    out.set_idle_tax_usd_vram(MicroToUsd(*idle));
    out.set_allocated_usd(MicroToUsd(*allocated));
    if (money != nullptr) *money = {*idle, *allocated};
  }
  return out;
}

v1::WorkloadCharts ChartsOf(const FleetStore& store, uint32_t row) {
  v1::WorkloadCharts c;
  AddBars(store.vram_bucketing(), store.vram_weights(row), store.vram_total_weight(row),
          *c.mutable_vram());
  AddBars(store.sm_bucketing(), store.sm_weights(row), store.sm_total_weight(row), *c.mutable_sm());
  const HourlyActivity a = store.state(row).Activity();
  c.set_latest_hour(a.latest_hour);
  if (a.latest_hour < 0) return c;
  for (int i = 0; i < kActivityHours; ++i) {
    const int64_t hour = a.latest_hour - (kActivityHours - 1) + i;
    const size_t slot = static_cast<size_t>(hour % kActivityHours);
    c.add_hourly_samples(a.samples[slot]);
    c.add_hourly_active(a.active[slot]);
  }
  return c;
}

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "json") return OutputFormat::kJson;
  return InvalidArgumentError("--format \"" + std::string(text) + "\" is not one of table, json");
}

std::string FormatRecommendations(const std::vector<Recommendation>& recommendations,
                                  const FleetStore& store, const FormatOptions& options) {
  std::vector<Row> rows;
  rows.reserve(recommendations.size());
  for (const Recommendation& r : recommendations) {
    Row row;
    PricedMoney money;
    row.rec = PricedRecommendation(r, store, options.prices, options.region, &money);
    row.priced = row.rec.priced();
    row.idle_tax_vram = money.idle_tax_vram;
    row.allocated = money.allocated;
    row.name = DisplayName(row.rec.identity(), true);
    rows.push_back(std::move(row));
  }
  // Pointers are sorted, not the rows: a comparison reads the keys, a swap moves 8 bytes.
  std::vector<const Row*> order;
  order.reserve(rows.size());
  for (const Row& row : rows) order.push_back(&row);
  std::sort(order.begin(), order.end(), [](const Row* a, const Row* b) {
    if (a->priced != b->priced) return a->priced;
    if (a->priced && a->idle_tax_vram != b->idle_tax_vram)
      return a->idle_tax_vram > b->idle_tax_vram;
    if (!a->priced && a->rec.idle_tax_gpu_hours_vram() != b->rec.idle_tax_gpu_hours_vram())
      return a->rec.idle_tax_gpu_hours_vram() > b->rec.idle_tax_gpu_hours_vram();
    return a->name < b->name;
  });
  return options.format == OutputFormat::kJson ? Json(order) : Table(order, options.wide);
}

}  // namespace gpuvpa::recommender
