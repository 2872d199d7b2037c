// SQLite-backed ledger.
#include "core/cost/ledger.h"

#include <sqlite3.h>

#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/base/names.h"

namespace gpuvpa {
namespace {

constexpr std::array<std::string_view, 7> kKindNames = {
    "recommendation", "applied_change", "rollback",       "activation",
    "deactivation",   "metered_period", "allocated_usage"};
constexpr std::array<std::string_view, 4> kStatusNames = {"proposed", "applied", "rolled_back",
                                                          "failed"};

// Each entry moves the schema from version i to i + 1. Never edit one that has shipped: add.
constexpr std::array<const char*, 2> kMigrations = {
    R"sql(
CREATE TABLE actions (
  seq INTEGER PRIMARY KEY,
  action_id TEXT NOT NULL UNIQUE CHECK (action_id <> ''),
  time_s INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('recommendation', 'applied_change', 'rollback', 'activation',
                                     'deactivation', 'metered_period', 'allocated_usage')),
  status TEXT NOT NULL CHECK (status IN ('proposed', 'applied', 'rolled_back', 'failed')),
  namespace TEXT NOT NULL,
  workload TEXT NOT NULL,
  cost_center TEXT NOT NULL CHECK (cost_center <> ''),
  gpu_model TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL,
  monthly_before_micro_usd INTEGER NOT NULL,
  monthly_after_micro_usd INTEGER NOT NULL,
  period_start_s INTEGER NOT NULL,
  period_end_s INTEGER NOT NULL,
  allocated_milli_gpu_s INTEGER NOT NULL,
  allocated_micro_usd INTEGER NOT NULL,
  usage_measured INTEGER NOT NULL CHECK (usage_measured IN (0, 1)),
  used_vram_micro_usd INTEGER NOT NULL,
  used_sm_micro_usd INTEGER NOT NULL,
  metered_milli_gpu_s INTEGER NOT NULL,
  metered_micro_usd INTEGER NOT NULL,
  reserved_micro_usd INTEGER NOT NULL,
  evidence TEXT NOT NULL
);
CREATE INDEX actions_by_time ON actions (time_s);
CREATE INDEX actions_by_kind ON actions (kind, namespace, workload, time_s);
CREATE TRIGGER actions_append_only_update BEFORE UPDATE ON actions
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER actions_append_only_delete BEFORE DELETE ON actions
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
)sql",
    R"sql(
CREATE TABLE charge_marks (
  seq INTEGER PRIMARY KEY,
  series TEXT NOT NULL CHECK (series <> ''),
  charged_through_s REAL NOT NULL
);
CREATE INDEX charge_marks_by_series ON charge_marks (series, charged_through_s);
CREATE TRIGGER charge_marks_append_only_update BEFORE UPDATE ON charge_marks
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER charge_marks_append_only_delete BEFORE DELETE ON charge_marks
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
)sql",
};

// Owns a prepared statement.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return stmt_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t == nullptr ? "" : reinterpret_cast<const char*>(t);
}

// The columns a repeated id must match, in SELECT order (after action_id).
constexpr const char* kContentColumns =
    "kind, status, namespace, workload, cost_center, gpu_model, before, after, "
    "monthly_before_micro_usd, monthly_after_micro_usd, period_start_s, period_end_s, "
    "allocated_milli_gpu_s, allocated_micro_usd, usage_measured, used_vram_micro_usd, "
    "used_sm_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd";

