// The chargeback ledger: an append-only, durable record of every priced action. Two backends
// behind one interface, selected by a URL (ParseLedgerUrl): SQLite, the embedded default (one
// file, WAL mode, synchronous=FULL: a row is on disk when Append returns), and PostgreSQL for
// many writers and clusters (core/cost/ledger_postgres.h). One row per action; the action id is
// unique within its cluster, so appending the same action twice records it once. Rows are never
// updated or deleted (triggers refuse it); a status change is a new action.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/cost/money.h"

namespace gpuvpa {

enum class ActionKind {
  kRecommendation,  // a proposed change (showback: savings proposed)
  kAppliedChange,   // a change made (savings realised)
  kRollback,        // a change undone (before/after reversed)
  kActivation,      // scale 0 -> N
  kDeactivation,    // scale N -> 0
  kMeteredPeriod,   // active replica time of a scaler-driven workload (chargeback)
  kAllocatedUsage,  // allocated and used GPU time over a period (showback)
};
enum class ActionStatus { kProposed, kApplied, kRolledBack, kFailed };

std::string_view ActionKindName(ActionKind kind);
std::string_view ActionStatusName(ActionStatus status);
Result<ActionKind> ParseActionKind(std::string_view text);
Result<ActionStatus> ParseActionStatus(std::string_view text);

struct LedgerAction {
  // The installation that wrote the row (a DNS-1123 label). Empty: the cluster of the ledger it
  // is appended to (LedgerOptions). Ids are unique per cluster: two clusters writing the same
  // workload names stay apart.
  std::string cluster;
  std::string action_id;
  int64_t time_s = 0;
  ActionKind kind = ActionKind::kRecommendation;
  ActionStatus status = ActionStatus::kProposed;
  std::string namespace_name;
  std::string workload;
  std::string cost_center;
  std::string gpu_model;
  std::string before;  // e.g. "nvidia.com/gpu=1"
  std::string after;   // e.g. "nvidia.com/mig-3g.40gb=1"
  MicroUsd monthly_before = 0;
  MicroUsd monthly_after = 0;
  int64_t period_start_s = 0;
  int64_t period_end_s = 0;
  MilliGpuSeconds allocated_gpu_time = 0;
  MicroUsd allocated = 0;
  // False when the source knows the allocation but not the usage (e.g. an allocation-only
  // trace): such rows add to allocated cost but not to used cost or idle tax.
  bool usage_measured = true;
  MicroUsd used_vram = 0;  // billable basis
  MicroUsd used_sm = 0;    // advisory
  MilliGpuSeconds metered_gpu_time = 0;
  MicroUsd metered = 0;
  MicroUsd reserved = 0;  // what the reservation metering replaces would have cost
  std::string evidence_json = "{}";
};

// How far a metered series has been charged: a source that charges by sample series (the
// recommender's usage charges) writes one mark per series with its actions, in the same
// transaction, so that any later run, with or without its own state, knows what is charged.
struct ChargeMark {
  std::string series;            // an unambiguous series name (core/base/names.h)
  double charged_through_s = 0;  // samples at or before this time are charged
  bool operator==(const ChargeMark&) const = default;
};

// kAllocation: one group per (cluster, namespace, workload, cost center, GPU model, resource:
// the row's `before`, what the workload held), the finest the ledger holds; its group text is
// AllocationGroupText's, read back by ParseAllocationGroup.
enum class ShowbackGroup { kCostCenter, kGpuModel, kCluster, kAllocation };

struct AllocationGroup {
  std::string_view cluster, namespace_name, workload, cost_center, gpu_model, resource;
};
// The fields joined by \x1f (a control character: no ledger text holds one).
std::string AllocationGroupText(const AllocationGroup& g);
// The same text into `out` (its buffer reused: showback builds one per scanned row).
void AssignAllocationGroupText(const AllocationGroup& g, std::string& out);
Result<AllocationGroup> ParseAllocationGroup(std::string_view text);

// A window keeps the part of each row's period inside it: GPU time and money are prorated by
// the seconds of [period_start_s, period_end_s) that fall in [from_s, to_s) (a row with an
// empty period counts whole when its time_s is inside). Monthly savings are not prorated: the
// latest recommendation in the window counts.
struct ShowbackQuery {
  std::optional<int64_t> from_s;  // inclusive
  std::optional<int64_t> to_s;    // exclusive
  ShowbackGroup group_by = ShowbackGroup::kCostCenter;
  std::optional<std::string> cluster;  // only this cluster's rows; none: every cluster's
  // Steps of this many seconds from from_s (the last may be shorter): QueryShowbackSteps gives
  // one showback per step, each equal to a showback over that step's window. Needs a window.
  std::optional<int64_t> step_s;
  // Whether whole days may be read from the ledger's daily totals (the same figures, fewer rows
  // read); false reads every row: what tests and benchmarks compare the daily totals against.
  bool use_daily_totals = true;
};
inline constexpr size_t kMaxShowbackSteps = 10'000;

struct ShowbackRow {
  std::string group;
  MilliGpuSeconds allocated_gpu_time = 0;
  MicroUsd allocated = 0;
  MicroUsd used_vram = 0;
  MicroUsd used_sm = 0;
  MicroUsd idle_tax_vram = 0;  // allocated - used, over rows whose usage was measured
  MicroUsd idle_tax_sm = 0;
  MicroUsd savings_realised_monthly = 0;  // applied changes net of rollbacks
  MicroUsd savings_proposed_monthly = 0;  // latest open recommendation per workload
  MilliGpuSeconds metered_gpu_time = 0;
  MicroUsd metered = 0;
  MicroUsd reserved = 0;
  // The bill, each GPU-second once: metered cost for workloads metered in the window (their
  // allocation estimate is left out), allocated cost for every other workload.
  MicroUsd billed = 0;
  MicroUsd billed_metered = 0;      // the part of `billed` that is metered (the rest: allocated)
  MicroUsd allocated_unbilled = 0;  // allocation estimates of metered workloads, not billed
  MilliGpuSeconds billed_gpu_time = 0;  // the GPU time `billed` prices
  // Whether the group holds rows with measured usage and rows without (allocation-only
  // imports): idle tax of a group with no measured row is unknown, not $0.
  bool usage_measured = false;
  bool usage_unmeasured = false;
};

// to += add, every amount (the usage flags or'ed); an overflow is an error naming what was
// added: `what` and `name` ("allocation", "default/ns/w"; the text is built only then).
Status AddShowbackRow(ShowbackRow& to, const ShowbackRow& add, std::string_view what,
                      std::string_view name);

struct Showback {
  std::optional<int64_t> from_s;  // the window asked for
  std::optional<int64_t> to_s;
  std::vector<ShowbackRow> groups;
  ShowbackRow total;  // the sum of the groups (integer sums: exact)
};

// Bounds every row is held to, whoever writes it (the LedgerService's clients included): text
// that shows safely in a table, CSV or terminal, and amounts whose sums over millions of rows
// fit 64 bits (showback still sums with checks and names the row that would overflow).
inline constexpr size_t kMaxLedgerIdBytes = 1024;
inline constexpr size_t kMaxLedgerTextBytes = 1024;  // namespace, workload, cost center, ...
inline constexpr size_t kMaxLedgerEvidenceBytes = 64 * 1024;
// $100 million in one row: a month of 10,000 H100s at list price is $50 million.
inline constexpr int64_t kMaxLedgerMicroUsd = 100'000'000'000'000;
// About 31,700 GPU-years in one row.
inline constexpr int64_t kMaxLedgerMilliGpuSeconds = 1'000'000'000'000'000;
// Times and periods before 2100-01-01 (Unix seconds).
inline constexpr int64_t kMaxLedgerTimeS = 4'102'444'800;

// Whether `action` may be stored: ids and names present, text valid UTF-8 without control
// characters and within its bound, amounts and times within [0, their bound], no period that
// runs backwards. The error names the row, the field and the value.
Status ValidateLedgerAction(const LedgerAction& action);

// Where rows go: the ledger itself, or a client that forwards them to the process that owns it
// (core/cost/ledger_rpc.h). Appends are idempotent by action id either way.
class LedgerSink {
 public:
  virtual ~LedgerSink() = default;
  // All rows or none (RemoteLedger: per call of at most 10,000 rows, see there); returns how
  // many were new. Marks: see Ledger::Append.
  virtual Result<size_t> Append(std::span<const LedgerAction> actions,
                                std::span<const ChargeMark> marks = {}) = 0;
  Result<size_t> Append(const LedgerAction& action) { return Append(std::span(&action, 1)); }
};

// Rows and sums per (cluster, cost center, kind): what `gpuvpa ledger copy` compares on both
// sides.
struct LedgerTotal {
  std::string cluster, cost_center, kind;
  int64_t rows = 0;
  // allocated, used_vram, used_sm, metered, reserved, monthly_before, monthly_after (micro-USD),
  // allocated and metered GPU time (milli-GPU-seconds).
  std::array<int64_t, 9> sums{};
  bool operator==(const LedgerTotal&) const = default;
};
inline constexpr std::array<const char*, 9> kLedgerTotalNames = {
    "allocated",     "used_vram",          "used_sm",
    "metered",       "reserved",           "monthly_before",
    "monthly_after", "allocated_gpu_time", "metered_gpu_time"};

struct ClusterChargeMark {
  std::string cluster;
  ChargeMark mark;
  bool operator==(const ClusterChargeMark&) const = default;
};

// A summary sent to an owner (a Slack or JSON webhook), recorded when the receiver answered:
// `outcome` "delivered" (2xx) or "refused" (a 4xx, which no retry would change).
struct DeliveryRecord {
  std::string delivery_id;
  int64_t time_s = 0;
  std::string target;
  std::string cost_center;
  int64_t period_start_s = 0;
  int64_t period_end_s = 0;
  std::string outcome;
  int http_status = 0;
};

// The cluster of an installation that names none.
inline constexpr std::string_view kDefaultCluster = "default";

// What every backend is opened with.
struct LedgerOptions {
  // Stamped on rows appended without one, and the cluster whose charge marks ChargeMarks reads.
  std::string cluster = std::string(kDefaultCluster);
  // Read only: the connection cannot write (SQLite opened read-only, PostgreSQL sessions with
  // default_transaction_read_only), nothing is created or migrated (a ledger at another schema
  // version is FAILED_PRECONDITION), Append is FAILED_PRECONDITION. For servers of the ledger's
  // figures (the cost API).
  bool read_only = false;
};
// What Append on a read-only ledger returns.
Status ReadOnlyLedgerError(std::string_view shown_as);

// Where a ledger is: "sqlite:PATH" or a plain file path (SQLite), or "postgresql://..." /
// "postgres://..." (a libpq connection URI; keep it in a file, never in a flag: it may hold a
// password). The error names the URL without its password.
struct LedgerUrl {
  enum class Backend { kSqlite, kPostgres };
  Backend backend = Backend::kSqlite;
  std::string target;  // the SQLite path, or the whole PostgreSQL URI
};
Result<LedgerUrl> ParseLedgerUrl(std::string_view url);
// The URL with any password replaced by "***": what errors and logs may show.
std::string RedactLedgerUrl(std::string_view url);
// Reads a ledger URL from a file (a mounted Secret): its first line, trimmed.
Result<std::string> ReadLedgerUrlFile(const std::string& path);

// The ledger: safe to use from several threads.
class Ledger : public LedgerSink {
 public:
  // Current schema version of both backends; opening a newer ledger is refused, an older one is
  // migrated (each step in its own transaction, with its version bump).
  // 2: charge marks; 3: clusters; 4: deliveries; 5: daily totals (ledger_daily).
  static constexpr int kSchemaVersion = 5;

