// What the ledger's backends share (core/cost/ledger_sqlite.cc, ledger_postgres.cc): the SQL
// they both run, the row layout they bind and read, the content check of a repeated id and the
// showback sums. Placeholders are $1, $2, ... in both (SQLite numbers "$N" in order of first
// use, so each text names $1 before $2). Internal to core/cost.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa::ledger_sql {

// The stored columns of a row, in the order Insert binds them ($1...$24) and ReadRows reads
// them (after seq).
inline constexpr const char* kRowColumns =
    "cluster, action_id, time_s, kind, status, namespace, workload, cost_center, gpu_model, "
    "before, after, monthly_before_micro_usd, monthly_after_micro_usd, period_start_s, "
    "period_end_s, allocated_milli_gpu_s, allocated_micro_usd, usage_measured, "
    "used_vram_micro_usd, used_sm_micro_usd, metered_milli_gpu_s, metered_micro_usd, "
    "reserved_micro_usd, evidence";
inline constexpr int kRowColumnCount = 24;
// The columns a repeated id must match, in SELECT order (ContentConflict's `stored`).
inline constexpr const char* kContentColumns =
    "kind, status, namespace, workload, cost_center, gpu_model, before, after, "
    "monthly_before_micro_usd, monthly_after_micro_usd, period_start_s, period_end_s, "
    "allocated_milli_gpu_s, allocated_micro_usd, usage_measured, used_vram_micro_usd, "
    "used_sm_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd";

// "INSERT INTO actions (<kRowColumns>) VALUES ($1, ..., $24)"; the caller adds its conflict
// clause.
std::string InsertSql();

// Calls bind(index, value) for each column of kRowColumns, 1-based, with an int64_t or a
// std::string_view; the row's cluster is `cluster`.
template <class Bind>
void BindRow(const LedgerAction& a, std::string_view cluster, Bind&& bind) {
  bind(1, cluster);
  bind(2, std::string_view(a.action_id));
  bind(3, a.time_s);
  bind(4, ActionKindName(a.kind));
  bind(5, ActionStatusName(a.status));
  bind(6, std::string_view(a.namespace_name));
  bind(7, std::string_view(a.workload));
  bind(8, std::string_view(a.cost_center));
  bind(9, std::string_view(a.gpu_model));
  bind(10, std::string_view(a.before));
  bind(11, std::string_view(a.after));
  bind(12, a.monthly_before);
  bind(13, a.monthly_after);
  bind(14, a.period_start_s);
  bind(15, a.period_end_s);
  bind(16, a.allocated_gpu_time);
  bind(17, a.allocated);
  bind(18, int64_t{a.usage_measured ? 1 : 0});
  bind(19, a.used_vram);
  bind(20, a.used_sm);
  bind(21, a.metered_gpu_time);
  bind(22, a.metered);
  bind(23, a.reserved);
  bind(24, std::string_view(a.evidence_json));
}

// A row read back in kRowColumns order: text(i) and int64(i) read column i (0-based, after any
// leading columns the caller skipped by `first`).
template <class Text, class Int>
Result<LedgerAction> ReadRow(int first, Text&& text, Int&& int64) {
  LedgerAction a;
  a.cluster = text(first + 0);
  a.action_id = text(first + 1);
  a.time_s = int64(first + 2);
  Result<ActionKind> kind = ParseActionKind(text(first + 3));
  if (!kind.ok()) return kind.status();
  a.kind = *kind;
  Result<ActionStatus> status = ParseActionStatus(text(first + 4));
  if (!status.ok()) return status.status();
  a.status = *status;
  a.namespace_name = text(first + 5);
  a.workload = text(first + 6);
  a.cost_center = text(first + 7);
  a.gpu_model = text(first + 8);
  a.before = text(first + 9);
  a.after = text(first + 10);
  a.monthly_before = int64(first + 11);
  a.monthly_after = int64(first + 12);
  a.period_start_s = int64(first + 13);
  a.period_end_s = int64(first + 14);
  a.allocated_gpu_time = int64(first + 15);
  a.allocated = int64(first + 16);
  a.usage_measured = int64(first + 17) != 0;
  a.used_vram = int64(first + 18);
  a.used_sm = int64(first + 19);
  a.metered_gpu_time = int64(first + 20);
  a.metered = int64(first + 21);
  a.reserved = int64(first + 22);
  a.evidence_json = text(first + 23);
  return a;
}

// Refuses `a` when the row stored under its id differs in content: `stored` holds that row's
// kContentColumns as text. The error names the field and both values.
Status ContentConflict(const LedgerAction& a, const std::vector<std::string>& stored);

// The latest still-proposed recommendation per workload of cluster $1 with time in [$2, $3):
// kRowColumns.
std::string LatestProposalsSql();
// Inserts a delivery ($1 cluster ... $9 http_status), nothing when the id is recorded.
extern const char* const kInsertDeliverySql;
Status ValidateDelivery(const DeliveryRecord& d);

// Whether a charge mark may be stored.
Status ValidateMark(const ChargeMark& m);

