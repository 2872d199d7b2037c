// Crash safety: a child process appending actions in a loop is killed with SIGKILL at random
// moments; every acknowledged row must be there afterwards and the database must be intact.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include "core/cost/ledger.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

constexpr int kKills = 60;
constexpr int kBatch = 20;

std::string Id(int child, uint32_t n) {
  return "crash-" + std::to_string(child) + "-" + std::to_string(n);
}

// Appends batches forever; after each acknowledged batch, reports how many rows are acknowledged.
[[noreturn]] void AppendForever(const std::string& path, int child, int report_fd) {
  Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  if (!ledger.ok()) _exit(3);
  for (uint32_t n = 0;; n += kBatch) {
    std::vector<LedgerAction> batch(kBatch);
    for (uint32_t k = 0; k < kBatch; ++k) {
      LedgerAction& a = batch[k];
      a.action_id = Id(child, n + k);
      a.time_s = n + k;
      a.kind = ActionKind::kMeteredPeriod;
      a.status = ActionStatus::kApplied;
      a.namespace_name = "ns";
      a.workload = "w" + std::to_string(k);
      a.cost_center = "cc";
      a.metered = 1000 + k;
      a.evidence_json = R"({"replicas":1})";
    }
    if (!(*ledger)->Append(batch).ok()) _exit(4);
    const uint32_t acknowledged = n + kBatch;
    if (::write(report_fd, &acknowledged, sizeof acknowledged) != sizeof acknowledged) _exit(5);
  }
}

TEST(LedgerCrashTest, EveryAcknowledgedRowSurvivesSigkill) {
  testing::ScopedTempDir tmp;
  const std::string path = tmp.Path("ledger.db");
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_us(1000, 60000);
  int64_t acknowledged_total = 0;
  for (int child = 0; child < kKills; ++child) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      AppendForever(path, child, fds[1]);
    }
    ::close(fds[1]);
    ::usleep(static_cast<useconds_t>(delay_us(rng)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child failed on its own: " << status;
    uint32_t acknowledged = 0;
    for (uint32_t v; ::read(fds[0], &v, sizeof v) == sizeof v;) acknowledged = v;
    ::close(fds[0]);
    acknowledged_total += acknowledged;

    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger.ok()) << "kill " << child << ": " << ledger.status().message();
    EXPECT_EQ(*(*ledger)->IntegrityCheck(), "ok") << "kill " << child;
    for (uint32_t n = 0; n < acknowledged; ++n)
      ASSERT_TRUE(*(*ledger)->Contains(Id(child, n)))
          << "acknowledged row " << Id(child, n) << " lost";
  }
  Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok());
  EXPECT_GE(*(*ledger)->CountRows(), acknowledged_total);
  std::cout << "[ crash    ] " << kKills << " kills, " << acknowledged_total
            << " acknowledged rows, " << *(*ledger)->CountRows() << " rows in the ledger\n";
}

}  // namespace
}  // namespace gpuvpa
