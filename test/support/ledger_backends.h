// The ledger's backends for parameterised suites: each test gets an empty ledger URL of the
// backend it runs on (a file in a temporary directory, or a fresh database on a real PostgreSQL
// started for the test), and a way to run SQL behind the ledger's back.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "test/support/postgres_server.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::testing {

enum class LedgerBackend { kSqlite, kPostgres };

inline std::string BackendName(const ::testing::TestParamInfo<LedgerBackend>& info) {
  return info.param == LedgerBackend::kSqlite ? "Sqlite" : "Postgres";
}

class LedgerPlace {
 public:
  explicit LedgerPlace(LedgerBackend backend) : backend_(backend) {}
  // Prepares the place (starts PostgreSQL for kPostgres); false with `error` when it cannot.
  bool Prepare(std::string* error);
  LedgerBackend backend() const { return backend_; }
  // Where the ledger is (Ledger::Open's URL).
  const std::string& url() const { return url_; }
  // Runs SQL on the ledger's database behind its back; returns the error text, or "".
  std::string RawExec(const std::string& sql) const;
  // The server, for fault tests (nullptr for SQLite).
  PostgresServer* postgres() { return postgres_.get(); }
  const ScopedTempDir& temp() const { return tmp_; }

 private:
  LedgerBackend backend_;
  ScopedTempDir tmp_;
  std::unique_ptr<PostgresServer> postgres_;
  std::string url_;
};

}  // namespace gpuvpa::testing