// Refuses `a` when the row stored under its id (read by `stored`) differs in content.
Status SameContent(sqlite3_stmt* stored, const LedgerAction& a) {
  const std::pair<const char*, std::string> texts[] = {
      {"kind", std::string(ActionKindName(a.kind))},
      {"status", std::string(ActionStatusName(a.status))},
      {"namespace", a.namespace_name},
      {"workload", a.workload},
      {"cost_center", a.cost_center},
      {"gpu_model", a.gpu_model},
      {"before", a.before},
      {"after", a.after}};
  const std::pair<const char*, int64_t> numbers[] = {{"monthly_before", a.monthly_before},
                                                     {"monthly_after", a.monthly_after},
                                                     {"period_start_s", a.period_start_s},
                                                     {"period_end_s", a.period_end_s},
                                                     {"allocated_gpu_time", a.allocated_gpu_time},
                                                     {"allocated", a.allocated},
                                                     {"usage_measured", a.usage_measured ? 1 : 0},
                                                     {"used_vram", a.used_vram},
                                                     {"used_sm", a.used_sm},
                                                     {"metered_gpu_time", a.metered_gpu_time},
                                                     {"metered", a.metered},
                                                     {"reserved", a.reserved}};
  auto conflict = [&](const char* field, const std::string& was, const std::string& now) {
    return Status(StatusCode::kAlreadyExists,
                  "ledger action " + QuoteForError(a.action_id) + " is recorded with " + field +
                      " " + QuoteForError(was) + "; this one has " + QuoteForError(now) +
                      " (an id is never reused for other content)");
  };
  int column = 0;
  for (const auto& [field, value] : texts) {
    const std::string was = ColumnText(stored, column++);
    if (was != value) return conflict(field, was, value);
  }
  for (const auto& [field, value] : numbers) {
    const int64_t was = sqlite3_column_int64(stored, column++);
    if (was != value) return conflict(field, std::to_string(was), std::to_string(value));
  }
  return OkStatus();
}

const char* GroupColumn(ShowbackGroup g) {
  return g == ShowbackGroup::kGpuModel ? "gpu_model" : "cost_center";
}

}  // namespace

Status ValidateLedgerAction(const LedgerAction& a) {
  if (a.action_id.empty()) return InvalidArgumentError("ledger action: action_id is empty");
  const std::string who = "ledger action " + QuoteForError(a.action_id);
  const std::tuple<const char*, const std::string*, size_t, bool> texts[] = {
      {"action_id", &a.action_id, kMaxLedgerIdBytes, true},
      {"namespace", &a.namespace_name, kMaxLedgerTextBytes, true},
      {"workload", &a.workload, kMaxLedgerTextBytes, true},
      {"cost_center", &a.cost_center, kMaxLedgerTextBytes, true},
      {"gpu_model", &a.gpu_model, kMaxLedgerTextBytes, false},
      {"before", &a.before, kMaxLedgerTextBytes, false},
      {"after", &a.after, kMaxLedgerTextBytes, false}};
  for (const auto& [field, value, max_bytes, required] : texts) {
    if (required && value->empty())
      return InvalidArgumentError(
          who + ": " + field + " is empty" +
          (std::string_view(field) == "cost_center" ? " (use \"unallocated\")" : ""));
    if (value->size() > max_bytes)
      return InvalidArgumentError(who + ": " + field + " is " + std::to_string(value->size()) +
                                  " bytes, more than " + std::to_string(max_bytes));
    if (!IsDisplayableText(*value))
      return InvalidArgumentError(who + ": " + field + " " + QuoteForError(*value) +
                                  " is not UTF-8 text without control characters");
  }
  if (a.evidence_json.size() > kMaxLedgerEvidenceBytes)
    return InvalidArgumentError(who + ": evidence is " + std::to_string(a.evidence_json.size()) +
                                " bytes, more than " + std::to_string(kMaxLedgerEvidenceBytes));
  if (!IsValidUtf8(a.evidence_json)) return InvalidArgumentError(who + ": evidence is not UTF-8");
  // No money or GPU time in the ledger is negative or beyond what sums can hold, and no period
  // runs backwards: a value that is would be a bug upstream or a hostile writer, and showback
  // must never print it.
  const std::tuple<const char*, int64_t, int64_t> amounts[] = {
      {"time_s", a.time_s, kMaxLedgerTimeS},
      {"monthly_before", a.monthly_before, kMaxLedgerMicroUsd},
      {"monthly_after", a.monthly_after, kMaxLedgerMicroUsd},
      {"period_start_s", a.period_start_s, kMaxLedgerTimeS},
      {"period_end_s", a.period_end_s, kMaxLedgerTimeS},
      {"allocated_gpu_time", a.allocated_gpu_time, kMaxLedgerMilliGpuSeconds},
      {"allocated", a.allocated, kMaxLedgerMicroUsd},
      {"used_vram", a.used_vram, kMaxLedgerMicroUsd},
      {"used_sm", a.used_sm, kMaxLedgerMicroUsd},
      {"metered_gpu_time", a.metered_gpu_time, kMaxLedgerMilliGpuSeconds},
      {"metered", a.metered, kMaxLedgerMicroUsd},
      {"reserved", a.reserved, kMaxLedgerMicroUsd}};
  for (const auto& [field, value, max] : amounts) {
    if (value < 0)
      return InvalidArgumentError(who + ": " + field + " " + std::to_string(value) +
                                  " is negative");
    if (value > max)
      return InvalidArgumentError(who + ": " + field + " " + std::to_string(value) +
                                  " is above its bound " + std::to_string(max));
  }
  if (a.period_end_s < a.period_start_s)
    return InvalidArgumentError(who + ": period ends (" + std::to_string(a.period_end_s) +
                                ") before it starts (" + std::to_string(a.period_start_s) + ")");
  return OkStatus();
}