  // Opens (creating and migrating when needed) the ledger at `url` (ParseLedgerUrl).
  static Result<std::unique_ptr<Ledger>> Open(const std::string& url,
                                              const LedgerOptions& options = {});

  // Appends in one transaction: all rows or none. Returns how many were new (ids already in the
  // ledger with the same content are skipped). Invalid rows (ValidateLedgerAction) and a row
  // whose id is recorded with other content (kind, status, names, allocations, period or any
  // amount; its time and evidence may differ: a retried step keeps the first) are refused:
  // INVALID_ARGUMENT and ALREADY_EXISTS respectively, naming the field (and both values).
  // Marks are written in the same transaction (a mark never moves back: the latest per series
  // is the largest); they belong to options().cluster.
  Result<size_t> Append(std::span<const LedgerAction> actions,
                        std::span<const ChargeMark> marks = {}) override = 0;
  using LedgerSink::Append;
  // The charge mark of every series of options().cluster that has one.
  virtual Result<std::unordered_map<std::string, double>> ChargeMarks() const = 0;

  // One showback over the query's window (its step, if any, is not used).
  Result<Showback> QueryShowback(const ShowbackQuery& query) const;
  // One showback per step of the window (one when the query has no step), in time order; the
  // rows are read once whatever the number of steps.
  virtual Result<std::vector<Showback>> QueryShowbackSteps(const ShowbackQuery& query) const = 0;
  virtual Result<int64_t> CountRows() const = 0;
  // Whether an action of this ledger's cluster is recorded under `action_id`.
  virtual Result<bool> Contains(std::string_view action_id) const = 0;
  // Every row in append order, from the first whose sequence number is above `after_seq`, at
  // most `limit`: what `gpuvpa ledger copy` reads. Sets each row's cluster.
  struct Page {
    std::vector<LedgerAction> rows;
    int64_t last_seq = 0;  // of the last row returned (after_seq when none)
  };
  virtual Result<Page> ReadRows(int64_t after_seq, size_t limit) const = 0;
  // The latest recommendation of each workload of options().cluster whose time lies in
  // [from_s, to_s), where it is still proposed: what a summary lists as top changes.
  virtual Result<std::vector<LedgerAction>> LatestProposals(int64_t from_s, int64_t to_s) const = 0;

