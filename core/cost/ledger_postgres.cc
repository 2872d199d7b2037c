// The PostgreSQL backend of the ledger (libpq), for many writers and clusters: the same rows, ids
// and checks as SQLite. Appends are one transaction per batch, multi-row INSERT ... ON CONFLICT
// (cluster, action_id) DO NOTHING RETURNING to learn what was new; an id already stored is read
// back and compared (a different content is ALREADY_EXISTS naming both values). Charge marks are
// written under a transaction-scoped advisory lock per (cluster, series). Serialization failures
// and deadlocks are retried a bounded number of times; a lost connection is UNAVAILABLE (a
// spooling writer keeps its rows) and is re-opened on the next call.
#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <mutex>
#include <set>

#include "core/base/names.h"
#include "core/cost/ledger_sql.h"

namespace gpuvpa::ledger_sql {
namespace {

// Each entry moves the schema from version i to i + 1, like SQLite's. Never edit one that has
// shipped: add. Money and GPU time are bigint (micro-dollars, milli-GPU-seconds).
constexpr std::array<const char*, 5> kMigrations = {
    R"sql(
CREATE TABLE actions (
  seq bigserial PRIMARY KEY,
  action_id text NOT NULL UNIQUE CHECK (action_id <> ''),
  time_s bigint NOT NULL,
  kind text NOT NULL CHECK (kind IN ('recommendation', 'applied_change', 'rollback', 'activation',
                                     'deactivation', 'metered_period', 'allocated_usage')),
  status text NOT NULL CHECK (status IN ('proposed', 'applied', 'rolled_back', 'failed')),
  namespace text NOT NULL,
  workload text NOT NULL,
  cost_center text NOT NULL CHECK (cost_center <> ''),
  gpu_model text NOT NULL,
  before text NOT NULL,
  after text NOT NULL,
  monthly_before_micro_usd bigint NOT NULL,
  monthly_after_micro_usd bigint NOT NULL,
  period_start_s bigint NOT NULL,
  period_end_s bigint NOT NULL,
  allocated_milli_gpu_s bigint NOT NULL,
  allocated_micro_usd bigint NOT NULL,
  usage_measured integer NOT NULL CHECK (usage_measured IN (0, 1)),
  used_vram_micro_usd bigint NOT NULL,
  used_sm_micro_usd bigint NOT NULL,
  metered_milli_gpu_s bigint NOT NULL,
  metered_micro_usd bigint NOT NULL,
  reserved_micro_usd bigint NOT NULL,
  evidence text NOT NULL
);
CREATE INDEX actions_by_time ON actions (time_s);
CREATE INDEX actions_by_kind ON actions (kind, namespace, workload, time_s);
CREATE FUNCTION gpuvpa_append_only() RETURNS trigger LANGUAGE plpgsql AS
  'BEGIN RAISE EXCEPTION ''the ledger is append-only''; END';
CREATE TRIGGER actions_append_only BEFORE UPDATE OR DELETE ON actions
  FOR EACH ROW EXECUTE FUNCTION gpuvpa_append_only();
CREATE TRIGGER actions_no_truncate BEFORE TRUNCATE ON actions
  FOR EACH STATEMENT EXECUTE FUNCTION gpuvpa_append_only();
)sql",
    R"sql(
CREATE TABLE charge_marks (
  seq bigserial PRIMARY KEY,
  series text NOT NULL CHECK (series <> ''),
  charged_through_s double precision NOT NULL
);
CREATE INDEX charge_marks_by_series ON charge_marks (series, charged_through_s);
CREATE TRIGGER charge_marks_append_only BEFORE UPDATE OR DELETE ON charge_marks
  FOR EACH ROW EXECUTE FUNCTION gpuvpa_append_only();
CREATE TRIGGER charge_marks_no_truncate BEFORE TRUNCATE ON charge_marks
  FOR EACH STATEMENT EXECUTE FUNCTION gpuvpa_append_only();
)sql",
    R"sql(
ALTER TABLE actions ADD COLUMN cluster text NOT NULL DEFAULT '{{cluster}}'
  CHECK (cluster <> '');
ALTER TABLE actions ALTER COLUMN cluster DROP DEFAULT;
ALTER TABLE actions DROP CONSTRAINT actions_action_id_key;
ALTER TABLE actions ADD CONSTRAINT actions_cluster_action_id_key UNIQUE (cluster, action_id);
DROP INDEX actions_by_kind;
CREATE INDEX actions_by_kind ON actions (kind, cluster, namespace, workload, time_s);
ALTER TABLE charge_marks ADD COLUMN cluster text NOT NULL DEFAULT '{{cluster}}';
ALTER TABLE charge_marks ALTER COLUMN cluster DROP DEFAULT;
CREATE INDEX charge_marks_by_cluster ON charge_marks (cluster, series, charged_through_s);
)sql",
    R"sql(
