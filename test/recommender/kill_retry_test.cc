// Exactly once under crashes: `gpuvpa recommend --checkpoint --ledger` runs in a child process
// that is SIGKILLed at a random moment, then the same command is retried to completion. Every
// time the checkpoint must load, the ledger must pass integrity_check, and the final showback
// must equal an uninterrupted run's to the micro-dollar.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "core/base/time_format.h"
#include "core/cost/ledger.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/cmd/commands.h"
#include "recommender/input/demo_fleet.h"
#include "test/recommender/test_util.h"
#include "test/support/ledger_backends.h"

namespace gpuvpa::recommender {
namespace {

constexpr int kRuns = 50;

// On both ledger backends: a SQLite file per run, or a database per run on one PostgreSQL.
class KillRetryTest : public ::testing::TestWithParam<gpuvpa::testing::LedgerBackend> {
 protected:
  static void SetUpTestSuite() {
    // Two daily windows of the demo fleet, as a cron would feed them (day 2 overlaps day 1 by
    // an hour, so the retry also exercises skipping what is already ingested).
    DemoFleetOptions options;
    options.days = 2;
    const std::string csv = GenerateDemoFleetTrace(options);
    std::istringstream in(csv);
    std::string header, line;
    std::getline(in, header);
    day1_ = new std::string(header + "\n");
    day2_ = new std::string(header + "\n");
    const double split = options.start_time_s + 86400;
    while (std::getline(in, line)) {
      const double t = *ParseTimestamp(line.substr(0, line.find(',')));
      if (t < split) *day1_ += line + "\n";
      if (t >= split - 3600) *day2_ += line + "\n";
    }
  }
  static void TearDownTestSuite() {
    delete day1_;
    delete day2_;
  }

  void SetUp() override {
    std::string error;
    ASSERT_TRUE(place_.Prepare(&error)) << error;
  }
  struct Paths {
    std::string day1, day2, checkpoint, ledger;  // ledger: its URL
    std::vector<std::string> ledger_flag;        // how the command is told
  };
  Paths PrepareRun(const std::string& name) {
    Paths p{dir_.Path(name + "-day1.csv"),
            dir_.Path(name + "-day2.csv"),
            dir_.Path(name + ".ckpt"),
            dir_.Path(name + ".db"),
            {"--ledger", dir_.Path(name + ".db")}};
    if (place_.postgres() != nullptr) {
      std::string error;
      p.ledger = place_.postgres()->CreateDatabase(name, &error);
      EXPECT_FALSE(p.ledger.empty()) << error;
      std::ofstream(dir_.Path(name + ".url")) << p.ledger << "\n";
      p.ledger_flag = {"--ledger-url-file", dir_.Path(name + ".url")};
    }
    std::ofstream(p.day1) << *day1_;
    std::ofstream(p.day2) << *day2_;
    return p;
  }
  static std::vector<std::string> Args(const Paths& p, const std::string& trace) {
    std::vector<std::string> args = {"--trace",    trace,   "--checkpoint",
                                     p.checkpoint, "--now", "2026-12-01"};
    args.insert(args.end(), p.ledger_flag.begin(), p.ledger_flag.end());
    return args;
  }
  static int Recommend(const Paths& p, const std::string& trace) {
    std::ostringstream out, err;
    const int rc = RunRecommendCommand(Args(p, trace), out, err);
    EXPECT_EQ(rc, 0) << err.str();
    return rc;
  }
  static Showback Total(const Paths& p) {
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(p.ledger)).value();
    EXPECT_EQ(*ledger->IntegrityCheck(), "ok");
    return *ledger->QueryShowback({});
  }

