// The PostgreSQL ledger against its floors, on a real PostgreSQL 15 started here (initdb into a
// temporary directory, as the tests do; fsync off there, for both sides alike):
//   1. appends: Ledger::Append (ON CONFLICT ... RETURNING, the content check of known ids, one
//      transaction per batch) vs the same rows through plain libpq multi-row INSERTs in one
//      transaction per batch (the floor); rows/s, medians of interleaved runs;
//   2. showback over N rows (default 10 million, filled server-side): Ledger::QueryShowback vs
//      psql running the same three queries (unaligned, to /dev/null, FETCH_COUNT 100000).
//
//   build-release/bin/ledger_postgres_bench [--rows 10000000] [--append-rows 200000] [--runs 3]
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bench/ledger_rows.h"
#include "core/cost/ledger.h"
#include "core/cost/ledger_sql.h"
#include "test/support/postgres_server.h"
#include "test/support/process.h"

namespace gpuvpa {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using bench::SampleAction;

// The floor: the same rows and columns as text parameters, one multi-row INSERT per 1,000 rows,
// one transaction per batch, nothing else.
double FloorAppend(const std::string& uri, const std::vector<LedgerAction>& rows, size_t batch) {
  PGconn* conn = PQconnectdb(uri.c_str());
  const auto t0 = Clock::now();
  for (size_t begin = 0; begin < rows.size(); begin += batch) {
    PQclear(PQexec(conn, "BEGIN"));
    const size_t end = std::min(rows.size(), begin + batch);
    std::string sql = std::string("INSERT INTO actions (") + ledger_sql::kRowColumns + ") VALUES ";
    std::vector<std::string> values;
    for (size_t i = begin; i < end; ++i) {
      sql += i == begin ? "(" : ", (";
      ledger_sql::BindRow(rows[i], "default", [&](int column, auto v) {
        sql += (column > 1 ? ", $" : "$") + std::to_string(values.size() + 1);
        if constexpr (std::is_same_v<decltype(v), int64_t>)
          values.push_back(std::to_string(v));
        else
          values.emplace_back(v);
      });
      sql += ")";
    }
    std::vector<const char*> p;
    for (const std::string& v : values) p.push_back(v.c_str());
    PGresult* r = PQexecParams(conn, sql.c_str(), static_cast<int>(p.size()), nullptr, p.data(),
                               nullptr, nullptr, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) std::cerr << PQresultErrorMessage(r);
    PQclear(r);
    PQclear(PQexec(conn, "COMMIT"));
  }
  const double s = Seconds(t0);
  PQfinish(conn);
  return s;
}

double LedgerAppend(const std::string& uri, const std::vector<LedgerAction>& rows, size_t batch) {
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(uri)).value();
  const auto t0 = Clock::now();
  for (size_t begin = 0; begin < rows.size(); begin += batch) {
    const size_t end = std::min(rows.size(), begin + batch);
    Result<size_t> r = ledger->Append(std::span(rows).subspan(begin, end - begin));
    if (!r.ok()) std::cerr << r.status().message() << "\n";
  }
  return Seconds(t0);
}