CREATE TABLE deliveries (
  seq bigserial PRIMARY KEY,
  cluster text NOT NULL CHECK (cluster <> ''),
  delivery_id text NOT NULL CHECK (delivery_id <> ''),
  time_s bigint NOT NULL,
  target text NOT NULL,
  cost_center text NOT NULL,
  period_start_s bigint NOT NULL,
  period_end_s bigint NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('delivered', 'refused')),
  http_status integer NOT NULL,
  UNIQUE (cluster, delivery_id)
);
CREATE TRIGGER deliveries_append_only BEFORE UPDATE OR DELETE ON deliveries
  FOR EACH ROW EXECUTE FUNCTION gpuvpa_append_only();
CREATE TRIGGER deliveries_no_truncate BEFORE TRUNCATE ON deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION gpuvpa_append_only();
)sql",
    // 5: daily totals (ledger_sql.h, kDayS), filled from the rows there and kept by a trigger
    // after each INSERT statement (its new rows: a retried id adds nothing). The trigger runs as
    // the schema's owner: writers need no right on ledger_daily. Keys are added in one order,
    // so two writers wait for each other rather than deadlock; a sum past 2^63 - 1 fails the
    // insert (bigint out of range).
    R"sql(
CREATE TABLE ledger_daily (
  day bigint NOT NULL,
  cluster text NOT NULL,
  namespace text NOT NULL,
  workload text NOT NULL,
  cost_center text NOT NULL,
  gpu_model text NOT NULL,
  before text NOT NULL,
  row_count bigint NOT NULL,
  measured_rows bigint NOT NULL,
  metered_periods bigint NOT NULL,
  allocated_milli_gpu_s bigint NOT NULL,
  allocated_micro_usd bigint NOT NULL,
  used_vram_micro_usd bigint NOT NULL,
  used_sm_micro_usd bigint NOT NULL,
  measured_allocated_micro_usd bigint NOT NULL,
  measured_used_vram_micro_usd bigint NOT NULL,
  measured_used_sm_micro_usd bigint NOT NULL,
  realised_before_micro_usd bigint NOT NULL,
  realised_after_micro_usd bigint NOT NULL,
  metered_milli_gpu_s bigint NOT NULL,
  metered_micro_usd bigint NOT NULL,
  reserved_micro_usd bigint NOT NULL,
  PRIMARY KEY (day, cluster, namespace, workload, cost_center, gpu_model, before)
);
CREATE FUNCTION gpuvpa_add_daily() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
  SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO ledger_daily {{daily totals of new_rows}}
  {{add to daily totals}};
  RETURN NULL;
END
$$;
INSERT INTO ledger_daily {{daily totals of actions}};
CREATE TRIGGER actions_daily AFTER INSERT ON actions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION gpuvpa_add_daily();
CREATE INDEX actions_by_period_start ON actions (period_start_s);
CREATE INDEX actions_across_days ON actions (period_end_s)
  WHERE period_end_s > period_start_s AND period_start_s / 86400 <> (period_end_s - 1) / 86400;
)sql",
};

// One key for every migrating process (pg_advisory_xact_lock): "gpuvpa" in ASCII.
constexpr int64_t kMigrationLock = 0x677075767061;
// Rows per INSERT statement: 24 parameters each, well under PostgreSQL's 65,535.
constexpr size_t kRowsPerInsert = 1000;
// Attempts of one transaction that fails with a serialization failure or a deadlock.
constexpr int kAttempts = 5;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// Parameters of one statement, held as text (libpq's text format).
class Params {
 public:
  void Add(std::string_view v) { values_.emplace_back(v); }
  void Add(int64_t v) { values_.push_back(std::to_string(v)); }
  void Add(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    values_.emplace_back(buf, ec == std::errc() ? end : buf);
  }
  size_t size() const { return values_.size(); }
  std::vector<const char*> Pointers() const {
    std::vector<const char*> p;
    p.reserve(values_.size());
    for (const std::string& v : values_) p.push_back(v.c_str());
    return p;
  }

