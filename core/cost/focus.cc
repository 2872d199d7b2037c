// FOCUS export of the ledger's showback.
#include "core/cost/focus.h"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/base/csv.h"
#include "core/base/time_format.h"
#include "core/cost/allocation.h"
#include "core/cost/money.h"

namespace gpuvpa {
namespace {

// The calendar month (UTC) holding `t`: FOCUS's billing period.
std::pair<std::string, std::string> MonthOf(int64_t t) {
  const absl::CivilMonth month(absl::ToCivilSecond(absl::FromUnixSeconds(t), absl::UTCTimeZone()));
  auto text = [](absl::CivilMonth m) {
    return FormatTimestamp(static_cast<double>(
        absl::ToUnixSeconds(absl::FromCivil(absl::CivilSecond(m), absl::UTCTimeZone()))));
  };
  return {text(month), text(month + 1)};
}

std::string GpuHoursDecimal(int64_t milli_gpu_seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", MilliGpuSecondsToGpuHours(milli_gpu_seconds));
  return buf;
}

}  // namespace

const std::vector<FocusColumn>& FocusColumns() {
  using T = FocusType;
  static const std::vector<FocusColumn> kColumns = {
      {"BilledCost", T::kDecimal, false},
      {"BillingAccountId", T::kString, false},
      {"BillingAccountName", T::kString, true},
      {"BillingCurrency", T::kString, false},
      {"BillingPeriodStart", T::kDateTime, false},
      {"BillingPeriodEnd", T::kDateTime, false},
      {"ChargeCategory", T::kString, false},
      {"ChargeClass", T::kString, true},
      {"ChargeDescription", T::kString, true},
      {"ChargeFrequency", T::kString, true},
      {"ChargePeriodStart", T::kDateTime, false},
      {"ChargePeriodEnd", T::kDateTime, false},
      {"ConsumedQuantity", T::kDecimal, true},
      {"ConsumedUnit", T::kString, true},
      {"ContractedCost", T::kDecimal, false},
      {"EffectiveCost", T::kDecimal, false},
      {"InvoiceIssuerName", T::kString, false},
      {"ListCost", T::kDecimal, false},
      {"PricingQuantity", T::kDecimal, true},
      {"PricingUnit", T::kString, true},
      {"ProviderName", T::kString, false},
      {"PublisherName", T::kString, false},
      {"ResourceId", T::kString, true},
      {"ResourceName", T::kString, true},
      {"ResourceType", T::kString, true},
      {"ServiceCategory", T::kString, false},
      {"ServiceName", T::kString, false},
      {"SubAccountId", T::kString, true},
      {"SubAccountName", T::kString, true},
      {"Tags", T::kJson, true},
      // gpuvpa's own (FOCUS: custom columns start with x_).
      {"x_Cluster", T::kString, false},
      {"x_Namespace", T::kString, false},
      {"x_GpuModel", T::kString, true},
      {"x_GpuResource", T::kString, true},
      {"x_CostBasis", T::kString, false},
      {"x_AllocatedCost", T::kDecimal, false},
      {"x_IdleTaxVram", T::kDecimal, true},
      {"x_IdleTaxSm", T::kDecimal, true},
  };
  return kColumns;
}

Result<std::string> FocusCsv(const std::vector<Showback>& periods) {
  std::string out;
  for (const FocusColumn& c : FocusColumns()) out += (out.empty() ? "" : ",") + std::string(c.name);
  out += "\r\n";
  for (const Showback& period : periods) {
    if (!period.from_s || !period.to_s)
      return InvalidArgumentError("FOCUS needs charge periods: give the showback a window");
    const std::string start = FormatTimestamp(static_cast<double>(*period.from_s));
    const std::string end = FormatTimestamp(static_cast<double>(*period.to_s));
    const auto [billing_start, billing_end] = MonthOf(*period.from_s);
    for (const ShowbackRow& r : period.groups) {
      if (r.billed == 0 && r.billed_gpu_time == 0) continue;  // savings or proposals only
      Result<AllocationGroup> g = ParseAllocationGroup(r.group);
      if (!g.ok()) return g.status();
      const AllocationNames n = SplitWorkload(g->workload);
      const std::string billed = MicroUsdDecimal(r.billed);
      const std::string gpu_hours = GpuHoursDecimal(r.billed_gpu_time);
      const bool metered = r.billed_metered == r.billed && r.billed > 0;
      const std::string resource_id = std::string(g->cluster) + "/" +
                                      std::string(g->namespace_name) + "/" +
                                      std::string(g->workload);
      nlohmann::json tags = {{"cluster", g->cluster},
                             {"namespace", g->namespace_name},
                             {"controllerKind", n.controller_kind},
                             {"controller", n.controller},
                             {"container", n.container},
                             {"gpuModel", g->gpu_model},
                             {"gpuResource", g->resource}};
      const std::string description =
          "GPU time of " + std::string(g->workload) + " in " + std::string(g->namespace_name) +
          (g->gpu_model.empty() ? "" : " on " + std::string(g->gpu_model)) +
          (metered ? ", metered active replicas" : ", allocated");
      const std::string cells[] = {
          billed,
          CsvText(g->cluster),
          CsvText(g->cluster),
          "USD",
          billing_start,
          billing_end,
          "Usage",
          "",
          CsvText(description),
          "Usage-Based",
          start,
          end,
          gpu_hours,
          "GPU-Hours",
          billed,
          billed,
          "gpuvpa",
          billed,
          gpu_hours,
          "GPU-Hours",
          "gpuvpa",
          "gpuvpa",
          CsvText(resource_id),
          CsvText(g->workload),
          CsvText(n.controller_kind.empty() ? "Workload container"
                                            : n.controller_kind + " container"),
          "Compute",
          "Kubernetes GPU",
          CsvText(g->cost_center),
          CsvText(g->cost_center),
          CsvText(tags.dump()),
          CsvText(g->cluster),
          CsvText(g->namespace_name),
          CsvText(g->gpu_model),
          CsvText(g->resource),
          metered ? "metered" : "allocation",
          MicroUsdDecimal(r.allocated),
          r.usage_measured ? MicroUsdDecimal(r.idle_tax_vram) : "",
          r.usage_measured ? MicroUsdDecimal(r.idle_tax_sm) : "",
      };
      static_assert(std::size(cells) > 0);
      std::string line;
      for (const std::string& cell : cells) line += (line.empty() ? "" : ",") + cell;
      out += line + "\r\n";
    }
  }
  return out;
}

}  // namespace gpuvpa