std::string_view ActionKindName(ActionKind kind) { return kKindNames[static_cast<size_t>(kind)]; }
std::string_view ActionStatusName(ActionStatus status) {
  return kStatusNames[static_cast<size_t>(status)];
}

Result<ActionKind> ParseActionKind(std::string_view text) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == text) return static_cast<ActionKind>(i);
  return InvalidArgumentError("unknown ledger action kind \"" + std::string(text) + "\"");
}

Result<ActionStatus> ParseActionStatus(std::string_view text) {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == text) return static_cast<ActionStatus>(i);
  return InvalidArgumentError("unknown ledger action status \"" + std::string(text) + "\"");
}

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<Ledger> ledger(new Ledger(db, path));
  if (rc != SQLITE_OK) return ledger->Error("open");
  sqlite3_busy_timeout(db, 5000);
  // WAL + FULL: a committed transaction survives a crash or power loss.
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    if (Status s = ledger->Exec(pragma); !s.ok()) return s;
  }
  if (Status s = ledger->Migrate(); !s.ok()) return s;
  return ledger;
}

Ledger::~Ledger() { sqlite3_close_v2(db_); }

Status Ledger::Error(const std::string& what) const {
  return InternalError("ledger " + path_ + ": " + what + ": " +
                       (db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

Status Ledger::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return InternalError("ledger " + path_ + ": " + msg);
  }
  return OkStatus();
}

Status Ledger::Migrate() {
  Statement version(db_, "PRAGMA user_version");
  if (!version.ok() || sqlite3_step(version.get()) != SQLITE_ROW)
    return Error("read schema version");
  schema_version_ = sqlite3_column_int(version.get(), 0);
  if (schema_version_ > kSchemaVersion)
    return FailedPreconditionError("ledger " + path_ + " has schema version " +
                                   std::to_string(schema_version_) + ", newer than this build's " +
                                   std::to_string(kSchemaVersion));
  while (schema_version_ < kSchemaVersion) {
    // Each step and its version bump commit together.
    if (Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    const std::string bump = "PRAGMA user_version=" + std::to_string(schema_version_ + 1);
    Status s = Exec(kMigrations[static_cast<size_t>(schema_version_)]);
    if (s.ok()) s = Exec(bump.c_str());
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok()) {
      (void)Exec("ROLLBACK");
      return {s.code(), "migrating to schema version " + std::to_string(schema_version_ + 1) +
                            ": " + s.message()};
    }
    ++schema_version_;
  }
  return OkStatus();
}

Result<size_t> Ledger::Append(std::span<const LedgerAction> actions,
                              std::span<const ChargeMark> marks) {
  for (const LedgerAction& a : actions) {
    if (Status s = ValidateLedgerAction(a); !s.ok()) return s;
  }
  for (const ChargeMark& m : marks)
    if (m.series.empty() || !std::isfinite(m.charged_through_s))
      return InvalidArgumentError("ledger charge mark \"" + m.series + "\" is invalid");
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Statement insert(
      db_,
      "INSERT INTO actions (action_id, time_s, kind, status, namespace, workload, cost_center, "
      "gpu_model, before, after, monthly_before_micro_usd, monthly_after_micro_usd, "
      "period_start_s, "
      "period_end_s, allocated_milli_gpu_s, allocated_micro_usd, used_vram_micro_usd, "
      "used_sm_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, evidence, "
      "usage_measured) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, "
      "?20, ?21, ?22, ?23) ON CONFLICT (action_id) DO NOTHING");
  Statement stored(
      db_,
      (std::string("SELECT ") + kContentColumns + " FROM actions WHERE action_id = ?1").c_str());
  if (!insert.ok() || !stored.ok()) {
    Status s = Error("prepare insert");
    (void)Exec("ROLLBACK");
    return s;
  }
  size_t inserted = 0;
  for (const LedgerAction& a : actions) {
    insert.Bind(1, a.action_id);
    insert.Bind(2, a.time_s);
    insert.Bind(3, ActionKindName(a.kind));
    insert.Bind(4, ActionStatusName(a.status));
    insert.Bind(5, a.namespace_name);
    insert.Bind(6, a.workload);
    insert.Bind(7, a.cost_center);
    insert.Bind(8, a.gpu_model);
    insert.Bind(9, a.before);
    insert.Bind(10, a.after);
    insert.Bind(11, a.monthly_before);
    insert.Bind(12, a.monthly_after);
    insert.Bind(13, a.period_start_s);
    insert.Bind(14, a.period_end_s);
    insert.Bind(15, a.allocated_gpu_time);
    insert.Bind(16, a.allocated);
    insert.Bind(17, a.used_vram);
    insert.Bind(18, a.used_sm);
    insert.Bind(19, a.metered_gpu_time);
    insert.Bind(20, a.metered);
    insert.Bind(21, a.reserved);
    insert.Bind(22, a.evidence_json);
    insert.Bind(23, int64_t{a.usage_measured ? 1 : 0});
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      Status s = Error("append action \"" + a.action_id + "\"");
      (void)Exec("ROLLBACK");
      return s;
    }
    const int changes = sqlite3_changes(db_);
    inserted += static_cast<size_t>(changes);
    sqlite3_reset(insert.get());
    if (changes == 0) {  // the id is recorded: the same row, or a conflict
      stored.Bind(1, a.action_id);
      Status same = sqlite3_step(stored.get()) == SQLITE_ROW
                        ? SameContent(stored.get(), a)
                        : Error("read action \"" + a.action_id + "\"");
      sqlite3_reset(stored.get());
      if (!same.ok()) {
        (void)Exec("ROLLBACK");
        return same;
      }
    }
  }
  if (!marks.empty()) {
    Statement mark(db_, "INSERT INTO charge_marks (series, charged_through_s) VALUES (?1, ?2)");
    if (!mark.ok()) {
      Status s = Error("prepare charge mark insert");
      (void)Exec("ROLLBACK");
      return s;
    }
    for (const ChargeMark& m : marks) {
      mark.Bind(1, m.series);
      sqlite3_bind_double(mark.get(), 2, m.charged_through_s);
      if (sqlite3_step(mark.get()) != SQLITE_DONE) {
        Status s = Error("append charge mark \"" + m.series + "\"");
        (void)Exec("ROLLBACK");
        return s;
      }
      sqlite3_reset(mark.get());
    }
  }
  if (Status s = Exec("COMMIT"); !s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  return inserted;
}

Result<std::unordered_map<std::string, double>> Ledger::ChargeMarks() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT series, MAX(charged_through_s) FROM charge_marks GROUP BY series");
  if (!s.ok()) return Error("prepare charge marks");
  std::unordered_map<std::string, double> marks;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
    marks[ColumnText(s.get(), 0)] = sqlite3_column_double(s.get(), 1);
  if (rc != SQLITE_DONE) return Error("read charge marks");
  return marks;
}