 private:
  std::vector<std::string> values_;
};

int64_t Int64(const PGresult* r, int row, int column) {
  const char* text = PQgetvalue(r, row, column);
  int64_t v = 0;
  std::from_chars(text, text + PQgetlength(r, row, column), v);
  return v;
}
// libpq's message without its trailing newline.
std::string Trimmed(const char* message) {
  std::string out = message != nullptr ? message : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string_view Text(const PGresult* r, int row, int column) {
  return {PQgetvalue(r, row, column), static_cast<size_t>(PQgetlength(r, row, column))};
}

// Row `row` of a result, its kRowColumns from column `first`.
Result<LedgerAction> ActionAt(const PGresult* r, int row, int first) {
  return ReadRow(
      first, [&](int i) { return std::string(Text(r, row, i)); },
      [&](int i) { return Int64(r, row, i); });
}

class PostgresLedger final : public Ledger {
 public:
  PostgresLedger(std::string uri, const LedgerOptions& options)
      : Ledger(options), uri_(std::move(uri)), shown_(RedactLedgerUrl(uri_)) {}
  ~PostgresLedger() override {
    if (conn_ != nullptr) PQfinish(conn_);
  }
  PostgresLedger(const PostgresLedger&) = delete;
  PostgresLedger& operator=(const PostgresLedger&) = delete;

  Status Init() {
    std::lock_guard<std::mutex> lock(mu_);
    GPUVPA_RETURN_IF_ERROR(Connect());
    return Migrate();
  }
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
  Result<std::vector<std::vector<std::string>>> QueryText(const std::string& sql) const override {
    std::lock_guard<std::mutex> lock(mu_);
    Result<PgResult> r = Run(sql, Params(), "query");
    if (!r.ok()) return r.status();
    std::vector<std::vector<std::string>> rows(static_cast<size_t>(PQntuples(r->get())));
    for (int row = 0; row < PQntuples(r->get()); ++row)
      for (int c = 0; c < PQnfields(r->get()); ++c)
        rows[static_cast<size_t>(row)].emplace_back(Text(r->get(), row, c));
    return rows;
  }

 private:
  // Opens the connection when there is none or it broke. UNAVAILABLE when the server cannot be
  // reached.
  Status Connect() const;
  // Whether `sql` ($1 this ledger's cluster, $2 `id`) finds a row.
  Result<bool> Exists(const char* sql, std::string_view id, const std::string& what) const;
  // Runs `sql` with `params`; a failed statement is an error naming `what` (UNAVAILABLE when the
  // connection is gone, ABORTED for a serialization failure or deadlock).
  Result<PgResult> Run(const std::string& sql, const Params& params, const std::string& what) const;
  // The error of a failed statement (`r`, or null when libpq returned none), classified as Run
  // says.
  Status Failure(const PGresult* r, const std::string& what) const;
  Status Exec(const std::string& sql, const std::string& what) const {
    Result<PgResult> r = Run(sql, Params(), what);
    return r.ok() ? OkStatus() : r.status();
  }
  Status Migrate();
  // Runs `body` in a transaction, retrying it when PostgreSQL aborts it for a serialization
  // failure or a deadlock.
  template <class Body>
  Status InTransaction(Body&& body);
  Status AppendOnce(std::span<const LedgerAction> actions, std::span<const ChargeMark> marks,
                    size_t& inserted);
  Status CheckStored(std::span<const LedgerAction> actions, const std::set<size_t>& pending);

  const std::string uri_;
  const std::string shown_;  // uri_ without its password
  mutable std::mutex mu_;    // one statement sequence (transaction) at a time
  mutable PGconn* conn_ = nullptr;
  int schema_version_ = 0;
};

Status PostgresLedger::Connect() const {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) return OkStatus();
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = PQconnectdb(uri_.c_str());
  if (conn_ == nullptr) return UnavailableError("ledger " + shown_ + ": connect: out of memory");
  // Notices ("already exists, skipping") are not errors; libpq would print them on stderr.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = Trimmed(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    return UnavailableError("ledger " + shown_ + ": connect: " + why);
  }
  if (options().read_only) {
    PgResult r(PQexec(conn_, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"));
    if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
      const std::string why = Trimmed(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      return UnavailableError("ledger " + shown_ + ": read-only session: " + why);
    }
  }
  return OkStatus();
}

Result<PgResult> PostgresLedger::Run(const std::string& sql, const Params& params,
                                     const std::string& what) const {
  GPUVPA_RETURN_IF_ERROR(Connect());
  const std::vector<const char*> values = params.Pointers();
  // Without parameters, the simple protocol: a migration is several statements.
  PgResult r(values.empty() ? PQexec(conn_, sql.c_str())
                            : PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                                           nullptr, values.data(), nullptr, nullptr, 0));
  const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
  return Failure(r.get(), what);
}

