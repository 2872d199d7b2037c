// The SQLite backend of the ledger: one file, WAL mode, synchronous=FULL.
#include <sqlite3.h>

#include <array>
#include <charconv>
#include <mutex>

#include "core/base/names.h"
#include "core/cost/ledger_sql.h"

namespace gpuvpa::ledger_sql {
namespace {

// Each entry moves the schema from version i to i + 1. Never edit one that has shipped: add.
constexpr std::array<const char*, 5> kMigrations = {
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
    // 3: clusters. Ids become unique per cluster, which SQLite can only do by rebuilding the
    // table (DROP TABLE fires no trigger); the rows keep their sequence numbers.
    R"sql(
CREATE TABLE actions_v3 (
  seq INTEGER PRIMARY KEY,
  cluster TEXT NOT NULL CHECK (cluster <> ''),
  action_id TEXT NOT NULL CHECK (action_id <> ''),
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
  evidence TEXT NOT NULL,
  UNIQUE (cluster, action_id)
);
INSERT INTO actions_v3 SELECT seq, '{{cluster}}', action_id, time_s, kind, status, namespace,
  workload, cost_center, gpu_model, before, after, monthly_before_micro_usd,
  monthly_after_micro_usd, period_start_s, period_end_s, allocated_milli_gpu_s,
  allocated_micro_usd, usage_measured, used_vram_micro_usd, used_sm_micro_usd,
  metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, evidence FROM actions;
DROP TABLE actions;
ALTER TABLE actions_v3 RENAME TO actions;
CREATE INDEX actions_by_time ON actions (time_s);
CREATE INDEX actions_by_kind ON actions (kind, cluster, namespace, workload, time_s);
CREATE TRIGGER actions_append_only_update BEFORE UPDATE ON actions
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER actions_append_only_delete BEFORE DELETE ON actions
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
ALTER TABLE charge_marks ADD COLUMN cluster TEXT NOT NULL DEFAULT '{{cluster}}';
CREATE INDEX charge_marks_by_cluster ON charge_marks (cluster, series, charged_through_s);
)sql",
    // 4: deliveries (the scheduled summaries sent to owners), one per (cluster, id).
    R"sql(
CREATE TABLE deliveries (
  seq INTEGER PRIMARY KEY,
  cluster TEXT NOT NULL CHECK (cluster <> ''),
  delivery_id TEXT NOT NULL CHECK (delivery_id <> ''),
  time_s INTEGER NOT NULL,
  target TEXT NOT NULL,
  cost_center TEXT NOT NULL,
  period_start_s INTEGER NOT NULL,
  period_end_s INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'refused')),
  http_status INTEGER NOT NULL,
  UNIQUE (cluster, delivery_id)
);
CREATE TRIGGER deliveries_append_only_update BEFORE UPDATE ON deliveries
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER deliveries_append_only_delete BEFORE DELETE ON deliveries
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
)sql",
    // 5: daily totals (ledger_sql.h, kDayS), filled from the rows there and kept by a trigger on
    // every insert. STRICT: a sum past 2^63 - 1 (which SQLite would turn into a REAL) is refused,
    // and with it the insert.
    R"sql(
