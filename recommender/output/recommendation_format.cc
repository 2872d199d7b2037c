// Table and JSON rendering of recommendations.
#include "recommender/output/recommendation_format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>

#include "core/workload_key.h"

namespace gpuvpa::recommender {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

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

std::string DisplayName(const v1::WorkloadIdentity& id) {
  return WorkloadDisplayName(id.namespace_name(), id.owner_kind(), id.owner_name(), id.container());
}

std::string Note(const v1::Recommendation& r) {
  std::string note;
  auto add = [&](const std::string& s) { note += (note.empty() ? "" : "; ") + s; };
  if (!r.has_target()) add("no recommendation: " + r.withheld_reason());
  if (r.vram_set_by_allocator()) add("VRAM set by allocator config");
  if (r.cuda_oom_count() > 0) add(std::to_string(r.cuda_oom_count()) + " CUDA OOM");
  return note;
}

// A pool allocator's residency is its configuration, not its need: no number is shown for it.
std::string VramColumn(const v1::Recommendation& r) {
  if (!r.has_target()) return "-";
  if (r.vram_set_by_allocator()) return "n/a (allocator pool)";
  return Gib(r.vram_target_bytes()) + " [" + Gib(r.vram_lower_bytes()) + "-" +
         Gib(r.vram_upper_bytes()) + "]";
}

std::string Table(const std::vector<v1::Recommendation>& recs) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"WORKLOAD", "GPU", "ALLOCATION", "COST CENTER", "VRAM GiB target [lower-upper]",
                  "PEAK GiB", "SM p90/p99", "DUTY", "IDLE GAP", "GPU-h", "IDLE TAX GPU-h vram/sm",
                  "CONF", "HISTORY", "NOTE"});
  for (const v1::Recommendation& r : recs) {
    const v1::WorkloadIdentity& id = r.identity();
    rows.push_back({
        DisplayName(id),
        id.gpu_model(),
        id.allocation(),
        id.cost_center(),
        VramColumn(r),
        Gib(r.vram_observed_peak_bytes()),
        Fmt("%.2f", r.sm_p90_ratio()) + "/" + Fmt("%.2f", r.sm_p99_ratio()),
        Percent(r.active_duty_ratio()),
        Duration(r.longest_idle_gap_s()),
        Fmt("%.1f", r.allocated_gpu_hours()),
        Fmt("%.1f", r.idle_tax_gpu_hours_vram()) + "/" + Fmt("%.1f", r.idle_tax_gpu_hours_sm()),
        Fmt("%.2f", r.confidence()),
        Duration(r.history_s()),
        Note(r),
    });
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Json(const std::vector<v1::Recommendation>& recs) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out = "[";
  for (size_t i = 0; i < recs.size(); ++i) {
    std::string one;
    (void)google::protobuf::util::MessageToJsonString(recs[i], &one, options);
    out += (i == 0 ? "\n  " : ",\n  ") + one;
  }
  out += recs.empty() ? "]\n" : "\n]\n";
  return out;
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "json") return OutputFormat::kJson;
  return InvalidArgumentError("--format \"" + std::string(text) + "\" is not one of table, json");
}

std::string FormatRecommendations(const std::vector<Recommendation>& recommendations,
                                  const FleetStore& store, OutputFormat format) {
  std::vector<v1::Recommendation> recs;
  recs.reserve(recommendations.size());
  for (const Recommendation& r : recommendations) recs.push_back(ToProto(r, store));
  std::sort(recs.begin(), recs.end(), [](const v1::Recommendation& a, const v1::Recommendation& b) {
    return DisplayName(a.identity()) < DisplayName(b.identity());
  });
  return format == OutputFormat::kJson ? Json(recs) : Table(recs);
}

}  // namespace gpuvpa::recommender