Status PostgresLedger::Failure(const PGresult* r, const std::string& what) const {
  const std::string why = Trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state ? state : "";
  const std::string message = "ledger " + shown_ + ": " + what + ": " + why;
  if (PQstatus(conn_) != CONNECTION_OK || sqlstate.starts_with("08") || sqlstate.starts_with("57P"))
    return UnavailableError(message);
  if (sqlstate == "40001" || sqlstate == "40P01") return Status(StatusCode::kAborted, message);
  // bigint out of range: ledger_daily's trigger adding past 2^63 - 1.
  if (sqlstate == "22003") return DailyTotalOverflow("ledger " + shown_ + ": " + what);
  return InternalError(message + (sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")"));
}

template <class Body>
Status PostgresLedger::InTransaction(Body&& body) {
  Status s;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    s = Exec("BEGIN", "begin");
    if (s.ok()) s = body();
    if (s.ok()) s = Exec("COMMIT", "commit");
    if (s.ok()) return s;
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) (void)Exec("ROLLBACK", "rollback");
    if (s.code() != StatusCode::kAborted) return s;
  }
  return UnavailableError(s.message() + " (still failing after " + std::to_string(kAttempts) +
                          " attempts)");
}

Status PostgresLedger::Migrate() {
  // A ledger at this build's version needs no DDL: writers may use a role that can only insert
  // and select (`gpuvpa ledger migrate` runs with one that may create).
  Result<PgResult> current =
      Run("SELECT CASE WHEN to_regclass('gpuvpa_schema') IS NULL THEN 0 ELSE 1 END", Params(),
          "schema table");
  if (!current.ok()) return current.status();
  if (Int64(current->get(), 0, 0) == 1) {
    Result<PgResult> version =
        Run("SELECT COALESCE(MAX(version), 0) FROM gpuvpa_schema", Params(), "schema version");
    if (!version.ok()) return version.status();
    schema_version_ = static_cast<int>(Int64(version->get(), 0, 0));
    if (schema_version_ == kSchemaVersion) return OkStatus();
  }
  if (options().read_only)
    return FailedPreconditionError(
        "ledger " + shown_ + " has schema version " + std::to_string(schema_version_) +
        ", not this build's " + std::to_string(kSchemaVersion) +
        ": read-only, it is not migrated (gpuvpa ledger migrate, or any writer, migrates it)");
  for (;;) {
    bool done = false;
    Status s = InTransaction([&]() -> Status {
      Params lock;
      lock.Add(kMigrationLock);
      if (Result<PgResult> r = Run("SELECT pg_advisory_xact_lock($1)", lock, "lock"); !r.ok())
        return r.status();
      // Under the lock: two first-time migrations racing on CREATE ... IF NOT EXISTS collide.
      GPUVPA_RETURN_IF_ERROR(Exec(
          "CREATE TABLE IF NOT EXISTS gpuvpa_schema (version integer NOT NULL)", "schema table"));
      Result<PgResult> version =
          Run("SELECT COALESCE(MAX(version), 0) FROM gpuvpa_schema", Params(), "schema version");
      if (!version.ok()) return version.status();
      schema_version_ = static_cast<int>(Int64(version->get(), 0, 0));
      if (schema_version_ > kSchemaVersion)
        return FailedPreconditionError(
            "ledger " + shown_ + " has schema version " + std::to_string(schema_version_) +
            ", newer than this build's " + std::to_string(kSchemaVersion));
      if (schema_version_ == kSchemaVersion) {
        done = true;
        return OkStatus();
      }
      // One step and its version row commit together.
      const int next = schema_version_ + 1;
      Status step =
          Exec(MigrationText(kMigrations[static_cast<size_t>(schema_version_)], options().cluster),
               "migrating to schema version " + std::to_string(next));
      if (step.ok())
        step = Exec("INSERT INTO gpuvpa_schema (version) VALUES (" + std::to_string(next) + ")",
                    "schema version " + std::to_string(next));
      return step;
    });
    if (!s.ok()) return s;
    if (done) return OkStatus();
    ++schema_version_;
  }
}