CREATE TABLE ledger_daily (
  day INTEGER NOT NULL,
  cluster TEXT NOT NULL,
  namespace TEXT NOT NULL,
  workload TEXT NOT NULL,
  cost_center TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  before TEXT NOT NULL,
  row_count INTEGER NOT NULL,
  measured_rows INTEGER NOT NULL,
  metered_periods INTEGER NOT NULL,
  allocated_milli_gpu_s INTEGER NOT NULL,
  allocated_micro_usd INTEGER NOT NULL,
  used_vram_micro_usd INTEGER NOT NULL,
  used_sm_micro_usd INTEGER NOT NULL,
  measured_allocated_micro_usd INTEGER NOT NULL,
  measured_used_vram_micro_usd INTEGER NOT NULL,
  measured_used_sm_micro_usd INTEGER NOT NULL,
  realised_before_micro_usd INTEGER NOT NULL,
  realised_after_micro_usd INTEGER NOT NULL,
  metered_milli_gpu_s INTEGER NOT NULL,
  metered_micro_usd INTEGER NOT NULL,
  reserved_micro_usd INTEGER NOT NULL,
  PRIMARY KEY (day, cluster, namespace, workload, cost_center, gpu_model, before)
) STRICT, WITHOUT ROWID;
INSERT INTO ledger_daily {{daily totals of actions}};
CREATE TRIGGER actions_daily AFTER INSERT ON actions
  WHEN NEW.period_end_s <= NEW.period_start_s
    OR NEW.period_start_s / 86400 = (NEW.period_end_s - 1) / 86400
  BEGIN
    INSERT INTO ledger_daily VALUES (
      CASE WHEN NEW.period_end_s > NEW.period_start_s THEN NEW.period_start_s ELSE NEW.time_s END
        / 86400,
      NEW.cluster, NEW.namespace, NEW.workload, NEW.cost_center, NEW.gpu_model, NEW.before, 1,
      NEW.usage_measured, NEW.kind = 'metered_period', NEW.allocated_milli_gpu_s,
      NEW.allocated_micro_usd, NEW.used_vram_micro_usd, NEW.used_sm_micro_usd,
      NEW.usage_measured * NEW.allocated_micro_usd, NEW.usage_measured * NEW.used_vram_micro_usd,
      NEW.usage_measured * NEW.used_sm_micro_usd,
      CASE WHEN NEW.status = 'applied' AND NEW.kind IN ('applied_change', 'rollback')
        THEN NEW.monthly_before_micro_usd ELSE 0 END,
      CASE WHEN NEW.status = 'applied' AND NEW.kind IN ('applied_change', 'rollback')
        THEN NEW.monthly_after_micro_usd ELSE 0 END,
      NEW.metered_milli_gpu_s, NEW.metered_micro_usd, NEW.reserved_micro_usd)
    {{add to daily totals}};
  END;
