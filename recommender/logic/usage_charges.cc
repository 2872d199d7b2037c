// Usage charges.
#include "recommender/logic/usage_charges.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/money.h"
#include "core/workload_key.h"

namespace gpuvpa::recommender {
namespace {

MilliGpuSeconds ToMilli(double gpu_seconds) { return std::llround(gpu_seconds * 1000); }

}  // namespace

UsageCharges ChargeUsageSinceLastCharge(const FleetStore& store,
                                        const std::vector<Recommendation>& recommendations,
                                        const PriceBook& prices, const std::string& region) {
  UsageCharges out;
  for (const Recommendation& rec : recommendations) {
    const WorkloadState& st = store.state(rec.row);
    const MilliGpuSeconds allocated =
        ToMilli(st.allocated_gpu_seconds - st.charged_allocated_gpu_seconds);
    if (allocated <= 0) continue;
    const v1::WorkloadIdentity& id = st.identity;
    const std::string name =
        WorkloadDisplayName(id.namespace_name(), id.owner_kind(), id.owner_name(), id.container());
    Result<double> price = prices.GpuHourPrice(id.gpu_model(), region);
    if (!price.ok()) {
      out.unpriced.emplace_back(price.status().code(), name + ": " + price.status().message());
      continue;
    }
    const auto start =
        static_cast<int64_t>(st.charged_through_s > 0 ? st.charged_through_s : st.first_seen_s);
    const auto end =
        static_cast<int64_t>(std::ceil(st.last_seen_s + store.options().sample_period_s));
    LedgerAction a;
    a.action_id = "usage/" + name + "/" + std::to_string(start) + "-" + std::to_string(end);
    a.time_s = end;
    a.kind = ActionKind::kAllocatedUsage;
    a.status = ActionStatus::kApplied;
    a.namespace_name = id.namespace_name();
    a.workload = id.owner_kind() + "/" + id.owner_name() + "/" + id.container();
    a.cost_center = id.cost_center();
    a.gpu_model = id.gpu_model();
    a.before = a.after = id.allocation();
    a.period_start_s = start;
    a.period_end_s = end;
    a.allocated_gpu_time = allocated;
    a.allocated = PriceGpuTime(allocated, *price);
    a.used_vram =
        PriceGpuTime(ToMilli(st.used_vram_gpu_seconds - st.charged_used_vram_gpu_seconds), *price);
    a.used_sm =
        PriceGpuTime(ToMilli(st.used_sm_gpu_seconds - st.charged_used_sm_gpu_seconds), *price);
    a.evidence_json = nlohmann::json{
        {"usd_per_gpu_hour", *price},
        {"sm_p90_ratio", rec.sm_p90_ratio},
        {"active_duty_ratio", rec.active_duty_ratio},
        {"longest_idle_gap_s", rec.longest_idle_gap_s},
        {"vram_target_bytes", rec.vram_target_bytes},
        {"vram_set_by_allocator", rec.vram_set_by_allocator},
        {"confidence", rec.confidence},
        {"history_s",
         rec.history_s}}.dump();
    out.actions.push_back(std::move(a));
    out.rows.push_back(rec.row);
  }
  return out;
}

void MarkCharged(FleetStore& store, const UsageCharges& charges) {
  for (size_t i = 0; i < charges.rows.size(); ++i) {
    WorkloadState& st = store.mutable_state(charges.rows[i]);
    st.charged_through_s = static_cast<double>(charges.actions[i].period_end_s);
    st.charged_allocated_gpu_seconds = st.allocated_gpu_seconds;
    st.charged_used_vram_gpu_seconds = st.used_vram_gpu_seconds;
    st.charged_used_sm_gpu_seconds = st.used_sm_gpu_seconds;
  }
}

}  // namespace gpuvpa::recommender
