// The ledger in the FinOps Open Cost and Usage Specification (FOCUS 1.2) as CSV: one row per
// workload-container (the ledger's finest allocation) and charge period, the columns that have a
// meaning for GPU chargeback, plus x_ columns for what only gpuvpa knows. The mapping is in the
// README ("FOCUS export").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

// A FOCUS column and its data type as the specification names it.
enum class FocusType { kString, kDecimal, kDateTime, kJson };
struct FocusColumn {
  const char* name;
  FocusType type;
  bool nullable;
};
const std::vector<FocusColumn>& FocusColumns();

// Showbacks grouped by ShowbackGroup::kAllocation, each with a window (one per charge period).
// Rows with no GPU time and no cost are left out. Money exact to the micro-dollar.
Result<std::string> FocusCsv(const std::vector<Showback>& periods);

}  // namespace gpuvpa
