// Recommendations from JSON.
#include "updater/cmd/plan_inputs.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>

#include "core/base/names.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::updater {
namespace {

Status CheckRecommendation(const v1::Recommendation& r, size_t index) {
  const std::string where = "recommendations[" + std::to_string(index) + "]";
  if (Status s = recommender::ValidateIdentity(r.identity()); !s.ok())
    return InvalidArgumentError(where + ": " + s.message());
  const std::pair<const char*, double> bytes[] = {
      {"vram_target_bytes", r.vram_target_bytes()},
      {"vram_lower_bytes", r.vram_lower_bytes()},
      {"vram_upper_bytes", r.vram_upper_bytes()},
      {"vram_observed_peak_bytes", r.vram_observed_peak_bytes()},
      {"vram_history_peak_bytes", r.vram_history_peak_bytes()},
      {"vram_limit_bytes", r.vram_limit_bytes()}};
  for (const auto& [field, v] : bytes)
    if (!std::isfinite(v) || v < 0 || v > recommender::kMaxVramBytes)
      return InvalidArgumentError(where + "." + field + ": " + FormatNumber(v) +
                                  " is not a byte count in 0.." +
                                  FormatNumber(recommender::kMaxVramBytes));
  const std::pair<const char*, double> ratios[] = {{"sm_p90_ratio", r.sm_p90_ratio()},
                                                   {"sm_p99_ratio", r.sm_p99_ratio()},
                                                   {"active_duty_ratio", r.active_duty_ratio()},
                                                   {"idle_hours_ratio", r.idle_hours_ratio()}};
  for (const auto& [field, v] : ratios)
    if (!std::isfinite(v) || v < 0 || v > 1)
      return InvalidArgumentError(where + "." + field + ": " + FormatNumber(v) +
                                  " is not a ratio in 0..1");
  const std::pair<const char*, double> others[] = {
      {"confidence", r.confidence()},
      {"history_s", r.history_s()},
      {"longest_idle_gap_s", r.longest_idle_gap_s()},
      {"average_pods", r.average_pods()},
      {"idle_tax_usd_vram", r.idle_tax_usd_vram()},
      {"allocated_usd", r.allocated_usd()},
      {"allocated_gpu_hours", r.allocated_gpu_hours()}};
  for (const auto& [field, v] : others)
    if (!std::isfinite(v) || v < 0 || v > 1e12)
      return InvalidArgumentError(where + "." + field + ": " + FormatNumber(v) +
                                  " is not a finite non-negative number");
  // No VRAM figure above what the device holds (samples above it are refused at ingest).
  if (Result<const GpuModel*> model = GpuCatalog::BuiltIn().FindModel(r.identity().gpu_model());
      model.ok())
    for (const auto& [field, v] : bytes)
      if (v > (*model)->memory_bytes)
        return InvalidArgumentError(where + "." + field + ": " + FormatNumber(v) +
                                    " is above the " + (*model)->name + "'s " +
                                    FormatNumber((*model)->memory_bytes) + " bytes");
  if (r.vram_limit_bytes() > 0 && r.vram_target_bytes() > r.vram_limit_bytes())
    return InvalidArgumentError(where +
                                ".vram_target_bytes: " + FormatNumber(r.vram_target_bytes()) +
                                " is above vram_limit_bytes " + FormatNumber(r.vram_limit_bytes()));
  return OkStatus();
}

}  // namespace

Result<std::vector<v1::Recommendation>> ParseRecommendationsJson(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first == std::string_view::npos) return InvalidArgumentError("recommendations: empty file");
  std::string wrapped = text[first] == '['
                            ? "{\"recommendations\":" + std::string(text.substr(first)) + "}"
                            : std::string(text.substr(first));
  v1::ListRecommendationsResponse list;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (auto s = google::protobuf::util::JsonStringToMessage(wrapped, &list, options); !s.ok())
    return InvalidArgumentError("recommendations: not a JSON list of recommendations: " +
                                std::string(s.message()));
  std::vector<v1::Recommendation> out(list.recommendations().begin(), list.recommendations().end());
  for (size_t i = 0; i < out.size(); ++i)
    if (Status s = CheckRecommendation(out[i], i); !s.ok()) return s;
  return out;
}

}  // namespace gpuvpa::updater
