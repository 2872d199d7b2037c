// Charging usage to the ledger: each workload-container's device time ingested since it was
// last charged (its pending charge) becomes one priced allocated_usage action under its cost
// center, and each of its series' high-water marks becomes a charge mark written in the same
// transaction.
//
// Exactly once: a sample is pending only if it is newer than its series' ingest mark (the
// checkpoint) and newer than its charge mark (the checkpoint, or the ledger's own marks when the
// run has no checkpoint). A crash after the ledger commit and before the checkpoint save
// replays the same samples on retry; the ledger's marks say they are charged, so nothing is
// charged twice, and nothing is lost.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/cost/ledger.h"
#include "core/cost/price_book.h"
#include "recommender/logic/recommendation.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct UsageCharges {
  std::vector<LedgerAction> actions;
  std::vector<ChargeMark> marks;  // the new charge mark of every series of the charged rows
  std::vector<uint32_t> rows;     // the store row of each action
  std::vector<Status> unpriced;   // workloads left uncharged (no price): charged on a later run
};

// `recommendations` (one per row, as RecommendAll returns) supply each action's evidence. An
// amount that does not fit the ledger's integers is an error naming the workload.
Result<UsageCharges> ChargePendingUsage(const FleetStore& store,
                                        const std::vector<Recommendation>& recommendations,
                                        const PriceBook& prices, const std::string& region);

// Clears the charged rows' pending usage and advances their series' charge marks; call once
// the ledger has acknowledged the actions and marks.
void MarkCharged(FleetStore& store, const UsageCharges& charges);

struct LedgerCharge {
  size_t workloads = 0;  // workload-containers charged
  size_t new_rows = 0;   // rows the ledger did not hold yet
  // What was charged, by cost center: allocated cost, and its idle part (allocated minus
  // VRAM-used, rows with measured usage only). For the cost counters of /metrics.
  struct Amounts {
    MicroUsd allocated = 0;
    MicroUsd idle = 0;
  };
  std::map<std::string, Amounts> by_cost_center;
  std::vector<Status> unpriced;  // not charged yet (no price for the model): kept pending
};
// Prices the pending usage, appends it with its series marks in one ledger transaction, then
// marks it charged in the store. Save the checkpoint after this, never before: a crash in
// between replays samples the ledger's marks already cover, so nothing is charged twice.
Result<LedgerCharge> ChargeToLedger(FleetStore& store,
                                    const std::vector<Recommendation>& recommendations,
                                    const PriceBook& prices, const std::string& region,
                                    Ledger& ledger);

// The action id of a usage charge: every part escaped (core/base/names.h), plus the period and
// the amount, so two different charges never share an id and a repeated one always does.
std::string UsageActionId(const v1::WorkloadIdentity& identity, int64_t period_start_s,
                          int64_t period_end_s, uint64_t samples, MilliGpuSeconds allocated);

}  // namespace gpuvpa::recommender
