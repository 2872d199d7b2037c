// Trace input: replays a long-format CSV of GPU samples into the fleet store.
//
// Format (documented in README.md, "Trace format"): a header row naming the columns, in any
// order, then one row per sample of one device of one container:
//   required: timestamp, namespace, workload_kind, workload_name, container, pod, gpu_model,
//             allocation, vram_bytes, sm_active
//   optional: device (GPU index), cost_center (default: the cost-center rules for the
//             namespace, else "unallocated"), cuda_oom (0/1)
// Fields are separated by commas and never quoted (Kubernetes names and GPU model names hold
// no commas). Rows of one series must come in time order; the trace as a whole should.
// Malformed rows are reported with their line number and field, counted, and skipped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost_center.h"
#include "core/gpu_catalog.h"
#include "core/status.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct TraceIssue {
  size_t line = 0;    // 1-based; the header is line 1
  std::string field;  // column name, or "row" for the row as a whole
  std::string message;
};

struct TraceReplayReport {
  size_t rows = 0;  // data rows seen (blank lines excluded)
  size_t accepted = 0;
  size_t malformed = 0;
  std::vector<TraceIssue> issues;  // the first kMaxReportedIssues malformed rows
  double first_time_s = 0;
  double last_time_s = 0;
};

inline constexpr size_t kMaxReportedIssues = 20;

class TraceReplayer {
 public:
  // Rows without a cost_center get one from `cost_centers` (by namespace).
  TraceReplayer(FleetStore& store, const GpuCatalog& catalog, CostCenterRules cost_centers = {});

  // Whole CSV text, header included. An unusable header is an error; bad rows are not.
  Result<TraceReplayReport> ReplayText(std::string_view csv);
  // Memory-maps the file and replays it.
  Result<TraceReplayReport> ReplayFile(const std::string& path);

 private:
  struct Columns;
  struct RowCache {
    std::string key;
    std::string allocation;
    std::string gpu_model;
    std::string cost_center;
  };

  FleetStore& store_;
  const GpuCatalog& catalog_;
  CostCenterRules cost_centers_;
  std::vector<RowCache> row_cache_;  // by store row: the raw identity fields last resolved
  std::string key_buffer_;
};

}  // namespace gpuvpa::recommender
