// Proposals into the ledger: one `recommendation` row (status proposed) per planned workload,
// under its cost center, with the monthly cost before and after, so that showback's "savings
// proposed" (the latest proposal per workload) is the planner's. A workload left as it is gets
// a row too (after = before): it supersedes an older proposal that no longer holds.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cost/ledger.h"
#include "updater/plan/planner.h"

namespace gpuvpa::updater {

// Rows for every priced action with a target. `as_of_s` is the time the evidence runs to (the
// newest sample): the id holds it with the workload and the pick, so re-planning the same
// evidence adds nothing and newer evidence adds a newer proposal.
std::vector<LedgerAction> ProposalRows(const std::vector<PlannedAction>& actions, int64_t as_of_s);

}  // namespace gpuvpa::updater
