// Real PostgreSQL servers for tests.
#include "test/support/postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "test/support/process.h"
#include "test/support/sockets.h"

namespace gpuvpa::testing {
namespace {

std::string BinDir() {
  const char* env = std::getenv("GPUVPA_PG_BIN");
  return env != nullptr && *env ? env : "/usr/lib/postgresql/15/bin";
}

// The prefix that runs a command as `postgres` when this process is root; "" otherwise.
std::vector<std::string> AsServerUser() {
  if (::geteuid() != 0) return {};
  const passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) return {"false"};  // nobody to run as: the start fails and says so
  return {"setpriv", "--reuid=" + std::to_string(pw->pw_uid),
          "--regid=" + std::to_string(pw->pw_gid), "--clear-groups", "--"};
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

PostgresServer::PostgresServer() : port_(FreeLocalPort()) {}

PostgresServer::~PostgresServer() { Stop(); }

bool PostgresServer::Available() {
  return std::filesystem::exists(BinDir() + "/postgres") &&
         std::filesystem::exists(BinDir() + "/initdb");
}

bool PostgresServer::Start(std::string* error) {
  const std::string data = dir_.Path("data");
  const std::vector<std::string> as_user = AsServerUser();
  if (!initialised_) {
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr || ::chown(dir_.dir().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        *error = "running as root and there is no postgres user to run PostgreSQL as";
        return false;
      }
    }
    std::string command;
    for (const std::string& a : as_user) command += a + " ";
    command += Quote(BinDir() + "/initdb") + " -D " + Quote(data) +
               " -U gpuvpa --auth=trust --no-sync -E UTF8 --locale=C";
    int rc = 0;
    const std::string out = RunShell(command, &rc);
    if (rc != 0) {
      *error = "initdb failed: " + out;
      return false;
    }
    initialised_ = true;
  }
  std::vector<std::string> tls;
  if (!tls_cert_.empty()) {
    // The key owned by the server's user, mode 0600: PostgreSQL refuses any other.
    const std::string cert = dir_.Path("server.crt"), key = dir_.Path("server.key");
    std::filesystem::copy_file(tls_cert_, cert, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(tls_key_, key, std::filesystem::copy_options::overwrite_existing);
    ::chmod(key.c_str(), 0600);
    if (::geteuid() == 0)
      if (const passwd* pw = ::getpwnam("postgres"))
        for (const std::string& f : {cert, key})
          if (::chown(f.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
            *error = "cannot give " + f + " to the postgres user";
            return false;
          }
    tls = {"-c", "ssl=on", "-c", "ssl_cert_file=" + cert, "-c", "ssl_key_file=" + key};
  }
  std::vector<std::string> args = as_user;
  for (const std::string& a :
       {BinDir() + "/postgres", std::string("-D"), data, std::string("-p"), std::to_string(port_),
        std::string("-h"), std::string("127.0.0.1"), std::string("-k"), dir_.dir().string(),
        std::string("-c"), std::string("fsync=off"), std::string("-c"),
        std::string("max_connections=50")})
    args.push_back(a);
  args.insert(args.end(), tls.begin(), tls.end());
  pid_ = SpawnProcess(args, dir_.Path("postgres.log"));
  if (pid_ < 0) {
    *error = "cannot start " + BinDir() + "/postgres";
    return false;
  }
  const std::string ping = "host=127.0.0.1 port=" + std::to_string(port_) +
                           " user=gpuvpa dbname=postgres connect_timeout=1";
  for (int i = 0; i < 400; ++i) {
    if (PQping(ping.c_str()) == PQPING_OK) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  *error = "postgres on port " + std::to_string(port_) +
           " did not accept connections: " + ReadTextFile(dir_.Path("postgres.log"));
  Kill();
  return false;
}

void PostgresServer::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGINT);
  if (WaitForExit(pid_, std::chrono::seconds(20)) < 0) KillProcess(pid_);
}

void PostgresServer::Kill() { KillProcess(pid_); }

std::string PostgresServer::Uri(const std::string& database) const {
  return "postgresql://gpuvpa@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::CreateDatabase(const std::string& name, std::string* error) const {
  const std::string out = Query("postgres", "CREATE DATABASE " + name);
  if (out.starts_with("(error)")) {
    *error = out;
    return "";
  }
  return Uri(name);
}

std::string PostgresServer::Query(const std::string& database, const std::string& sql) const {
  PGconn* conn = PQconnectdb(Uri(database).c_str());
  std::string out;
  if (PQstatus(conn) != CONNECTION_OK) {
    out = std::string("(error) ") + PQerrorMessage(conn);
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_TUPLES_OK)
      out = PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    else if (status != PGRES_COMMAND_OK)
      out = std::string("(error) ") + PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(conn);
  return out;
}

}  // namespace gpuvpa::testing
