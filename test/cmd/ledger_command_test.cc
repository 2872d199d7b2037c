// gpuvpa ledger migrate | copy, and showback on PostgreSQL, against a real PostgreSQL 15: the
// demo's SQLite ledger copied with every figure kept, a copy killed at random points and
// resumed, eight copies into one database at once, and the commands' usage errors.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "cmd/commands.h"
#include "core/cost/ledger.h"
#include "core/cost/showback.h"
#include "test/support/ledger_backends.h"
#include "test/support/process.h"

namespace gpuvpa {
namespace {

using cmd::RunLedgerCommand;
using cmd::RunShowbackCommand;

LedgerAction Row(int i, const std::string& cluster = "") {
  LedgerAction a;
  a.cluster = cluster;
  a.action_id = "usage/" + std::to_string(i);
  a.time_s = 1'700'000'000 + i;
  a.kind = i % 5 ? ActionKind::kAllocatedUsage : ActionKind::kMeteredPeriod;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "ns" + std::to_string(i % 3);
  a.workload = "w" + std::to_string(i % 11);
  a.cost_center = "cc" + std::to_string(i % 4);
  a.gpu_model = "H100-80GB";
  a.period_start_s = a.time_s;
  a.period_end_s = a.time_s + 3600;
  a.allocated = 2'640'000 + i;
  a.used_vram = 1'000'000 + i;
  a.metered = i % 5 ? 0 : 2'000'000 + i;
  a.allocated_gpu_time = 3'600'000;
  return a;
}

class LedgerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(pg_.Prepare(&error)) << error;
    std::ofstream(UrlFile()) << pg_.url() << "\n";
  }
  std::string UrlFile() const { return pg_.temp().Path("ledger-url"); }
  int Run(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return RunLedgerCommand(args, out_, err_);
  }
  // A SQLite ledger with `n` rows over two clusters, and charge marks.
  std::string SqliteLedger(int n, const std::string& name = "source.db") {
    const std::string path = pg_.temp().Path(name);
    for (const char* cluster : {"east", "west"}) {
      std::unique_ptr<Ledger> l = std::move(Ledger::Open(path, {.cluster = cluster})).value();
      std::vector<LedgerAction> rows;
      for (int i = 0; i < n / 2; ++i) rows.push_back(Row(i));
      EXPECT_TRUE(l->Append(rows, std::vector<ChargeMark>{{"w1/gpu0", 1.5e9}}).ok());
    }
    return path;
  }
  testing::LedgerPlace pg_{testing::LedgerBackend::kPostgres};
  std::ostringstream out_, err_;
};

