// The PostgreSQL ledger under faults, against a real PostgreSQL 15: the server stopped in the
// middle of appends (a spooling writer keeps the rows and moves them once, when it is back),
// the connection killed in the middle of a batch (no partial batch), and several writers
// appending the same ids at once (each id once).
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/cost/ledger.h"
#include "core/cost/ledger_spool.h"
#include "test/support/ledger_backends.h"
#include "test/support/test_certs.h"

namespace gpuvpa {
namespace {

LedgerAction Row(int i, const std::string& prefix = "row") {
  LedgerAction a;
  a.action_id = prefix + "/" + std::to_string(i);
  a.time_s = 1'000 + i;
  a.kind = ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "ns";
  a.workload = "w" + std::to_string(i % 7);
  a.cost_center = i % 2 ? "search" : "research";
  a.gpu_model = "H100-80GB";
  a.period_start_s = a.time_s;
  a.period_end_s = a.time_s + 60;
  a.allocated = 1'000 + i;
  a.used_vram = 500 + i / 2;
  return a;
}

std::vector<LedgerAction> Rows(int from, int to, const std::string& prefix = "row") {
  std::vector<LedgerAction> rows;
  for (int i = from; i < to; ++i) rows.push_back(Row(i, prefix));
  return rows;
}

class LedgerPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(place_.Prepare(&error)) << error;
    Result<std::unique_ptr<Ledger>> l = Ledger::Open(place_.url());
    ASSERT_TRUE(l.ok()) << l.status().message();
    ledger_ = std::move(l).value();
  }
  int64_t Sum(const std::string& column) {
    return std::stoll(
        place_.postgres()->Query("ledger", "SELECT COALESCE(SUM(" + column + "), 0) FROM actions"));
  }
  testing::LedgerPlace place_{testing::LedgerBackend::kPostgres};
  std::unique_ptr<Ledger> ledger_;
};

// The database goes away between appends: rows wait in the spool (Append still says OK), and
// the first append after it is back moves them, each once.
TEST_F(LedgerPostgresTest, RowsAppendedWhileTheDatabaseIsDownAreSpooledAndMovedOnce) {
  SpoolingLedgerSink sink(*ledger_, place_.temp().Path("ledger.spool"));
  ASSERT_TRUE(sink.Append(Rows(0, 100)).ok());
  place_.postgres()->Stop();
  Result<size_t> during = sink.Append(Rows(100, 250));
  ASSERT_TRUE(during.ok()) << during.status().message();
  EXPECT_EQ(*during, 0u) << "nothing reached the database";
  EXPECT_EQ(sink.spooled_rows(), 150u);
  Result<size_t> again = sink.Append(Rows(100, 250));  // a writer retrying the same rows
  ASSERT_TRUE(again.ok());
  std::string error;
  ASSERT_TRUE(place_.postgres()->Start(&error)) << error;
  Result<size_t> after = sink.Append(Rows(250, 300));
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(*ledger_->CountRows(), 300);
  int64_t expected = 0;
  for (const LedgerAction& a : Rows(0, 300)) expected += a.allocated;
  EXPECT_EQ(Sum("allocated_micro_usd"), expected);
  EXPECT_EQ(*sink.MoveSpooled(), 0u) << "the spool is empty";
}

