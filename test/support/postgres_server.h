// A real PostgreSQL 15 for tests: `initdb` into a temporary directory, the server on 127.0.0.1
// at an ephemeral port (its unix socket in that directory), trust authentication for the test
// role, stopped and removed at the end. As root (CI), initdb and postgres run as the `postgres`
// user (PostgreSQL refuses to run as root). The binaries come from GPUVPA_PG_BIN or Debian's
// /usr/lib/postgresql/15/bin.
#pragma once

#include <sys/types.h>

#include <string>

#include "test/support/temp_dir.h"

namespace gpuvpa::testing {

class PostgresServer {
 public:
  PostgresServer();  // picks a free port; does not start
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Before Start: serve TLS too (ssl=on) with this certificate and key (PEM files; copied
  // where the server's user owns them, as PostgreSQL requires of a key).
  void EnableTls(const std::string& cert_file, const std::string& key_file) {
    tls_cert_ = cert_file;
    tls_key_ = key_file;
  }
  // Creates the cluster (first call only) and starts the server; waits until it accepts
  // connections. False (with `error`) otherwise.
  bool Start(std::string* error);
  void Stop();  // a fast shutdown (SIGINT), waited for
  void Kill();  // SIGKILL, as a crash would
  int port() const { return port_; }

  // Creates a database and returns its URI (postgresql://gpuvpa@127.0.0.1:PORT/NAME).
  std::string CreateDatabase(const std::string& name, std::string* error) const;
  std::string Uri(const std::string& database) const;
  // Runs SQL as the superuser on `database`; returns the first column of the first row, or
  // "(error) <message>".
  std::string Query(const std::string& database, const std::string& sql) const;

  // Whether this machine has PostgreSQL's server binaries.
  static bool Available();

 private:
  ScopedTempDir dir_;
  int port_;
  pid_t pid_ = -1;
  bool initialised_ = false;
  std::string tls_cert_, tls_key_;
};

}  // namespace gpuvpa::testing