// The demo's ledger, as an earlier build wrote it, copied into PostgreSQL: the same rows, the
// same marks and the same showback to the cent; a re-run copies nothing.
TEST_F(LedgerCommandTest, TheDemoLedgerCopiesIntoPostgresWithEveryFigureKept) {
  const std::string sqlite = pg_.temp().Path("demo.db");
  std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db",
                             sqlite);
  ASSERT_EQ(Run({"migrate", "--ledger", sqlite, "--cluster", "demo"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("schema version " + std::to_string(Ledger::kSchemaVersion)),
            std::string::npos)
      << out_.str();
  ASSERT_EQ(Run({"copy", "--from", "sqlite:" + sqlite, "--to-url-file", UrlFile()}), 0)
      << err_.str();
  EXPECT_NE(out_.str().find("copied 15 rows (15 new) and 11 charge marks"), std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("verified: 15 rows"), std::string::npos) << out_.str();
  // Both sides check out, daily totals included (the SQLite one's filled by the migration).
  for (const std::vector<std::string>& where : std::vector<std::vector<std::string>>{
           {"--ledger", sqlite}, {"--ledger-url-file", UrlFile()}}) {
    std::vector<std::string> args = {"check"};
    args.insert(args.end(), where.begin(), where.end());
    ASSERT_EQ(Run(args), 0) << err_.str();
    EXPECT_NE(out_.str().find(": ok (schema version " + std::to_string(Ledger::kSchemaVersion) +
                              ", 15 rows; the daily totals equal the rows)"),
              std::string::npos)
        << out_.str();
  }
  // A hand edit of the daily totals is found and named.
  const std::string first_total =
      " WHERE (day, cluster, namespace, workload, cost_center, gpu_model, before) IN (SELECT day, "
      "cluster, namespace, workload, cost_center, gpu_model, before FROM ledger_daily ORDER BY 1, "
      "2, 3, 4, 5, 6, 7 LIMIT 1)";
  ASSERT_EQ(pg_.RawExec("UPDATE ledger_daily SET row_count = row_count + 1" + first_total), "");
  EXPECT_EQ(Run({"check", "--ledger-url-file", UrlFile()}), 1);
  EXPECT_NE(err_.str().find("ledger_daily differs from the rows it sums in 1 (day, allocation)"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(Run({"check", "--ledger", pg_.temp().Path("missing.db")}), 1);
  EXPECT_NE(err_.str().find("missing.db"), std::string::npos) << err_.str();
  ASSERT_EQ(pg_.RawExec("UPDATE ledger_daily SET row_count = row_count - 1" + first_total), "");
  ASSERT_EQ(Run({"copy", "--from", sqlite, "--to-url-file", UrlFile()}), 0) << err_.str();
  EXPECT_NE(out_.str().find("copied 15 rows (0 new) and 0 charge marks"), std::string::npos)
      << out_.str();

  std::ostringstream on_sqlite, on_postgres, err;
  ASSERT_EQ(RunShowbackCommand({"--ledger", sqlite, "--format", "csv"}, on_sqlite, err), 0);
  ASSERT_EQ(
      RunShowbackCommand({"--ledger-url-file", UrlFile(), "--format", "csv"}, on_postgres, err), 0)
      << err.str();
  EXPECT_EQ(on_postgres.str(), on_sqlite.str());
  std::ostringstream summary;
  ASSERT_EQ(RunShowbackCommand(
                {"--ledger-url-file", UrlFile(), "--format", "summary", "--cluster", "demo"},
                summary, err),
            0);
  EXPECT_NE(summary.str().find("$5,698.95 of $7,436.39"), std::string::npos) << summary.str();
  std::ostringstream none;
  ASSERT_EQ(RunShowbackCommand({"--ledger-url-file", UrlFile(), "--format", "csv", "--cluster",
                                "elsewhere", "--group-by", "cluster"},
                               none, err),
            0);
  EXPECT_EQ(none.str().find("demo"), std::string::npos) << none.str();
}

// `gpuvpa ledger copy` killed with SIGKILL at random points 20 times, then run to the end: the
// destination equals the source, row for row and cent for cent.
TEST_F(LedgerCommandTest, ACopyKilledAtRandomPointsAndResumedEqualsTheSource) {
  const std::string source = SqliteLedger(20'000);
  const std::string gpuvpa = std::string(GPUVPA_BIN_DIR) + "/gpuvpa";
  const std::vector<std::string> copy = {gpuvpa,    "ledger",       "copy",
                                         "--from",  source,         "--to-url-file",
                                         UrlFile(), "--batch-rows", "250"};
  // How long an uninterrupted copy takes, into a scratch database: the kills land inside it.
  std::string error;
  const std::string scratch = pg_.postgres()->CreateDatabase("scratch", &error);
  ASSERT_FALSE(scratch.empty()) << error;
  std::ofstream(pg_.temp().Path("scratch-url")) << scratch << "\n";
  std::vector<std::string> timed = copy;
  timed[6] = pg_.temp().Path("scratch-url");
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = testing::SpawnProcess(timed, pg_.temp().Path("timed.log"));
  ASSERT_EQ(testing::WaitForExit(pid, std::chrono::seconds(120)), 0)
      << testing::ReadTextFile(pg_.temp().Path("timed.log"));
  const int full_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  std::mt19937 rng(20261205);
  int killed = 0;
  for (int k = 0; k < 20; ++k) {
    pid = testing::SpawnProcess(copy, pg_.temp().Path("copy.log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % (full_ms + 1)));
    if (::kill(pid, SIGKILL) == 0) ++killed;
    testing::WaitForExit(pid, std::chrono::seconds(30));
  }
  pid = testing::SpawnProcess(copy, pg_.temp().Path("copy.log"));
  ASSERT_EQ(testing::WaitForExit(pid, std::chrono::seconds(120)), 0)
      << testing::ReadTextFile(pg_.temp().Path("copy.log"));
  const std::string log = testing::ReadTextFile(pg_.temp().Path("copy.log"));
  EXPECT_NE(log.find("verified: 20000 rows"), std::string::npos) << log;
  EXPECT_GT(killed, 0);
  std::unique_ptr<Ledger> from = std::move(Ledger::Open(source)).value();
  std::unique_ptr<Ledger> to = std::move(Ledger::Open(pg_.url())).value();
  EXPECT_EQ(*to->CountRows(), 20'000);
  EXPECT_EQ(*to->Totals(), *from->Totals());
  EXPECT_EQ(*to->AllChargeMarks(), *from->AllChargeMarks());
}

// Eight copies of overlapping ledgers (the same ids, other order) into one database at once:
// every id once, the sums of one serial copy.
TEST_F(LedgerCommandTest, EightProcessesCopyingOverlappingRowsStoreEachIdOnce) {
  std::vector<std::string> sources;
  for (int p = 0; p < 8; ++p) {
    const std::string path = pg_.temp().Path("part" + std::to_string(p) + ".db");
    std::unique_ptr<Ledger> l = std::move(Ledger::Open(path, {.cluster = "east"})).value();
    std::vector<LedgerAction> rows;
    for (int i = 0; i < 3'000; ++i) rows.push_back(Row((i + 700 * p) % 6'000));
    ASSERT_TRUE(l->Append(rows).ok());
    sources.push_back(path);
  }
  std::vector<pid_t> pids;
  for (size_t p = 0; p < sources.size(); ++p)
    pids.push_back(testing::SpawnProcess(
        {std::string(GPUVPA_BIN_DIR) + "/gpuvpa", "ledger", "copy", "--from", sources[p],
         "--to-url-file", UrlFile(), "--batch-rows", "200", "--others-write"},
        pg_.temp().Path("copy" + std::to_string(p) + ".log")));
  for (size_t p = 0; p < pids.size(); ++p)
    EXPECT_EQ(testing::WaitForExit(pids[p], std::chrono::seconds(120)), 0)
        << testing::ReadTextFile(pg_.temp().Path("copy" + std::to_string(p) + ".log"));
  // The serial run: every distinct row once.
  const std::string serial = pg_.temp().Path("serial.db");
  std::unique_ptr<Ledger> s = std::move(Ledger::Open(serial, {.cluster = "east"})).value();
  for (const std::string& path : sources) {
    std::unique_ptr<Ledger> l = std::move(Ledger::Open(path)).value();
    ASSERT_TRUE(s->Append(l->ReadRows(0, 10'000)->rows).ok());
  }
  std::unique_ptr<Ledger> pg = std::move(Ledger::Open(pg_.url())).value();
  EXPECT_EQ(*pg->CountRows(), *s->CountRows());
  EXPECT_EQ(*pg->Totals(), *s->Totals());
}

TEST_F(LedgerCommandTest, UsageErrorsNameTheFlagAndNeverShowAPassword) {
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_NE(out_.str().find("copy"), std::string::npos);
  EXPECT_EQ(Run({"copy", "--help"}), 0);
  EXPECT_EQ(Run({"migrat"}), 2);
  EXPECT_NE(err_.str().find("migrate"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"migrate", "--ledger", "postgresql://u:hunter2@db/ledger"}), 2);
  EXPECT_NE(err_.str().find("--ledger-url-file"), std::string::npos) << err_.str();
  EXPECT_EQ(err_.str().find("hunter2"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"copy", "--from", pg_.temp().Path("missing.db"), "--to-url-file", UrlFile()}), 1);
  EXPECT_NE(err_.str().find("no ledger at"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"migrate", "--ledger-url-file", pg_.temp().Path("nope")}), 1);
  EXPECT_NE(err_.str().find("nope"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"migrate", "--ledger", pg_.temp().Path("x.db"), "--cluster", "Not_A_Label"}), 2);
  EXPECT_NE(err_.str().find("Not_A_Label"), std::string::npos) << err_.str();
  // A database newer than this build is refused, by migrate and by every writer.
  ASSERT_EQ(Run({"migrate", "--ledger-url-file", UrlFile()}), 0) << err_.str();
  EXPECT_EQ(pg_.RawExec("INSERT INTO gpuvpa_schema (version) VALUES (99)"), "");
  EXPECT_EQ(Run({"migrate", "--ledger-url-file", UrlFile()}), 1);
  EXPECT_NE(err_.str().find("newer than this build"), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace gpuvpa