namespace {

// amount x part / whole, rounded to nearest, without overflow (part <= whole).
int64_t Prorate(int64_t amount, int64_t part, int64_t whole) {
  if (part >= whole) return amount;
  const __int128 scaled = static_cast<__int128>(amount) * part;
  return static_cast<int64_t>((scaled + whole / 2) / whole);
}

// Adds `add` (a row, or a group for the total) to `to`; an overflow names `what`.
Status AddRow(ShowbackRow& to, const ShowbackRow& add, const std::string& what) {
  const std::pair<int64_t*, int64_t> sums[] = {
      {&to.allocated_gpu_time, add.allocated_gpu_time},
      {&to.allocated, add.allocated},
      {&to.used_vram, add.used_vram},
      {&to.used_sm, add.used_sm},
      {&to.idle_tax_vram, add.idle_tax_vram},
      {&to.idle_tax_sm, add.idle_tax_sm},
      {&to.savings_realised_monthly, add.savings_realised_monthly},
      {&to.savings_proposed_monthly, add.savings_proposed_monthly},
      {&to.metered_gpu_time, add.metered_gpu_time},
      {&to.metered, add.metered},
      {&to.reserved, add.reserved},
      {&to.billed, add.billed},
      {&to.billed_metered, add.billed_metered},
      {&to.allocated_unbilled, add.allocated_unbilled}};
  for (const auto& [sum, value] : sums)
    GPUVPA_RETURN_IF_ERROR(CheckedAdd(*sum, value, "showback " + to.group + ", adding " + what));
  return OkStatus();
}

}  // namespace