CREATE INDEX actions_by_period_start ON actions (period_start_s);
CREATE INDEX actions_across_days ON actions (period_end_s)
  WHERE period_end_s > period_start_s AND period_start_s / 86400 <> (period_end_s - 1) / 86400;
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
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& v) { Bind(i, std::string_view(v)); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // Without a copy: `v` must stay valid until the statement is finalized or `i` is bound again
  // (an append's rows outlive its statements).
  void BindStatic(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindStatic(int i, int64_t v) { Bind(i, v); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

std::string_view ColumnView(sqlite3_stmt* s, int i) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return std::string_view(text == nullptr ? "" : text,
                          static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

// The row at the statement's cursor, its kRowColumns from column `first`.
Result<LedgerAction> ActionAt(sqlite3_stmt* s, int first) {
  return ReadRow(
      first, [&](int i) { return std::string(ColumnView(s, i)); },
      [&](int i) { return sqlite3_column_int64(s, i); });
}

class SqliteLedger final : public Ledger {
 public:
  SqliteLedger(sqlite3* db, std::string path, const LedgerOptions& options)
      : Ledger(options), db_(db), path_(std::move(path)) {}
  ~SqliteLedger() override { sqlite3_close_v2(db_); }
  SqliteLedger(const SqliteLedger&) = delete;
  SqliteLedger& operator=(const SqliteLedger&) = delete;

  Status Init();
  Result<size_t> Append(std::span<const LedgerAction> actions,
                        std::span<const ChargeMark> marks) override;
  Result<std::unordered_map<std::string, double>> ChargeMarks() const override;
  Result<std::vector<Showback>> QueryShowbackSteps(const ShowbackQuery& query) const override;
  Result<int64_t> CountRows() const override;
  Result<bool> Contains(std::string_view action_id) const override;
  Result<Page> ReadRows(int64_t after_seq, size_t limit) const override;
  Result<std::vector<LedgerAction>> LatestProposals(int64_t from_s, int64_t to_s) const override;
  Result<bool> RecordDelivery(const DeliveryRecord& record) override;
  Result<bool> HasDelivery(std::string_view delivery_id) const override;
  int schema_version() const override { return schema_version_; }

 protected:
  Result<std::string> StorageCheck() const override;
  Result<std::vector<std::vector<std::string>>> QueryText(const std::string& sql) const override;

 private:
  Status Exec(const std::string& sql) const;
  // Whether `sql` ($1 this ledger's cluster, $2 `id`) finds a row.
  Result<bool> Exists(const char* sql, std::string_view id, const std::string& what) const;
  Status Migrate();
  Status Error(const std::string& what) const;
  Status Rollback(Status s) const {
    (void)Exec("ROLLBACK");
    return s;
  }

  sqlite3* db_;
  std::string path_;
  mutable std::mutex mu_;  // one statement sequence (transaction) at a time
  int schema_version_ = 0;
};

Status SqliteLedger::Init() {
  sqlite3_busy_timeout(db_, 5000);
  if (options().read_only) {
    Statement version(db_, "PRAGMA user_version");
    if (!version.ok() || sqlite3_step(version.get()) != SQLITE_ROW)
      return Error("read schema version");
    schema_version_ = sqlite3_column_int(version.get(), 0);
    if (schema_version_ != kSchemaVersion)
      return FailedPreconditionError(
          "ledger " + path_ + " has schema version " + std::to_string(schema_version_) +
          ", not this build's " + std::to_string(kSchemaVersion) +
          ": read-only, it is not migrated (gpuvpa ledger migrate, or any writer, migrates it)");
    return OkStatus();
  }
  // WAL + FULL: a committed transaction survives a crash or power loss. temp_store=MEMORY keeps
  // the statement journals (the undo of one INSERT ... ON CONFLICT with its daily-totals
  // trigger, inside the batch's transaction) in memory: on disk they were 14 small pwrites per
  // row, most of an append's time (100,000 usage rows: 7 s). Committed data is the WAL's.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                             "PRAGMA foreign_keys=ON", "PRAGMA temp_store=MEMORY"})
    GPUVPA_RETURN_IF_ERROR(Exec(pragma));
  return Migrate();
}

Status SqliteLedger::Error(const std::string& what) const {
  return InternalError("ledger " + path_ + ": " + what + ": " +
                       (db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

Status SqliteLedger::Exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return InternalError("ledger " + path_ + ": " + msg);
  }
  return OkStatus();
}

Status SqliteLedger::Migrate() {
  {  // finalized before any step: SQLite drops no table under an open statement
    Statement version(db_, "PRAGMA user_version");
    if (!version.ok() || sqlite3_step(version.get()) != SQLITE_ROW)
      return Error("read schema version");
    schema_version_ = sqlite3_column_int(version.get(), 0);
  }
  if (schema_version_ > kSchemaVersion)
    return FailedPreconditionError("ledger " + path_ + " has schema version " +
                                   std::to_string(schema_version_) + ", newer than this build's " +
                                   std::to_string(kSchemaVersion));
  while (schema_version_ < kSchemaVersion) {
    // Each step and its version bump commit together.
    GPUVPA_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    const std::string bump = "PRAGMA user_version=" + std::to_string(schema_version_ + 1);
    Status s =
        Exec(MigrationText(kMigrations[static_cast<size_t>(schema_version_)], options().cluster));
    if (s.ok()) s = Exec(bump);
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok())
      return Rollback({s.code(), "migrating to schema version " +
                                     std::to_string(schema_version_ + 1) + ": " + s.message()});
    ++schema_version_;
  }
  return OkStatus();
}

Result<size_t> SqliteLedger::Append(std::span<const LedgerAction> actions,
                                    std::span<const ChargeMark> marks) {
  for (const LedgerAction& a : actions) GPUVPA_RETURN_IF_ERROR(ValidateLedgerAction(a));
  for (const ChargeMark& m : marks) GPUVPA_RETURN_IF_ERROR(ValidateMark(m));
  if (options().read_only) return ReadOnlyLedgerError(path_);
  std::lock_guard<std::mutex> lock(mu_);
  GPUVPA_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Statement insert(db_, (InsertSql() + " ON CONFLICT (cluster, action_id) DO NOTHING").c_str());
  Statement stored(db_, (std::string("SELECT ") + kContentColumns +
                         " FROM actions WHERE cluster = $1 AND action_id = $2")
                            .c_str());
  if (!insert.ok() || !stored.ok()) return Rollback(Error("prepare insert"));
  size_t inserted = 0;
  for (const LedgerAction& a : actions) {
    const std::string_view cluster = a.cluster.empty() ? options().cluster : a.cluster;
    BindRow(a, cluster, [&](int i, auto v) { insert.BindStatic(i, v); });
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      const std::string what = "append action " + QuoteForError(a.action_id);
      // STRICT ledger_daily refuses the REAL a sum past 2^63 - 1 became.
      if (sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_DATATYPE)
        return Rollback(DailyTotalOverflow("ledger " + path_ + ": " + what));
      return Rollback(Error(what));
    }
    const int changes = sqlite3_changes(db_);
    inserted += static_cast<size_t>(changes);
    sqlite3_reset(insert.get());
    if (changes == 0) {  // the id is recorded: the same row, or a conflict
      stored.Bind(1, cluster);
      stored.Bind(2, std::string_view(a.action_id));
      Status same = Error("read action " + QuoteForError(a.action_id));
      if (sqlite3_step(stored.get()) == SQLITE_ROW) {
        std::vector<std::string> was;
        for (int i = 0; i < sqlite3_column_count(stored.get()); ++i)
          was.emplace_back(ColumnView(stored.get(), i));
        same = ContentConflict(a, was);
      }
      sqlite3_reset(stored.get());
      if (!same.ok()) return Rollback(same);
    }
  }
  if (!marks.empty()) {
    Statement mark(db_,
                   "INSERT INTO charge_marks (cluster, series, charged_through_s) VALUES ($1, $2, "
                   "$3)");
    if (!mark.ok()) return Rollback(Error("prepare charge mark insert"));
    for (const ChargeMark& m : marks) {
      mark.Bind(1, std::string_view(options().cluster));
      mark.Bind(2, std::string_view(m.series));
      mark.Bind(3, m.charged_through_s);
      if (sqlite3_step(mark.get()) != SQLITE_DONE)
        return Rollback(Error("append charge mark " + QuoteForError(m.series)));
      sqlite3_reset(mark.get());
    }
  }
  if (Status s = Exec("COMMIT"); !s.ok()) return Rollback(s);
  return inserted;
}

Result<std::unordered_map<std::string, double>> SqliteLedger::ChargeMarks() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT series, MAX(charged_through_s) FROM charge_marks WHERE cluster = $1 GROUP "
              "BY series");
  if (!s.ok()) return Error("prepare charge marks");
  s.Bind(1, std::string_view(options().cluster));
  std::unordered_map<std::string, double> marks;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
    marks[std::string(ColumnView(s.get(), 0))] = sqlite3_column_double(s.get(), 1);
  if (rc != SQLITE_DONE) return Error("read charge marks");
  return marks;
}

Result<std::vector<Showback>> SqliteLedger::QueryShowbackSteps(const ShowbackQuery& query) const {
  Result<ShowbackBuilder> builder = ShowbackBuilder::Start(query);
  if (!builder.ok()) return builder.status();
  ShowbackBuilder& b = *builder;
  std::lock_guard<std::mutex> lock(mu_);
  for (const ShowbackPlan::Query& q : b.Plan().queries) {
    Statement s(db_, q.sql.c_str());
    if (!s.ok()) return Error("prepare showback");
    for (size_t i = 0; i < q.params.size(); ++i)
      std::visit([&](const auto& v) { s.Bind(static_cast<int>(i + 1), v); }, q.params[i]);
    int rc = SQLITE_ROW;
    Status row_status;
    while (row_status.ok() && (rc = sqlite3_step(s.get())) == SQLITE_ROW)
      row_status = b.Add(
          q.rows, [&](int i) { return ColumnView(s.get(), i); },
          [&](int i) { return sqlite3_column_int64(s.get(), i); });
    if (!row_status.ok()) return row_status;
    if (rc != SQLITE_DONE) return Error("showback query");
  }
  return std::move(b).Finish();
}

Result<int64_t> SqliteLedger::CountRows() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT COUNT(*) FROM actions");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return Error("count rows");
  return sqlite3_column_int64(s.get(), 0);
}

