// Usage charges.
#include "recommender/logic/usage_charges.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/base/names.h"
#include "core/base/workload_key.h"
#include "core/cost/money.h"
#include "core/cost/usage_row.h"

namespace gpuvpa::recommender {

std::string UsageActionId(const v1::WorkloadIdentity& id, int64_t period_start_s,
                          int64_t period_end_s, uint64_t samples, MilliGpuSeconds allocated) {
  return "usage/" +
         EncodeIdParts({id.namespace_name(), id.owner_kind(), id.owner_name(), id.container()}) +
         "/" + std::to_string(period_start_s) + "-" + std::to_string(period_end_s) + "/" +
         std::to_string(samples) + "x" + std::to_string(allocated);
}

Result<UsageCharges> ChargePendingUsage(const FleetStore& store,
                                        const std::vector<Recommendation>& recommendations,
                                        const PriceBook& prices, const std::string& region) {
  UsageCharges out;
  for (const Recommendation& rec : recommendations) {
    const WorkloadState& st = store.state(rec.row);
    if (st.pending_samples == 0) continue;
    const v1::WorkloadIdentity& id = st.identity;
    const std::string name =
        WorkloadDisplayName(id.namespace_name(), id.owner_kind(), id.owner_name(), id.container());
    auto named = [&](const Status& s) { return Status(s.code(), name + ": " + s.message()); };
    Result<double> price = prices.GpuHourPrice(id.gpu_model(), region);
    if (!price.ok()) {
      out.unpriced.push_back(named(price.status()));
      continue;
    }
    Result<MilliGpuSeconds> allocated = GpuSecondsToMilli(st.pending_allocated_gpu_seconds);
    Result<MilliGpuSeconds> used_vram = GpuSecondsToMilli(st.pending_used_vram_gpu_seconds);
    Result<MilliGpuSeconds> used_sm = GpuSecondsToMilli(st.pending_used_sm_gpu_seconds);
    for (const Status& s : {allocated.status(), used_vram.status(), used_sm.status()})
      if (!s.ok()) return named(s);
    Result<MicroUsd> allocated_usd = PriceGpuTime(*allocated, *price);
    Result<MicroUsd> used_vram_usd = PriceGpuTime(*used_vram, *price);
    Result<MicroUsd> used_sm_usd = PriceGpuTime(*used_sm, *price);
    for (const Status& s : {allocated_usd.status(), used_vram_usd.status(), used_sm_usd.status()})
      if (!s.ok()) return named(s);

    const auto start = static_cast<int64_t>(std::floor(st.pending_from_s));
    const auto end =
        static_cast<int64_t>(std::ceil(st.pending_through_s + store.options().sample_period_s));
    UsageRowFields row;
    row.action_id = UsageActionId(id, start, end, st.pending_samples, *allocated);
    row.namespace_name = id.namespace_name();
    row.workload = id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
    row.cost_center = id.cost_center();
    row.gpu_model = id.gpu_model();
    row.allocation = id.allocation();
    row.period_start_s = start;
    row.period_end_s = end;
    row.allocated_gpu_time = *allocated;
    row.allocated = *allocated_usd;
    row.used = UsageRowFields::Used{*used_vram_usd, *used_sm_usd};
    row.evidence_json = nlohmann::json{
        {"usd_per_gpu_hour", *price},
        {"samples", st.pending_samples},
        {"sm_p90_ratio", rec.sm_p90_ratio},
        {"active_duty_ratio", rec.active_duty_ratio},
        {"longest_idle_gap_s", rec.longest_idle_gap_s},
        {"vram_target_bytes", rec.vram_target_bytes},
        {"vram_set_by_allocator", rec.vram_set_by_allocator},
        {"confidence", rec.confidence},
        {"history_s",
         rec.history_s}}.dump();
    out.actions.push_back(AllocatedUsageRow(std::move(row)));
    out.rows.push_back(rec.row);
    for (const DeviceCursor& c : st.devices)
      if (c.ingested_through_s > c.charged_through_s)
        out.marks.push_back({ChargeSeriesKey(id, c.pod, c.device), c.ingested_through_s});
  }
  return out;
}

void MarkCharged(FleetStore& store, const UsageCharges& charges) {
  for (uint32_t row : charges.rows) store.MarkCharged(row);
}

Result<LedgerCharge> ChargeToLedger(FleetStore& store,
                                    const std::vector<Recommendation>& recommendations,
                                    const PriceBook& prices, const std::string& region,
                                    Ledger& ledger) {
  Result<UsageCharges> charges = ChargePendingUsage(store, recommendations, prices, region);
  if (!charges.ok()) return charges.status();
  Result<size_t> added = ledger.Append(charges->actions, charges->marks);
  if (!added.ok()) return added.status();
  MarkCharged(store, *charges);
  LedgerCharge out;
  out.workloads = charges->actions.size();
  out.new_rows = *added;
  for (const LedgerAction& a : charges->actions) {
    LedgerCharge::Amounts& sum = out.by_cost_center[a.cost_center];
    sum.allocated += a.allocated;
    if (a.usage_measured) sum.idle += std::max<MicroUsd>(0, a.allocated - a.used_vram);
  }
  out.unpriced = std::move(charges->unpriced);
  return out;
}

}  // namespace gpuvpa::recommender