Result<size_t> PostgresLedger::Append(std::span<const LedgerAction> actions,
                                      std::span<const ChargeMark> marks) {
  for (const LedgerAction& a : actions) GPUVPA_RETURN_IF_ERROR(ValidateLedgerAction(a));
  for (const ChargeMark& m : marks) GPUVPA_RETURN_IF_ERROR(ValidateMark(m));
  if (options().read_only) return ReadOnlyLedgerError(shown_);
  std::lock_guard<std::mutex> lock(mu_);
  size_t inserted = 0;
  GPUVPA_RETURN_IF_ERROR(InTransaction([&] { return AppendOnce(actions, marks, inserted); }));
  return inserted;
}

Status PostgresLedger::AppendOnce(std::span<const LedgerAction> actions,
                                  std::span<const ChargeMark> marks, size_t& inserted) {
  inserted = 0;
  // Marks first: the advisory locks, in one order for every writer (no deadlock between two).
  std::set<std::string> series;
  for (const ChargeMark& m : marks) series.insert(m.series);
  for (const std::string& s : series) {
    Params p;
    p.Add(options().cluster + "/" + s);
    if (Result<PgResult> r = Run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", p,
                                 "lock charge mark " + QuoteForError(s));
        !r.ok())
      return r.status();
  }
  const std::string insert_head = std::string("INSERT INTO actions (") + kRowColumns + ") VALUES ";
  for (size_t begin = 0; begin < actions.size(); begin += kRowsPerInsert) {
    const size_t end = std::min(actions.size(), begin + kRowsPerInsert);
    std::string sql = insert_head;
    Params p;
    for (size_t i = begin; i < end; ++i) {
      const LedgerAction& a = actions[i];
      sql += i == begin ? "(" : ", (";
      BindRow(a, a.cluster.empty() ? options().cluster : a.cluster, [&](int column, auto v) {
        sql += (column > 1 ? ", $" : "$") + std::to_string(p.size() + 1);
        p.Add(v);
      });
      sql += ")";
    }
    sql += " ON CONFLICT (cluster, action_id) DO NOTHING RETURNING cluster, action_id";
    Result<PgResult> r = Run(sql, p, "append " + std::to_string(end - begin) + " actions");
    if (!r.ok()) return r.status();
    std::set<std::pair<std::string, std::string>> fresh;
    for (int row = 0; row < PQntuples(r->get()); ++row)
      fresh.emplace(Text(r->get(), row, 0), Text(r->get(), row, 1));
    inserted += fresh.size();
    // Ids that were recorded already: the same row (a retry), or a conflict.
    std::set<size_t> pending;
    for (size_t i = begin; i < end; ++i) {
      const LedgerAction& a = actions[i];
      if (!fresh.count({a.cluster.empty() ? options().cluster : a.cluster, a.action_id}))
        pending.insert(i);
    }
    GPUVPA_RETURN_IF_ERROR(CheckStored(actions, pending));
  }
  for (const ChargeMark& m : marks) {
    Params p;
    p.Add(std::string_view(options().cluster));
    p.Add(std::string_view(m.series));
    p.Add(m.charged_through_s);
    if (Result<PgResult> r =
            Run("INSERT INTO charge_marks (cluster, series, charged_through_s) VALUES ($1, $2, $3)",
                p, "append charge mark " + QuoteForError(m.series));
        !r.ok())
      return r.status();
  }
  return OkStatus();
}