Result<bool> SqliteLedger::Contains(std::string_view action_id) const {
  return Exists("SELECT 1 FROM actions WHERE cluster = $1 AND action_id = $2", action_id, "lookup");
}

Result<bool> SqliteLedger::Exists(const char* sql, std::string_view id,
                                  const std::string& what) const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, sql);
  if (!s.ok()) return Error("prepare " + what);
  s.Bind(1, std::string_view(options().cluster));
  s.Bind(2, id);
  const int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(what);
  return rc == SQLITE_ROW;
}

Result<Ledger::Page> SqliteLedger::ReadRows(int64_t after_seq, size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, (std::string("SELECT seq, ") + kRowColumns +
                    " FROM actions WHERE seq > $1 ORDER BY seq LIMIT $2")
                       .c_str());
  if (!s.ok()) return Error("prepare read rows");
  s.Bind(1, after_seq);
  s.Bind(2, static_cast<int64_t>(limit));
  Page page;
  page.last_seq = after_seq;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    Result<LedgerAction> row = ActionAt(s.get(), 1);
    if (!row.ok())
      return DataLossError("ledger " + path_ + ": row " +
                           std::to_string(sqlite3_column_int64(s.get(), 0)) + ": " +
                           row.status().message());
    page.rows.push_back(std::move(row).value());
    page.last_seq = sqlite3_column_int64(s.get(), 0);
  }
  if (rc != SQLITE_DONE) return Error("read rows");
  return page;
}

