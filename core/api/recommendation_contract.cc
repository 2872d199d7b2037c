// Identity rules, keys and the checks of every recommendation a reader takes.
#include "core/api/recommendation_contract.h"

#include <cmath>
#include <span>
#include <utility>

#include "core/base/names.h"
#include "core/base/workload_key.h"
#include "core/gpu/gpu_catalog.h"

namespace gpuvpa {
namespace {

// The charts' hours lie where sample times may.
constexpr int64_t kMinChartHour = static_cast<int64_t>(kMinSampleTimeS) / 3600;
constexpr int64_t kMaxChartHour = static_cast<int64_t>(kMaxSampleTimeS) / 3600;
constexpr int kMaxChartHours = 168;   // a week
constexpr int kMaxChartBars = 10000;  // more buckets than any histogram of the store has

Status CheckBars(const google::protobuf::RepeatedPtrField<v1::ChartBar>& bars, double max_bound,
                 const std::string& where) {
  if (bars.size() > kMaxChartBars)
    return InvalidArgumentError(where + ": " + std::to_string(bars.size()) + " bars, more than " +
                                std::to_string(kMaxChartBars));
  for (int i = 0; i < bars.size(); ++i) {
    const v1::ChartBar& b = bars[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!(b.from() >= 0 && b.from() < b.to() && b.to() <= max_bound))
      return InvalidArgumentError(at + ": bounds " + FormatNumber(b.from()) + ".." +
                                  FormatNumber(b.to()) + " are not ordered within 0.." +
                                  FormatNumber(max_bound));
    if (!(b.weight() >= 0 && b.weight() <= 1))
      return InvalidArgumentError(at + ".weight: " + FormatNumber(b.weight()) +
                                  " is not a share in 0..1");
  }
  return OkStatus();
}

Status CheckCharts(const v1::WorkloadCharts& c, const std::string& where) {
  GPUVPA_RETURN_IF_ERROR(CheckBars(c.vram(), kMaxVramBytes, where + ".vram"));
  GPUVPA_RETURN_IF_ERROR(CheckBars(c.sm(), 1.0, where + ".sm"));
  const int hours = c.hourly_samples_size();
  if (hours != c.hourly_active_size() || hours > kMaxChartHours)
    return InvalidArgumentError(where + ": hourly_samples (" + std::to_string(hours) +
                                ") and hourly_active (" + std::to_string(c.hourly_active_size()) +
                                ") are not two equal lists of at most " +
                                std::to_string(kMaxChartHours) + " hours");
  if (hours > 0 && !(c.latest_hour() >= kMinChartHour && c.latest_hour() < kMaxChartHour))
    return InvalidArgumentError(where + ".latest_hour: " + std::to_string(c.latest_hour()) +
                                " is not an hour between 2000 and 2100");
  for (int i = 0; i < hours; ++i)
    if (c.hourly_active(i) > c.hourly_samples(i))
      return InvalidArgumentError(where + ".hourly_active[" + std::to_string(i) +
                                  "]: " + std::to_string(c.hourly_active(i)) + " is above its " +
                                  std::to_string(c.hourly_samples(i)) + " samples");
  return OkStatus();
}

}  // namespace

Status ValidateIdentity(const v1::WorkloadIdentity& id) {
  GPUVPA_RETURN_IF_ERROR(ValidateNamespaceName("namespace", id.namespace_name()));
  GPUVPA_RETURN_IF_ERROR(ValidateKind("workload_kind", id.owner_kind()));
  GPUVPA_RETURN_IF_ERROR(ValidateObjectName("workload_name", id.owner_name()));
  GPUVPA_RETURN_IF_ERROR(ValidateContainerName("container", id.container()));
  GPUVPA_RETURN_IF_ERROR(ValidateLabelText("cost_center", id.cost_center()));
  GPUVPA_RETURN_IF_ERROR(ValidateLabelText("gpu_model", id.gpu_model()));
  return ValidateLabelText("allocation", id.allocation());
}

std::string WorkloadKeyOf(const v1::WorkloadIdentity& identity) {
  std::string key;
  AssignWorkloadKey(key, identity.namespace_name(), identity.owner_kind(), identity.owner_name(),
                    identity.container());
  return key;
}

Status ValidateRecommendation(const v1::Recommendation& r, const std::string& where) {
  if (Status s = ValidateIdentity(r.identity()); !s.ok())
    return InvalidArgumentError(where + ": " + s.message());
  const std::pair<const char*, double> bytes[] = {
      {"vram_target_bytes", r.vram_target_bytes()},
      {"vram_lower_bytes", r.vram_lower_bytes()},
      {"vram_upper_bytes", r.vram_upper_bytes()},
      {"vram_observed_peak_bytes", r.vram_observed_peak_bytes()},
      {"vram_history_peak_bytes", r.vram_history_peak_bytes()},
      {"vram_limit_bytes", r.vram_limit_bytes()}};
  // Each group: finite and in 0..max, else an error naming the field, the value and the rule.
  auto in_range = [&](std::span<const std::pair<const char*, double>> fields, double max,
                      const std::string& rule) {
    for (const auto& [field, v] : fields)
      if (!std::isfinite(v) || v < 0 || v > max)
        return InvalidArgumentError(where + "." + field + ": " + FormatNumber(v) + " " + rule);
    return OkStatus();
  };
  GPUVPA_RETURN_IF_ERROR(
      in_range(bytes, kMaxVramBytes, "is not a byte count in 0.." + FormatNumber(kMaxVramBytes)));
  const std::pair<const char*, double> ratios[] = {{"sm_p90_ratio", r.sm_p90_ratio()},
                                                   {"sm_p99_ratio", r.sm_p99_ratio()},
                                                   {"active_duty_ratio", r.active_duty_ratio()},
                                                   {"idle_hours_ratio", r.idle_hours_ratio()}};
  GPUVPA_RETURN_IF_ERROR(in_range(ratios, 1, "is not a ratio in 0..1"));
  const std::pair<const char*, double> others[] = {
      {"confidence", r.confidence()},
      {"history_s", r.history_s()},
      {"longest_idle_gap_s", r.longest_idle_gap_s()},
      {"average_pods", r.average_pods()},
      {"idle_tax_usd_vram", r.idle_tax_usd_vram()},
      {"allocated_usd", r.allocated_usd()},
      {"allocated_gpu_hours", r.allocated_gpu_hours()}};
  GPUVPA_RETURN_IF_ERROR(in_range(others, 1e12, "is not a finite non-negative number"));
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
  if (r.has_charts()) return CheckCharts(r.charts(), where + ".charts");
  return OkStatus();
}

}  // namespace gpuvpa
