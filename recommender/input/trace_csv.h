// Trace input: replays a long-format CSV of GPU samples into the fleet store.
//
// Format (documented in README.md, "Trace format"): a header row naming the columns, in any
// order, then one row per sample of one device of one container:
//   required: timestamp, namespace, workload_kind, workload_name, container, pod, gpu_model,
//             allocation, vram_bytes, sm_active
//   optional: device (GPU index), cost_center (default: the cost-center rules for the
//             namespace, else "unallocated"), cuda_oom (0/1)
// Fields are separated by commas and never quoted (Kubernetes names and GPU model names hold
// no commas). A series is one pod's device; its rows must come in time order, and a row at or
// before the series' high-water mark (kept in the checkpoint) is skipped as already ingested,
// so replaying the same or an overlapping trace adds nothing twice.
// Malformed rows are reported with their line number and field, counted, and skipped.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/cost/cost_center.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct TraceIssue {
  size_t line = 0;    // 1-based; the header is line 1
  std::string field;  // column name, or "row" for the row as a whole
  std::string message;
};

// Units of the sample columns. Never guessed: a ratio run whose values look like percent, or a
// bytes run whose values look like MiB, stops with the evidence and the flag to pass.
enum class SmUnit { kRatio, kPercent };
enum class VramUnit { kBytes, kMebibytes };

struct TraceReplayOptions {
  // Timestamps later than now + max_future_skew_s are malformed rows (a clock or unit error
  // must not move the fleet's clock); so are those before 2000-01-01 or not finite.
  // Unset: the wall clock when the replayer is made.
  std::optional<double> now_s;
  double max_future_skew_s = 300;
  SmUnit sm_unit = SmUnit::kRatio;
  VramUnit vram_unit = VramUnit::kBytes;
  // Only rows with window_from_s <= timestamp < window_until_s enter the store; the others are
  // counted as outside the window (a backtest trains on one part of a trace, checks the rest).
  double window_from_s = -std::numeric_limits<double>::infinity();
  double window_until_s = std::numeric_limits<double>::infinity();
};

struct TraceReplayReport {
  size_t rows = 0;  // data rows seen (blank lines excluded)
  size_t accepted = 0;
  size_t already_ingested = 0;  // at or before their series' high-water mark: skipped, counted
  size_t malformed = 0;
  size_t outside_window = 0;       // valid rows outside [window_from_s, window_until_s)
  std::vector<TraceIssue> issues;  // the first kMaxReportedIssues malformed rows
  double first_time_s = 0;         // of accepted rows
  double last_time_s = 0;
};

inline constexpr size_t kMaxReportedIssues = 20;

class TraceReplayer {
 public:
  // Rows without a cost_center get one from `cost_centers` (by namespace).
  TraceReplayer(FleetStore& store, const GpuCatalog& catalog, CostCenterRules cost_centers = {},
                TraceReplayOptions options = {});

  // Whole CSV text, header included (a UTF-8 byte-order mark is skipped). An unusable header is
  // an error that lists the expected columns; bad rows are not. A unit mismatch (see SmUnit)
  // is an error after the replay: the caller must then persist nothing.
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

  // The replay proper; `release_consumed`: `csv` is a private file mapping whose pages behind
  // the current row are handed back to the kernel as the replay goes (peak RSS stays bounded
  // whatever the file's size).
  Result<TraceReplayReport> Replay(std::string_view csv, bool release_consumed);
  // The steps of Replay: the header, then each row (time, identity checks, values, workload,
  // series, queue), then the report with the unit evidence.
  struct Pass;
  struct PendingSample;
  Status ReadHeader(std::string_view csv, size_t& pos, Pass& pass);
  void ReplayRow(Pass& pass);
  bool ParseValues(Pass& pass, GpuSample& sample, int& device);
  // A row whose series is not known yet: its workload (checked and tracked when its raw
  // identity changed) and its device series.
  std::optional<uint32_t> ResolveRow(Pass& pass);
  uint32_t TrackSeries(Pass& pass, uint32_t row, int device);
  void Enqueue(Pass& pass, const PendingSample& sample);
  Result<TraceReplayReport> Finish(Pass& pass);

  FleetStore& store_;
  const GpuCatalog& catalog_;
  CostCenterRules cost_centers_;
  TraceReplayOptions options_;
  // Samples parsed but not yet in the store, and what ingesting them needs.
  struct PendingSample {
    uint32_t row = 0;
    uint32_t series = 0;
    size_t line = 0;
    GpuSample sample;
  };
  // Ingests the pending samples grouped by workload (each workload's in their trace order) and
  // counts their outcomes into the pass's report; store refusals go to its store_issues (line
  // order).
  void FlushPending(Pass& pass);

  std::vector<PendingSample> pending_;
  std::vector<uint32_t> pending_order_;  // scratch of FlushPending
  std::vector<uint32_t> row_starts_;     // scratch of FlushPending, by store row
  std::vector<RowCache> row_cache_;      // by store row: the raw identity fields last resolved
  // The series each distinct raw identity text (namespace .. allocation, device, cost center,
  // as runs of the row's own fields) resolved to. A trace repeats its workloads in the same
  // order at every timestamp, so each entry remembers which entry followed it last time: the
  // next row's runs are compared with that guess (text stored in first-seen order, read
  // sequentially) before any hash lookup. An entry holds while its row has not been re-tracked
  // from other text, and the store's layout and the header's columns are those it was made
  // under.
  struct SeriesEntry {
    uint32_t row = 0;
    uint32_t series = 0;
    uint32_t track_generation = 0;
    uint32_t next = UINT32_MAX;  // the entry that followed this one last time
    size_t key_offset = 0;       // into series_text_
    size_t key_size = 0;
  };
  // The entry for the current row's text (`series_spans_`), or UINT32_MAX.
  uint32_t FindSeries();
  // series_key_ = the current row's text: its runs, each followed by a unit separator.
  void SeriesKey();
  void ForgetSeries();
  // The series columns as runs of adjacent fields [first, last] in the header's order, and the
  // current row's text of each run.
  std::vector<std::pair<int, int>> series_runs_;
  std::array<std::string_view, 9> series_spans_;
  std::vector<int> series_columns_;  // the header's column positions the entries were made under
  std::vector<SeriesEntry> series_;
  std::string series_text_;
  absl::flat_hash_map<std::string, uint32_t> series_index_;
  std::vector<uint32_t> row_track_generation_;  // by store row
  uint64_t series_layout_ = 0;
  uint32_t previous_series_ = UINT32_MAX;
  std::string series_key_;
  std::string key_buffer_;
  std::string last_timestamp_text_;  // the last timestamp parsed, and its value
  double last_timestamp_s_ = 0;
};

}  // namespace gpuvpa::recommender