// The writer's connection is terminated by the server in the middle of a large batch: the
// batch is all there or not at all, the error is UNAVAILABLE, and the retry writes it once.
TEST_F(LedgerPostgresTest, AConnectionKilledMidBatchLeavesNoPartialBatch) {
  const std::vector<LedgerAction> batch = Rows(0, 60'000, "big");
  std::atomic<bool> done{false};
  std::thread killer([&] {
    while (!done) {
      place_.postgres()->Query(
          "ledger",
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'ledger' AND "
          "state <> 'idle' AND pid <> pg_backend_pid() AND query LIKE 'INSERT INTO actions%'");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  Result<size_t> first = ledger_->Append(batch);
  done = true;
  killer.join();
  const int64_t rows = *ledger_->CountRows();
  if (first.ok()) {
    GTEST_SKIP() << "the batch committed before the kill landed; nothing to check";
  }
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable) << first.status().message();
  EXPECT_EQ(rows, 0) << "no partial batch";
  Result<size_t> retried = ledger_->Append(batch);
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  EXPECT_EQ(*retried, batch.size());
  EXPECT_EQ(*ledger_->CountRows(), 60'000);
}

// Eight writers append overlapping batches of the same ids at once, interleaved: every id is
// stored once and the sums equal one writer's serial run.
TEST_F(LedgerPostgresTest, EightConcurrentWritersOfTheSameIdsStoreEachOnce) {
  constexpr int kWriters = 8;
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  std::atomic<size_t> inserted{0};
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      Result<std::unique_ptr<Ledger>> l = Ledger::Open(place_.url());
      if (!l.ok()) {
        ++failures;
        return;
      }
      // Each writer walks the same 4,000 ids in batches of 250, starting at its own offset.
      for (int b = 0; b < 16; ++b) {
        const int start = ((b + 2 * w) % 16) * 250;
        Result<size_t> r = (*l)->Append(Rows(start, start + 250));
        if (!r.ok()) {
          ++failures;
          ADD_FAILURE() << r.status().message();
          return;
        }
        inserted += *r;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(inserted, 4'000u) << "each id reported new exactly once";
  EXPECT_EQ(*ledger_->CountRows(), 4'000);
  int64_t expected = 0;
  for (const LedgerAction& a : Rows(0, 4'000)) expected += a.allocated;
  EXPECT_EQ(Sum("allocated_micro_usd"), expected);
}

// Writers need only the role the README gives them: with the schema current, opening runs no
// DDL; the role can append and read, and cannot drop, update or delete.
TEST_F(LedgerPostgresTest, AWriterRoleThatCanOnlyInsertAndSelectIsEnough) {
  for (const char* sql :
       {"CREATE ROLE gpuvpa_writer LOGIN", "GRANT CONNECT ON DATABASE ledger TO gpuvpa_writer",
        "GRANT USAGE ON SCHEMA public TO gpuvpa_writer",
        "GRANT SELECT, INSERT ON actions, charge_marks, gpuvpa_schema TO gpuvpa_writer",
        "GRANT SELECT ON ledger_daily TO gpuvpa_writer",
        "GRANT USAGE ON SEQUENCE actions_seq_seq, charge_marks_seq_seq TO gpuvpa_writer"})
    ASSERT_EQ(place_.RawExec(sql), "") << sql;
  std::string url = place_.url();
  url.replace(url.find("gpuvpa@"), 7, "gpuvpa_writer@");
  Result<std::unique_ptr<Ledger>> writer = Ledger::Open(url, {.cluster = "east"});
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_EQ(*(*writer)->Append(Rows(0, 10), std::vector<ChargeMark>{{"s", 1}}), 10u);
  ASSERT_TRUE((*writer)->QueryShowback({}).ok());
  const std::string as_writer = "SET ROLE gpuvpa_writer; ";
  EXPECT_NE(place_.RawExec(as_writer + "DROP TABLE actions"), "");
  EXPECT_NE(place_.RawExec(as_writer + "DELETE FROM actions"), "");
  EXPECT_NE(place_.RawExec(as_writer + "UPDATE actions SET allocated_micro_usd = 0"), "");
  EXPECT_NE(place_.RawExec(as_writer + "UPDATE ledger_daily SET allocated_micro_usd = 0"), "")
      << "the daily totals are written by the schema owner's trigger only";
  EXPECT_EQ(*ledger_->CountRows(), 10);
}

// The URL's sslmode is the connection's: verify-full against the CA that signed the server's
// certificate connects over TLS; against another CA, or requiring TLS of a server without it,
// the ledger is UNAVAILABLE and says why.
TEST(LedgerPostgresTlsTest, SslModeInTheUrlIsHonoured) {
  testing::ScopedTempDir certs;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificates(certs.dir().string(), &error)) << error;
  testing::PostgresServer tls_server;
  tls_server.EnableTls(certs.Path("server.pem"), certs.Path("server.key"));
  ASSERT_TRUE(tls_server.Start(&error)) << error;
  const std::string db = tls_server.CreateDatabase("ledger", &error);
  ASSERT_FALSE(db.empty()) << error;
  const std::string verified = db + "?sslmode=verify-full&sslrootcert=" + certs.Path("ca.pem");
  Result<std::unique_ptr<Ledger>> l = Ledger::Open(verified);
  ASSERT_TRUE(l.ok()) << l.status().message();
  ASSERT_EQ(*(*l)->Append(Row(1)), 1u);
  EXPECT_EQ(tls_server.Query("ledger",
                             "SELECT COUNT(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                             "WHERE ssl AND datname = 'ledger' AND pid <> pg_backend_pid()"),
            "1")
      << "the ledger's connection is the one over TLS";
  Result<std::unique_ptr<Ledger>> wrong_ca = Ledger::Open(
      db + "?sslmode=verify-full&connect_timeout=2&sslrootcert=" + certs.Path("other-ca.pem"));
  ASSERT_FALSE(wrong_ca.ok());
  EXPECT_EQ(wrong_ca.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(wrong_ca.status().message().find("certificate"), std::string::npos)
      << wrong_ca.status().message();

  testing::PostgresServer plain;
  ASSERT_TRUE(plain.Start(&error)) << error;
  const std::string plain_db = plain.CreateDatabase("ledger", &error);
  Result<std::unique_ptr<Ledger>> required = Ledger::Open(plain_db + "?sslmode=require");
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(required.status().message().find("SSL"), std::string::npos)
      << required.status().message();
}

// A deadlock aborts the ledger's transaction (SQLSTATE 40P01): the append is retried, not
// failed. Another session holds id B and then waits for id A, which the ledger's batch [A, B]
// holds while it waits for B: PostgreSQL's deadlock check runs first in the session that waited
// first, the ledger's, and aborts it; the other session's insert then goes through, it rolls
// back, and the retried batch writes both rows.
TEST_F(LedgerPostgresTest, ADeadlockedAppendIsRetried) {
  PGconn* other = PQconnectdb(place_.url().c_str());
  ASSERT_EQ(PQstatus(other), CONNECTION_OK);
  auto exec = [&](const std::string& sql) {
    PGresult* r = PQexec(other, sql.c_str());
    std::string error = PQresultStatus(r) == PGRES_COMMAND_OK ? "" : PQresultErrorMessage(r);
    PQclear(r);
    return error;
  };
  auto insert = [](const std::string& id) {
    return "INSERT INTO actions (cluster, action_id, time_s, kind, status, namespace, workload, "
           "cost_center, gpu_model, before, after, monthly_before_micro_usd, "
           "monthly_after_micro_usd, period_start_s, period_end_s, allocated_milli_gpu_s, "
           "allocated_micro_usd, usage_measured, used_vram_micro_usd, used_sm_micro_usd, "
           "metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, evidence) VALUES "
           "('default', '" +
           id +
           "', 1, 'allocated_usage', 'applied', 'ns', 'w', 'cc', '', '', '', 0, 0, 1, 61, 0, "
           "7, 1, 0, 0, 0, 0, 0, '{}')";
  };
  const std::vector<LedgerAction> batch = {Row(1, "dead"), Row(2, "dead")};  // A, B
  ASSERT_EQ(exec("BEGIN"), "");
  ASSERT_EQ(exec(insert(batch[1].action_id)), "");  // holds B
  Result<size_t> appended = InternalError("not run");
  std::thread writer([&] { appended = ledger_->Append(batch); });  // holds A, waits for B
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string other_insert = exec(insert(batch[0].action_id));  // waits for A: a cycle
  EXPECT_EQ(other_insert, "") << "the ledger's session waited first and is the one aborted";
  ASSERT_EQ(exec("ROLLBACK"), "");
  writer.join();
  PQfinish(other);
  ASSERT_TRUE(appended.ok()) << appended.status().message();
  EXPECT_EQ(*appended, 2u);
  EXPECT_EQ(Sum("allocated_micro_usd"), batch[0].allocated + batch[1].allocated);
}

// The ledger's credentials never reach an error message.
TEST_F(LedgerPostgresTest, AnUnreachableDatabaseIsUnavailableAndItsPasswordIsNotShown) {
  place_.postgres()->Stop();
  Result<std::unique_ptr<Ledger>> l = Ledger::Open(
      "postgresql://gpuvpa:s3cret-pw@127.0.0.1:" + std::to_string(place_.postgres()->port()) +
      "/ledger?connect_timeout=2");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(l.status().message().find("s3cret-pw"), std::string::npos) << l.status().message();
  EXPECT_NE(l.status().message().find("gpuvpa:***@127.0.0.1"), std::string::npos)
      << l.status().message();
  Result<size_t> r = ledger_->Append(Row(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
}

}  // namespace
}  // namespace gpuvpa