int Main(int argc, char** argv) {
  int64_t showback_rows = 10'000'000;
  size_t append_rows = 200'000;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rows") showback_rows = std::stoll(argv[i + 1]);
    if (flag == "--append-rows") append_rows = std::stoul(argv[i + 1]);
    if (flag == "--runs") runs = std::stoi(argv[i + 1]);
  }
  testing::PostgresServer server;
  std::string error;
  if (!server.Start(&error)) {
    std::cerr << error << "\n";
    return 1;
  }
  std::vector<LedgerAction> rows;
  for (size_t n = 0; n < append_rows; ++n) rows.push_back(SampleAction(static_cast<int64_t>(n)));
  std::vector<double> ours, floor;
  for (int run = 0; run < runs; ++run) {
    for (bool floor_side : {false, true}) {
      const std::string db = (floor_side ? "floor" : "ours") + std::to_string(run);
      const std::string uri = server.CreateDatabase(db, &error);
      (void)std::move(Ledger::Open(uri)).value();  // the same schema on both sides
      const double s = floor_side ? FloorAppend(uri, rows, 1000) : LedgerAppend(uri, rows, 1000);
      (floor_side ? floor : ours).push_back(static_cast<double>(rows.size()) / s);
    }
  }
  std::printf(
      "append %zu rows in batches of 1000: Ledger::Append %.0f rows/s, plain libpq "
      "multi-row INSERT %.0f rows/s (medians of %d interleaved runs): %.2fx the floor's "
      "time\n",
      rows.size(), Median(ours), Median(floor), runs, Median(floor) / Median(ours));

  const std::string uri = server.CreateDatabase("showback", &error);
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(uri)).value();
  const auto fill = Clock::now();
  const std::string filled = server.Query(
      "showback",
      "INSERT INTO actions (" + std::string(ledger_sql::kRowColumns) +
          ") SELECT 'default', 'bench-' || g, 1793577600 + g, CASE WHEN g % 3 = 0 THEN "
          "'metered_period' ELSE 'allocated_usage' END, 'applied', 'team-' || (g % 200), "
          "'workload-' || (g % 5000), 'cc-' || (g % 40), CASE WHEN g % 2 = 1 THEN 'H100-80GB' "
          "ELSE 'A100-80GB' END, 'nvidia.com/gpu=1', 'nvidia.com/gpu=1', 0, 0, 1793577600 + g, "
          "1793577600 + g + 3600, 3600000, 6880000, 1, 2000000, 1000000, 0, CASE WHEN g % 3 = 0 "
          "THEN 500000 ELSE 0 END, CASE WHEN g % 3 = 0 THEN 6880000 ELSE 0 END, '{}' FROM "
          "generate_series(1, " +
          std::to_string(showback_rows) + ") AS g");
  if (filled.starts_with("(error)")) {
    std::cerr << filled << "\n";
    return 1;
  }
  server.Query("showback", "VACUUM ANALYZE actions");
  std::printf("filled %lld rows server-side in %.1f s\n", static_cast<long long>(showback_rows),
              Seconds(fill));
  // psql runs the queries of a whole-history showback by cost center (the plan QueryShowback
  // runs: daily totals and the rows that cross midnight), parameters inlined.
  const ledger_sql::ShowbackPlan plan =
      std::move(ledger_sql::ShowbackBuilder::Start({})).value().Plan();
  const std::string script_path = "/tmp/gpuvpa-showback-bench-" + std::to_string(::getpid());
  {
    std::ofstream script(script_path);
    script << "\\set FETCH_COUNT 100000\n";
    for (const ledger_sql::ShowbackPlan::Query& q : plan.queries) {
      std::string text = q.sql;
      // Highest first: $1 is a prefix of $10.
      for (size_t i = q.params.size(); i-- > 0;) {
        const std::string name = "$" + std::to_string(i + 1);
        const std::string value = std::visit(
            [](const auto& v) {
              if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
                return "'" + v + "'";
              else
                return std::to_string(v);
            },
            q.params[i]);
        for (size_t p = text.find(name); p != std::string::npos;
             p = text.find(name, p + value.size()))
          text.replace(p, name.size(), value);
      }
      script << text << ";\n";
    }
  }
  std::vector<double> ours_s, psql_s;
  for (int run = 0; run < runs; ++run) {
    auto t0 = Clock::now();
    Result<Showback> s = ledger->QueryShowback({});
    ours_s.push_back(Seconds(t0));
    if (!s.ok()) std::cerr << s.status().message() << "\n";
    t0 = Clock::now();
    int rc = 0;
    testing::RunShell(
        "psql -q -A -t -X -d '" + server.Uri("showback") + "' -f " + script_path + " > /dev/null",
        &rc);
    psql_s.push_back(Seconds(t0));
    if (rc != 0) std::cerr << "psql failed\n";
  }
  std::remove(script_path.c_str());
  std::printf(
      "showback over %lld rows: Ledger::QueryShowback %.2f s, psql (same SQL) %.2f s "
      "(medians of %d interleaved runs): %.2fx psql\n",
      static_cast<long long>(showback_rows), Median(ours_s), Median(psql_s), runs,
      Median(ours_s) / Median(psql_s));
  return 0;
}

}  // namespace
}  // namespace gpuvpa

int main(int argc, char** argv) { return gpuvpa::Main(argc, argv); }