Status PostgresLedger::CheckStored(std::span<const LedgerAction> actions,
                                   const std::set<size_t>& pending) {
  if (pending.empty()) return OkStatus();
  // One query for the batch's recorded ids (a retried batch is all of them).
  std::string sql = std::string("SELECT cluster, action_id, ") + kContentColumns +
                    " FROM actions WHERE (cluster, action_id) IN (";
  Params p;
  for (size_t i : pending) {
    const LedgerAction& a = actions[i];
    sql += (p.size() == 0 ? "($" : ", ($") + std::to_string(p.size() + 1) + ", $" +
           std::to_string(p.size() + 2) + ")";
    p.Add(std::string_view(a.cluster.empty() ? options().cluster : a.cluster));
    p.Add(std::string_view(a.action_id));
  }
  sql += ")";
  Result<PgResult> r = Run(sql, p, "read " + std::to_string(pending.size()) + " recorded actions");
  if (!r.ok()) return r.status();
  std::map<std::pair<std::string_view, std::string_view>, int> stored;
  for (int row = 0; row < PQntuples(r->get()); ++row)
    stored[{Text(r->get(), row, 0), Text(r->get(), row, 1)}] = row;
  for (size_t i : pending) {
    const LedgerAction& a = actions[i];
    auto it = stored.find({a.cluster.empty() ? options().cluster : a.cluster, a.action_id});
    // Not there would mean something deleted it, which the triggers refuse.
    if (it == stored.end())
      return InternalError("ledger " + shown_ + ": action " + QuoteForError(a.action_id) +
                           " was neither inserted nor found");
    std::vector<std::string> was;
    for (int c = 2; c < PQnfields(r->get()); ++c) was.emplace_back(Text(r->get(), it->second, c));
    GPUVPA_RETURN_IF_ERROR(ContentConflict(a, was));
  }
  return OkStatus();
}

Result<std::unordered_map<std::string, double>> PostgresLedger::ChargeMarks() const {
  std::lock_guard<std::mutex> lock(mu_);
  Params p;
  p.Add(std::string_view(options().cluster));
  Result<PgResult> r = Run(
      "SELECT series, MAX(charged_through_s)::text FROM charge_marks WHERE cluster = $1 GROUP BY "
      "series",
      p, "read charge marks");
  if (!r.ok()) return r.status();
  std::unordered_map<std::string, double> marks;
  for (int row = 0; row < PQntuples(r->get()); ++row) {
    double v = 0;
    const std::string_view t = Text(r->get(), row, 1);
    std::from_chars(t.data(), t.data() + t.size(), v);
    marks[std::string(Text(r->get(), row, 0))] = v;
  }
  return marks;
}

Result<std::vector<Showback>> PostgresLedger::QueryShowbackSteps(const ShowbackQuery& query) const {
  Result<ShowbackBuilder> builder = ShowbackBuilder::Start(query);
  if (!builder.ok()) return builder.status();
  ShowbackBuilder& b = *builder;
  std::lock_guard<std::mutex> lock(mu_);
  // Rows stream one at a time (single-row mode): a showback over millions of rows holds one.
  for (const ShowbackPlan::Query& q : b.Plan().queries) {
    Params p;
    for (const auto& v : q.params) std::visit([&](const auto& x) { p.Add(x); }, v);
    GPUVPA_RETURN_IF_ERROR(Connect());
    const std::vector<const char*> values = p.Pointers();
    if (PQsendQueryParams(conn_, q.sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0) != 1 ||
        PQsetSingleRowMode(conn_) != 1)
      return UnavailableError("ledger " + shown_ + ": showback: " + Trimmed(PQerrorMessage(conn_)));
    Status s;
    Status failure;
    while (PGresult* raw = PQgetResult(conn_)) {
      PgResult r(raw);
      const ExecStatusType status = PQresultStatus(raw);
      if (status == PGRES_SINGLE_TUPLE) {
        if (s.ok())
          s = b.Add(
              q.rows, [&](int i) { return Text(raw, 0, i); },
              [&](int i) { return Int64(raw, 0, i); });
      } else if (status != PGRES_TUPLES_OK && failure.ok()) {
        failure = Failure(raw, "showback");
      }
    }
    GPUVPA_RETURN_IF_ERROR(failure);
    GPUVPA_RETURN_IF_ERROR(s);
  }
  return std::move(b).Finish();
}

Result<int64_t> PostgresLedger::CountRows() const {
  std::lock_guard<std::mutex> lock(mu_);
  Result<PgResult> r = Run("SELECT COUNT(*) FROM actions", Params(), "count rows");
  if (!r.ok()) return r.status();
  return Int64(r->get(), 0, 0);
}

Result<bool> PostgresLedger::Contains(std::string_view action_id) const {
  return Exists("SELECT 1 FROM actions WHERE cluster = $1 AND action_id = $2", action_id, "lookup");
}

