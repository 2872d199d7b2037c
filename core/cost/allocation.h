// The ledger as OpenCost's allocation API reads: `/allocation` (and `/allocation/compute`)
// queries parsed from a URL's query string, answered from Ledger::QueryShowbackSteps in
// OpenCost's envelope. Every figure is a showback figure of the same window: the standard fields
// are floats to 5 decimals as OpenCost writes them, the `gpuvpa` extension object carries the
// same amounts exactly, in micro-dollars and milli-GPU-seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

// What an allocation can be aggregated by: OpenCost's properties, and gpuvpa's own.
enum class AllocationProperty {
  kCluster,
  kNamespace,
  kControllerKind,
  kController,
  kPod,
  kContainer,
  kLabel,       // label:<key>
  kAnnotation,  // annotation:<key>
  kCostCenter,
  kGpuModel,
  kMigProfile,
};
struct AggregateBy {
  AllocationProperty property = AllocationProperty::kNamespace;
  std::string key;  // kLabel, kAnnotation only
};

struct AllocationRequest {
  int64_t from_s = 0;                  // inclusive
  int64_t to_s = 0;                    // exclusive
  std::optional<int64_t> step_s;       // none: one step, the window
  std::vector<AggregateBy> aggregate;  // empty: one allocation per workload-container
  bool accumulate = false;             // one map over the whole window, whatever the step
  bool include_idle = false;
  bool share_idle = false;
};

// "today", "yesterday", "week", "lastweek", "month", "lastmonth" (UTC; weeks start on Sunday as
// OpenCost's do), a duration ending at now ("30m", "12h", "7d", "2w"), or a pair of RFC 3339
// times or of Unix seconds ("start,end"). INVALID_ARGUMENT naming the parameter and the value.
Result<std::pair<int64_t, int64_t>> ParseAllocationWindow(std::string_view text, int64_t now_s);
// "30m", "6h", "1d", "1w" (or plain seconds), at least a minute: a step.
Result<int64_t> ParseAllocationStep(std::string_view text);

// Parses a query string ("window=7d&aggregate=namespace&step=1d"): percent-decoded, each
// parameter at most once, unknown parameters refused (a typo must not widen a query silently;
// OpenCost's `resolution`, `filter*` and `format` are not served and say so). `window` is
// required. Errors are INVALID_ARGUMENT naming the parameter and the value.
Result<AllocationRequest> ParseAllocationRequest(std::string_view query_string, int64_t now_s);

// The ledger query a request asks (grouped by allocation; its steps, or one window when
// accumulating): what /allocation and /focus both read.
ShowbackQuery AllocationShowbackQuery(const AllocationRequest& request);

// OpenCost's success envelope {"code":200,"status":"success","data":[{name: allocation}, ...]},
// one map per step (one when accumulating). NaN and infinities are never written.
Result<std::string> AllocationResponse(const Ledger& ledger, const AllocationRequest& request);

// OpenCost's error envelope, {"code":N,"status":"error","message":...}.
std::string AllocationErrorBody(int code, std::string_view message);

// A row of the allocation (the finest group the ledger holds) as OpenCost names its parts:
// workload "Deployment/name/container" -> controllerKind, controller, container.
struct AllocationNames {
  std::string controller_kind, controller, container;
};
AllocationNames SplitWorkload(std::string_view workload);

}  // namespace gpuvpa