Result<std::vector<LedgerAction>> SqliteLedger::LatestProposals(int64_t from_s,
                                                                int64_t to_s) const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, LatestProposalsSql().c_str());
  if (!s.ok()) return Error("prepare latest proposals");
  s.Bind(1, std::string_view(options().cluster));
  s.Bind(2, from_s);
  s.Bind(3, to_s);
  std::vector<LedgerAction> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    Result<LedgerAction> row = ActionAt(s.get(), 0);
    if (!row.ok()) return DataLossError("ledger " + path_ + ": " + row.status().message());
    out.push_back(std::move(row).value());
  }
  if (rc != SQLITE_DONE) return Error("latest proposals");
  return out;
}

Result<bool> SqliteLedger::RecordDelivery(const DeliveryRecord& d) {
  GPUVPA_RETURN_IF_ERROR(ValidateDelivery(d));
  if (options().read_only) return ReadOnlyLedgerError(path_);
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, kInsertDeliverySql);
  if (!s.ok()) return Error("prepare delivery");
  s.Bind(1, std::string_view(options().cluster));
  s.Bind(2, std::string_view(d.delivery_id));
  s.Bind(3, d.time_s);
  s.Bind(4, std::string_view(d.target));
  s.Bind(5, std::string_view(d.cost_center));
  s.Bind(6, d.period_start_s);
  s.Bind(7, d.period_end_s);
  s.Bind(8, std::string_view(d.outcome));
  s.Bind(9, static_cast<int64_t>(d.http_status));
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("record delivery");
  return sqlite3_changes(db_) > 0;
}

Result<bool> SqliteLedger::HasDelivery(std::string_view delivery_id) const {
  return Exists("SELECT 1 FROM deliveries WHERE cluster = $1 AND delivery_id = $2", delivery_id,
                "delivery lookup");
}

Result<std::vector<std::vector<std::string>>> SqliteLedger::QueryText(
    const std::string& sql) const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, sql.c_str());
  if (!s.ok()) return Error("prepare query");
  std::vector<std::vector<std::string>> rows;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    std::vector<std::string>& row = rows.emplace_back();
    for (int i = 0; i < sqlite3_column_count(s.get()); ++i) {
      // Reals as the shortest text that reads back the same (PostgreSQL's own rule).
      if (sqlite3_column_type(s.get(), i) == SQLITE_FLOAT) {
        char buf[32];
        const auto [end, ec] =
            std::to_chars(buf, buf + sizeof buf, sqlite3_column_double(s.get(), i));
        row.emplace_back(buf, ec == std::errc() ? end : buf);
      } else {
        row.emplace_back(ColumnView(s.get(), i));
      }
    }
  }
  if (rc != SQLITE_DONE) return Error("query");
  return rows;
}

Result<std::string> SqliteLedger::StorageCheck() const {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "PRAGMA integrity_check");
  if (!s.ok()) return Error("prepare integrity_check");
  std::string out;
  while (sqlite3_step(s.get()) == SQLITE_ROW)
    out += (out.empty() ? "" : "; ") + std::string(ColumnView(s.get(), 0));
  return out;
}

}  // namespace

Result<std::unique_ptr<Ledger>> OpenSqliteLedger(const std::string& path,
                                                 const LedgerOptions& options) {
  sqlite3* db = nullptr;
  // NOMUTEX: every use of the connection holds the ledger's own mutex; SQLite's per-call lock
  // on top of it cost a fifth of a showback scan (two locks per column read).
  const int flags =
      options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  auto ledger = std::make_unique<SqliteLedger>(db, path, options);
  if (rc != SQLITE_OK)
    return InternalError("ledger " + path +
                         ": open: " + (db ? sqlite3_errmsg(db) : "out of memory"));
  GPUVPA_RETURN_IF_ERROR(ledger->Init());
  return std::unique_ptr<Ledger>(std::move(ledger));
}

}  // namespace gpuvpa::ledger_sql