Result<bool> PostgresLedger::Exists(const char* sql, std::string_view id,
                                    const std::string& what) const {
  std::lock_guard<std::mutex> lock(mu_);
  Params p;
  p.Add(std::string_view(options().cluster));
  p.Add(id);
  Result<PgResult> r = Run(sql, p, what);
  if (!r.ok()) return r.status();
  return PQntuples(r->get()) > 0;
}

Result<Ledger::Page> PostgresLedger::ReadRows(int64_t after_seq, size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  Params p;
  p.Add(after_seq);
  p.Add(static_cast<int64_t>(limit));
  Result<PgResult> r = Run(std::string("SELECT seq, ") + kRowColumns +
                               " FROM actions WHERE seq > $1 ORDER BY seq LIMIT $2",
                           p, "read rows");
  if (!r.ok()) return r.status();
  Page page;
  page.last_seq = after_seq;
  for (int row = 0; row < PQntuples(r->get()); ++row) {
    Result<LedgerAction> a = ActionAt(r->get(), row, 1);
    if (!a.ok())
      return DataLossError("ledger " + shown_ + ": row " + std::to_string(Int64(r->get(), row, 0)) +
                           ": " + a.status().message());
    page.rows.push_back(std::move(a).value());
    page.last_seq = Int64(r->get(), row, 0);
  }
  return page;
}

Result<std::vector<LedgerAction>> PostgresLedger::LatestProposals(int64_t from_s,
                                                                  int64_t to_s) const {
  std::lock_guard<std::mutex> lock(mu_);
  Params p;
  p.Add(std::string_view(options().cluster));
  p.Add(from_s);
  p.Add(to_s);
  Result<PgResult> r = Run(LatestProposalsSql(), p, "latest proposals");
  if (!r.ok()) return r.status();
  std::vector<LedgerAction> out;
  for (int row = 0; row < PQntuples(r->get()); ++row) {
    Result<LedgerAction> a = ActionAt(r->get(), row, 0);
    if (!a.ok()) return DataLossError("ledger " + shown_ + ": " + a.status().message());
    out.push_back(std::move(a).value());
  }
  return out;
}

Result<bool> PostgresLedger::RecordDelivery(const DeliveryRecord& d) {
  GPUVPA_RETURN_IF_ERROR(ValidateDelivery(d));
  if (options().read_only) return ReadOnlyLedgerError(shown_);
  std::lock_guard<std::mutex> lock(mu_);
  Params p;
  p.Add(std::string_view(options().cluster));
  p.Add(std::string_view(d.delivery_id));
  p.Add(d.time_s);
  p.Add(std::string_view(d.target));
  p.Add(std::string_view(d.cost_center));
  p.Add(d.period_start_s);
  p.Add(d.period_end_s);
  p.Add(std::string_view(d.outcome));
  p.Add(static_cast<int64_t>(d.http_status));
  Result<PgResult> r = Run(kInsertDeliverySql, p, "record delivery");
  if (!r.ok()) return r.status();
  return std::string_view(PQcmdTuples(r->get())) == "1";
}

Result<bool> PostgresLedger::HasDelivery(std::string_view delivery_id) const {
  return Exists("SELECT 1 FROM deliveries WHERE cluster = $1 AND delivery_id = $2", delivery_id,
                "delivery lookup");
}

Result<std::string> PostgresLedger::StorageCheck() const {
  // The constraints are the database's to keep; what can be checked from here is that it
  // answers and holds the schema this build knows.
  std::lock_guard<std::mutex> lock(mu_);
  Result<PgResult> r =
      Run("SELECT COALESCE(MAX(version), 0) FROM gpuvpa_schema", Params(), "schema version");
  if (!r.ok()) return r.status();
  const int64_t version = Int64(r->get(), 0, 0);
  if (version != kSchemaVersion) return "schema version " + std::to_string(version);
  return std::string("ok");
}

}  // namespace

Result<std::unique_ptr<Ledger>> OpenPostgresLedger(const std::string& uri,
                                                   const LedgerOptions& options) {
  auto ledger = std::make_unique<PostgresLedger>(uri, options);
  GPUVPA_RETURN_IF_ERROR(ledger->Init());
  return std::unique_ptr<Ledger>(std::move(ledger));
}

}  // namespace gpuvpa::ledger_sql