Result<Showback> Ledger::QueryShowback(const ShowbackQuery& query) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t from = query.from_s.value_or(INT64_MIN);
  const int64_t to = query.to_s.value_or(INT64_MAX);
  if (from >= to)
    return InvalidArgumentError("showback window is empty: from " + std::to_string(from) +
                                " is not before to " + std::to_string(to));
  const std::string group = GroupColumn(query.group_by);
  // One pass over the rows, summed here: SQLite would sort a million rows for GROUP BY. A row
  // is in the window when its period overlaps it, or (an instant) when its time is inside.
  const std::string scan_sql =
      "SELECT " + group +
      ", kind, status, usage_measured, allocated_milli_gpu_s, allocated_micro_usd, "
      "used_vram_micro_usd, used_sm_micro_usd, monthly_before_micro_usd, "
      "monthly_after_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, "
      "period_start_s, period_end_s, action_id, namespace, workload "
      "FROM actions WHERE (period_end_s > period_start_s AND period_end_s > ?1 AND "
      "period_start_s < ?2) OR (period_end_s <= period_start_s AND time_s >= ?1 AND time_s < ?2)";
  // Savings still proposed: the latest recommendation of each workload, if still proposed.
  // Summed here, with checks, like the scan.
  const std::string proposed_sql =
      "SELECT " + group +
      ", monthly_before_micro_usd, monthly_after_micro_usd, action_id FROM (SELECT " + group +
      ", status, monthly_before_micro_usd, monthly_after_micro_usd, action_id, ROW_NUMBER() "
      "OVER (PARTITION BY namespace, workload ORDER BY time_s DESC, seq DESC) AS latest "
      "FROM actions WHERE kind = 'recommendation' AND time_s >= ?1 AND time_s < ?2) "
      "WHERE latest = 1 AND status = 'proposed'";

  auto run = [&](const std::string& sql, auto&& on_row) -> Status {
    Statement s(db_, sql.c_str());
    if (!s.ok()) return Error("prepare showback");
    s.Bind(1, from);
    s.Bind(2, to);
    int rc;
    Status row_status;
    while (row_status.ok() && (rc = sqlite3_step(s.get())) == SQLITE_ROW)
      row_status = on_row(s.get());
    if (!row_status.ok()) return row_status;
    return rc == SQLITE_DONE ? OkStatus() : Error("showback query");
  };
  // Workloads metered in the window: billed by their metering, not by their allocation.
  const std::string metered_sql =
      "SELECT DISTINCT namespace, workload FROM actions WHERE kind = '" +
      std::string(ActionKindName(ActionKind::kMeteredPeriod)) +
      "' AND ((period_end_s > period_start_s AND period_end_s > ?1 AND period_start_s < ?2) OR "
      "(period_end_s <= period_start_s AND time_s >= ?1 AND time_s < ?2))";
  std::set<std::pair<std::string, std::string>> metered_workloads;
  std::map<std::string, ShowbackRow, std::less<>> groups;
  auto column_view = [](sqlite3_stmt* st, int i) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
    return std::string_view(text == nullptr ? "" : text,
                            static_cast<size_t>(sqlite3_column_bytes(st, i)));
  };
  Status s = run(metered_sql, [&](sqlite3_stmt* st) -> Status {
    metered_workloads.insert({std::string(column_view(st, 0)), std::string(column_view(st, 1))});
    return OkStatus();
  });
  if (s.ok())
    s = run(scan_sql, [&](sqlite3_stmt* st) -> Status {
      const std::string_view key = column_view(st, 0);
      auto it = groups.find(key);
      if (it == groups.end())
        it = groups.emplace(std::string(key), ShowbackRow{std::string(key)}).first;
      // The share of the row's period inside the window.
      const int64_t start = sqlite3_column_int64(st, 13);
      const int64_t end = sqlite3_column_int64(st, 14);
      const int64_t whole = end > start ? end - start : 1;
      const int64_t part = end > start ? std::min(end, to) - std::max(start, from) : 1;
      auto prorated = [&](int column) {
        return Prorate(sqlite3_column_int64(st, column), part, whole);
      };
      ShowbackRow r{std::string(key)};
      const std::string_view kind = column_view(st, 1);
      const bool applied = column_view(st, 2) == ActionStatusName(ActionStatus::kApplied);
      const bool measured = sqlite3_column_int64(st, 3) != 0;
      r.allocated_gpu_time = prorated(4);
      r.allocated = prorated(5);
      r.used_vram = prorated(6);
      r.used_sm = prorated(7);
      if (measured) {
        r.idle_tax_vram = r.allocated - r.used_vram;
        r.idle_tax_sm = r.allocated - r.used_sm;
      }
      if (applied && (kind == ActionKindName(ActionKind::kAppliedChange) ||
                      kind == ActionKindName(ActionKind::kRollback)))
        r.savings_realised_monthly = sqlite3_column_int64(st, 8) - sqlite3_column_int64(st, 9);
      r.metered_gpu_time = prorated(10);
      r.metered = prorated(11);
      r.reserved = prorated(12);
      const bool metered_workload = metered_workloads.count(
          {std::string(column_view(st, 16)), std::string(column_view(st, 17))});
      r.billed_metered = r.metered;
      r.allocated_unbilled = metered_workload ? r.allocated : 0;
      r.billed = r.metered + (metered_workload ? 0 : r.allocated);
      if (measured)
        it->second.usage_measured = true;
      else
        it->second.usage_unmeasured = true;
      return AddRow(it->second, r, "row " + QuoteForError(column_view(st, 15)));
    });
  if (s.ok())
    s = run(proposed_sql, [&](sqlite3_stmt* st) -> Status {
      // A workload's latest recommendation lies in the window, so its group was scanned above.
      auto it = groups.find(column_view(st, 0));
      if (it == groups.end()) return OkStatus();
      // Each amount is within [0, kMaxLedgerMicroUsd]: the difference cannot overflow.
      const int64_t saving = sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 2);
      return CheckedAdd(
          it->second.savings_proposed_monthly, saving,
          "showback " + it->second.group + ", adding row " + QuoteForError(column_view(st, 3)));
    });
  if (!s.ok()) return s;
  Showback out;
  out.from_s = query.from_s;
  out.to_s = query.to_s;
  for (auto& [key, row] : groups) out.groups.push_back(std::move(row));
  // Integer sums: the total of the groups is exact, and every row belongs to exactly one group
  // (the grouping columns are NOT NULL).
  out.total.group = "TOTAL";
  for (const ShowbackRow& r : out.groups) {
    GPUVPA_RETURN_IF_ERROR(AddRow(out.total, r, "group " + QuoteForError(r.group)));
    out.total.usage_measured |= r.usage_measured;
    out.total.usage_unmeasured |= r.usage_unmeasured;
  }
  return out;
}

Result<int64_t> Ledger::CountRows() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT COUNT(*) FROM actions");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return Error("count rows");
  return sqlite3_column_int64(s.get(), 0);
}

Result<bool> Ledger::Contains(std::string_view action_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT 1 FROM actions WHERE action_id = ?1");
  if (!s.ok()) return Error("prepare lookup");
  s.Bind(1, action_id);
  const int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("lookup");
  return rc == SQLITE_ROW;
}

Result<std::string> Ledger::IntegrityCheck() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "PRAGMA integrity_check");
  if (!s.ok()) return Error("prepare integrity_check");
  std::string out;
  while (sqlite3_step(s.get()) == SQLITE_ROW)
    out += (out.empty() ? "" : "; ") + ColumnText(s.get(), 0);
  return out;
}

}  // namespace gpuvpa