// Rows summed per UTC day: schema 5's `ledger_daily`, kept by a trigger on every insert. A row
// whose period lies within one day, or an instant (empty period; its time), is summed on its day;
// a row whose period crosses midnight is not (showback prorates it row by row).
inline constexpr int64_t kDayS = 86400;

// An append refused because a day's total of one allocation would pass 2^63 - 1:
// INVALID_ARGUMENT (the same rows would be refused again), `what` naming the append.
Status DailyTotalOverflow(const std::string& what);

// The showback queries: $1 window start (inclusive), $2 end (exclusive), $3 the cluster ('' for
// every cluster). `step_origin` and `step_s` number the steps of a stepped query (the proposed
// savings are the latest recommendation per workload and step); integers, written into the text.
struct ShowbackSql {
  // ReadScanRow's columns: every row whose period (or instant) lies in the window; scan_select:
  // its SELECT ... FROM, without a WHERE.
  std::string scan, scan_select;
  // cluster, namespace, workload, cost_center, gpu_model, before, monthly_before,
  // monthly_after, action_id, time_s: the latest recommendation of each workload in each step of
  // the window, where it is still proposed.
  std::string proposed;
};
ShowbackSql ShowbackQueries(int64_t step_origin, int64_t step_s);

// A showback's plan: the queries a backend runs, in order, and what their rows are.
struct ShowbackPlan {
  enum class Rows {
    kScanned,   // ShowbackSql::scan's columns
    kDaily,     // ReadDailyRow's columns
    kProposed,  // ShowbackSql::proposed's columns
  };
  struct Query {
    Rows rows;
    std::string sql;
    std::vector<std::variant<int64_t, std::string>> params;  // $1, $2, ...
  };
  std::vector<Query> queries;
};

// One row of the scan, as a backend reads it.
struct ScanRow {
  std::string_view kind, status, action_id, cluster, namespace_name, workload;
  std::string_view cost_center, gpu_model, before;
  bool usage_measured = false;
  int64_t allocated_gpu_time = 0, allocated = 0, used_vram = 0, used_sm = 0;
  int64_t monthly_before = 0, monthly_after = 0;
  int64_t metered_gpu_time = 0, metered = 0, reserved = 0;
  int64_t period_start_s = 0, period_end_s = 0, time_s = 0;
};
// Reads the scan's columns (0-based, in the order ShowbackQueries' scan selects them).
template <class Text, class Int>
ScanRow ReadScanRow(Text&& text, Int&& int64) {
  ScanRow r;
  r.kind = text(0);
  r.status = text(1);
  r.usage_measured = int64(2) != 0;
  r.allocated_gpu_time = int64(3);
  r.allocated = int64(4);
  r.used_vram = int64(5);
  r.used_sm = int64(6);
  r.monthly_before = int64(7);
  r.monthly_after = int64(8);
  r.metered_gpu_time = int64(9);
  r.metered = int64(10);
  r.reserved = int64(11);
  r.period_start_s = int64(12);
  r.period_end_s = int64(13);
  r.action_id = text(14);
  r.cluster = text(15);
  r.namespace_name = text(16);
  r.workload = text(17);
  r.time_s = int64(18);
  r.cost_center = text(19);
  r.gpu_model = text(20);
  r.before = text(21);
  return r;
}

// One row of ledger_daily: the sums of one allocation's rows of one UTC day.
struct DailyRow {
  std::string_view cluster, namespace_name, workload, cost_center, gpu_model, before;
  int64_t day = 0;
  int64_t rows = 0, measured_rows = 0, metered_periods = 0;
  int64_t allocated_gpu_time = 0, allocated = 0, used_vram = 0, used_sm = 0;
  // Over the rows whose usage was measured: what idle tax is computed from.
  int64_t measured_allocated = 0, measured_used_vram = 0, measured_used_sm = 0;
  // Over applied changes and rollbacks that were applied: realised savings.
  int64_t realised_before = 0, realised_after = 0;
  int64_t metered_gpu_time = 0, metered = 0, reserved = 0;
};
// ledger_daily's columns in the order ReadDailyRow reads them.
inline constexpr const char* kDailyColumns =
    "cluster, namespace, workload, cost_center, gpu_model, before, day, row_count, "
    "measured_rows, metered_periods, allocated_milli_gpu_s, allocated_micro_usd, "
    "used_vram_micro_usd, used_sm_micro_usd, measured_allocated_micro_usd, "
    "measured_used_vram_micro_usd, measured_used_sm_micro_usd, realised_before_micro_usd, "
    "realised_after_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd";
template <class Text, class Int>
DailyRow ReadDailyRow(Text&& text, Int&& int64) {
  DailyRow d;
  d.cluster = text(0);
  d.namespace_name = text(1);
  d.workload = text(2);
  d.cost_center = text(3);
  d.gpu_model = text(4);
  d.before = text(5);
  int64_t* const sums[] = {&d.day,
                           &d.rows,
                           &d.measured_rows,
                           &d.metered_periods,
                           &d.allocated_gpu_time,
                           &d.allocated,
                           &d.used_vram,
                           &d.used_sm,
                           &d.measured_allocated,
                           &d.measured_used_vram,
                           &d.measured_used_sm,
                           &d.realised_before,
                           &d.realised_after,
                           &d.metered_gpu_time,
                           &d.metered,
                           &d.reserved};
  for (size_t i = 0; i < std::size(sums); ++i) *sums[i] = int64(static_cast<int>(6 + i));
  return d;
}