  static std::string* day1_;
  static std::string* day2_;
  testing::ScopedTempDir dir_;
  gpuvpa::testing::LedgerPlace place_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(Backends, KillRetryTest,
                         ::testing::Values(gpuvpa::testing::LedgerBackend::kSqlite,
                                           gpuvpa::testing::LedgerBackend::kPostgres),
                         gpuvpa::testing::BackendName);
std::string* KillRetryTest::day1_ = nullptr;
std::string* KillRetryTest::day2_ = nullptr;

void ExpectSameMoney(const Showback& a, const Showback& b) {
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].group, b.groups[i].group);
    EXPECT_EQ(a.groups[i].allocated_gpu_time, b.groups[i].allocated_gpu_time) << a.groups[i].group;
    EXPECT_EQ(a.groups[i].allocated, b.groups[i].allocated) << a.groups[i].group;
    EXPECT_EQ(a.groups[i].used_vram, b.groups[i].used_vram) << a.groups[i].group;
    EXPECT_EQ(a.groups[i].used_sm, b.groups[i].used_sm) << a.groups[i].group;
  }
}

TEST_P(KillRetryTest, ARetryAfterSigkillAtAnyMomentChargesExactlyWhatAnUninterruptedRunDoes) {
  // The run length that kill times are drawn over: the median of three uninterrupted runs, so
  // one slow run (a busy machine, another test beside this one) does not spread the kills past
  // the end of most runs.
  const Paths reference = PrepareRun("reference");  // the first timed run, and the expected money
  std::vector<int64_t> run_lengths_us;
  for (int r = 0; r < 3; ++r) {
    const Paths timed = r == 0 ? reference : PrepareRun("timed" + std::to_string(r));
    ASSERT_EQ(Recommend(timed, timed.day1), 0);
    const auto started = std::chrono::steady_clock::now();
    ASSERT_EQ(Recommend(timed, timed.day2), 0);
    run_lengths_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - started)
                                 .count());
  }
  std::sort(run_lengths_us.begin(), run_lengths_us.end());
  const int64_t run_us = run_lengths_us[1];
  const Showback expected = Total(reference);
  ASSERT_GT(expected.total.allocated, 0);

  std::mt19937 rng(std::random_device{}());
  // Kills spread over the whole run (a forked child starts late, so up to two run lengths;
  // some runs finish first).
  std::uniform_int_distribution<int64_t> delay_us(0, run_us * 2);
  int killed = 0;
  int killed_after_ledger_commit = 0;
  for (int i = 0; i < kRuns; ++i) {
    const Paths p = PrepareRun("run" + std::to_string(i));
    ASSERT_EQ(Recommend(p, p.day1), 0);
    const int64_t rows_before = *std::move(Ledger::Open(p.ledger)).value()->CountRows();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::ostringstream out, err;
      _exit(RunRecommendCommand(Args(p, p.day2), out, err));
    }
    ::usleep(static_cast<useconds_t>(delay_us(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    killed += WIFSIGNALED(status) ? 1 : 0;
    // The checkpoint left behind loads, and the ledger is intact.
    FleetStore loaded;
    ASSERT_TRUE(LoadCheckpoint(p.checkpoint, loaded).ok()) << "run " << i;
    std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(p.ledger)).value();
    ASSERT_EQ(*ledger->IntegrityCheck(), "ok") << "run " << i;
    if (WIFSIGNALED(status) && *ledger->CountRows() > rows_before) ++killed_after_ledger_commit;
    ledger.reset();
    // The retry ends where the uninterrupted run ended, to the micro-dollar.
    ASSERT_EQ(Recommend(p, p.day2), 0);
    ExpectSameMoney(Total(p), expected);
    ASSERT_EQ(Total(p).total.allocated, expected.total.allocated) << "run " << i;
  }
  EXPECT_GT(killed, kRuns / 3) << "children must die mid-run, or the test proves little";
  std::cout << "[          ] " << killed << " of " << kRuns << " runs killed before they finished ("
            << killed_after_ledger_commit << " after the ledger commit); uninterrupted run took "
            << run_us << " us\n";
}

}  // namespace
}  // namespace gpuvpa::recommender
