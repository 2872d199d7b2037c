#include "test/support/ledger_backends.h"

#include <sqlite3.h>

namespace gpuvpa::testing {

bool LedgerPlace::Prepare(std::string* error) {
  if (backend_ == LedgerBackend::kSqlite) {
    url_ = tmp_.Path("ledger.db");
    return true;
  }
  postgres_ = std::make_unique<PostgresServer>();
  if (!postgres_->Start(error)) return false;
  url_ = postgres_->CreateDatabase("ledger", error);
  return !url_.empty();
}

std::string LedgerPlace::RawExec(const std::string& sql) const {
  if (backend_ == LedgerBackend::kPostgres) {
    std::string out = postgres_->Query("ledger", sql);
    return out.starts_with("(error)") ? out : "";
  }
  sqlite3* db = nullptr;
  sqlite3_open(url_.c_str(), &db);
  char* err = nullptr;
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string out = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  return out;
}

}  // namespace gpuvpa::testing