// Sums a showback from a plan's rows, one showback per step of the window. Rows are summed per
// allocation (cluster, namespace, workload, cost center, GPU model, resource) and step, in any
// order; Finish prices each allocation's GPU time (metered or allocated: whether its workload
// has a metered period in the step) and sums the allocations into the query's groups. Integer
// sums with overflow checks naming the row.
class ShowbackBuilder {
 public:
  // INVALID_ARGUMENT when the window is empty, or the step is not positive, needs a window
  // (from and to) or makes more than kMaxShowbackSteps steps.
  static Result<ShowbackBuilder> Start(const ShowbackQuery& query);
  // The queries, reading ledger_daily for the days that lie whole inside one step of the
  // window (their rows are summed unprorated: the same figures) and the rows themselves for
  // every other day and for rows that cross midnight. The proposed savings last: they are added
  // to allocations already summed.
  ShowbackPlan Plan() const;

  // Adds one row of a plan's query: text(i) and int64(i) read its column i.
  template <class Text, class Int>
  Status Add(ShowbackPlan::Rows rows, Text&& text, Int&& int64) {
    switch (rows) {
      case ShowbackPlan::Rows::kScanned:
        return AddScanned(ReadScanRow(text, int64));
      case ShowbackPlan::Rows::kDaily:
        return AddDaily(ReadDailyRow(text, int64));
      case ShowbackPlan::Rows::kProposed:
        return AddProposed({text(0), text(1), text(2), text(3), text(4), text(5)}, int64(6),
                           int64(7), text(8), int64(9));
    }
    return OkStatus();
  }
  Result<std::vector<Showback>> Finish() &&;

 private:
  struct Step {
    int64_t from, to;
  };
  // Looked up by string_view: no string is built per row.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using TextIds = std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>;
  // (step << 32) | id: the sums and flags of an allocation or workload in a step.
  static uint64_t StepKey(size_t k, uint32_t id) { return (uint64_t{k} << 32) | id; }

  explicit ShowbackBuilder(const ShowbackQuery& query);
  Status AddScanned(const ScanRow& row);
  Status AddDaily(const DailyRow& row);
  Status AddProposed(const AllocationGroup& g, int64_t monthly_before, int64_t monthly_after,
                     std::string_view action_id, int64_t time_s);
  // The id of `g`'s allocation (numbered when new, with its workload's).
  uint32_t AllocationId(const AllocationGroup& g);
  // The steps [first, last] that [start, end) overlaps (an instant: end <= start, at time_s).
  std::pair<size_t, size_t> StepsOf(int64_t start, int64_t end, int64_t time_s) const;
  // The step that holds the whole UTC day starting at `day_start_s`, if one does (the day lies
  // inside the window and crosses no step's edge).
  std::optional<size_t> StepOfDay(int64_t day_start_s) const;
  ShowbackQuery query_;
  int64_t from_;
  int64_t to_;
  int64_t step_;
  std::vector<Step> steps_;
  // Allocations (AllocationGroupText) and workloads (cluster \x1f namespace \x1f workload) by
  // id; an allocation's workload.
  TextIds allocation_ids_, workload_ids_;
  std::vector<const std::string*> allocation_texts_;
  std::vector<uint32_t> allocation_workload_;
  // Not yet priced: billed* are set by Finish.
  std::unordered_map<uint64_t, ShowbackRow> sums_;
  // The workloads with a metered period in a step.
  std::unordered_set<uint64_t> metered_;
  std::string workload_key_;  // reused
  std::string group_key_;     // reused
};

}  // namespace gpuvpa::ledger_sql

namespace gpuvpa::ledger_sql {

// The backends (Ledger::Open picks one; options.cluster is valid).
Result<std::unique_ptr<Ledger>> OpenSqliteLedger(const std::string& path,
                                                 const LedgerOptions& options);
Result<std::unique_ptr<Ledger>> OpenPostgresLedger(const std::string& uri,
                                                   const LedgerOptions& options);

// A migration's text with "{{cluster}}" replaced by `cluster` (a DNS-1123 label: safe in a
// string literal): rows written before clusters existed belong to the installation migrating;
// "{{daily totals of T}}" by DailyTotalsSelect(T), and "{{add to daily totals}}" by
// DailyTotalsAdd().
std::string MigrationText(std::string_view sql, std::string_view cluster);
// The daily totals (ledger_daily's columns, in order) of the rows of table `source` (actions, or
// a trigger's new rows) that lie within one UTC day, ordered by ledger_daily's key: SQL both
// dialects read alike. Part of schema 5's migration: never change it once shipped.
std::string DailyTotalsSelect(std::string_view source);
// The upsert clause that adds such totals to ledger_daily's (ON CONFLICT ... DO UPDATE), in both
// dialects. Part of schema 5's migration too.
std::string DailyTotalsAdd();

}  // namespace gpuvpa::ledger_sql