  // Deliveries (core/cost/delivery.h): recorded once per id in options().cluster. Returns
  // whether the record is new (false: an earlier run recorded it).
  virtual Result<bool> RecordDelivery(const DeliveryRecord& record) = 0;
  virtual Result<bool> HasDelivery(std::string_view delivery_id) const = 0;

  // Every cluster's totals, sorted by (cluster, cost center, kind).
  Result<std::vector<LedgerTotal>> Totals() const;
  // Every cluster's charge marks (the latest per series).
  Result<std::vector<ClusterChargeMark>> AllChargeMarks() const;
  // "ok", or what is broken: the backend's own consistency check (SQLite's integrity_check;
  // PostgreSQL's schema version), then the daily totals against the rows they sum.
  Result<std::string> IntegrityCheck() const;
  virtual int schema_version() const = 0;
  const LedgerOptions& options() const { return options_; }

 protected:
  explicit Ledger(LedgerOptions options) : options_(std::move(options)) {}
  // The backend's part of IntegrityCheck.
  virtual Result<std::string> StorageCheck() const = 0;
  // Runs a query without parameters and returns its rows as text (small results only).
  virtual Result<std::vector<std::vector<std::string>>> QueryText(const std::string& sql) const = 0;
  const LedgerOptions options_;
};

}  // namespace gpuvpa
