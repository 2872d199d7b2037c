// Charging usage to the ledger: each workload-container's allocated and used GPU time since it
// was last charged becomes one priced allocated_usage action under its cost center.
//
// Charges are deltas against markers kept in the store (and its checkpoint), and each action's
// id names the workload and its period, so a crash between writing the ledger and saving the
// checkpoint re-emits the same ids, which the ledger ignores: nothing is charged twice or lost.
#pragma once

#include <string>
#include <vector>

#include "core/ledger.h"
#include "core/price_book.h"
#include "recommender/logic/recommendation.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct UsageCharges {
  std::vector<LedgerAction> actions;
  std::vector<uint32_t> rows;    // the store row of each action
  std::vector<Status> unpriced;  // workloads left uncharged (no price): charged on a later run
};

// `recommendations` (one per row, as RecommendAll returns) supply each action's evidence.
UsageCharges ChargeUsageSinceLastCharge(const FleetStore& store,
                                        const std::vector<Recommendation>& recommendations,
                                        const PriceBook& prices, const std::string& region);

// Advances the markers of the charged rows; call once the ledger has acknowledged the actions.
void MarkCharged(FleetStore& store, const UsageCharges& charges);

}  // namespace gpuvpa::recommender
