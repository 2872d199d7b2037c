// Crash safety: a child process saving checkpoints in a loop is killed with SIGKILL at random
// moments; every time, the checkpoint on disk must load.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "recommender/checkpoint/checkpoint.h"
#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

using testing::kGiB;

constexpr int kKills = 60;
constexpr double kStart = 1793577600;

// Sized so that a save takes a few milliseconds: kills at random delays land in every phase
// (encoding, linking PATH.prev, writing, fsync, renaming).
FleetStore MakeFleet(int workloads) {
  FleetStore store;
  for (int i = 0; i < workloads; ++i) {
    const uint32_t row = testing::TrackTestWorkload(store, "w" + std::to_string(i));
    for (int h = 0; h < 24; ++h)
      store.AddSample(
          row, {kStart + h * 3600.0, (1 + (i + h) % 60) * kGiB, 0.01 * ((i * h) % 100), false});
  }
  return store;
}

[[noreturn]] void SaveForever(FleetStore& store, const std::string& path) {
  for (uint64_t n = 0;; ++n) {
    const auto row = static_cast<uint32_t>(n % store.size());
    store.AddSample(row,
                    {kStart + 86400 + static_cast<double>(n), (1 + n % 70) * kGiB, 0.5, false});
    if (!SaveCheckpoint(store, path, static_cast<double>(n)).ok()) _exit(3);
  }
}

int CountTemporaryFiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

TEST(CheckpointCrashTest, CheckpointOnDiskAlwaysLoadsAfterSigkill) {
  testing::ScopedTempDir dir;
  const std::string path = dir.Path("fleet.ckpt");
  FleetStore store = MakeFleet(300);
  ASSERT_TRUE(SaveCheckpoint(store, path, 0).ok());

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_us(500, 40000);
  int killed_inside_a_write = 0;
  for (int i = 0; i < kKills; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) SaveForever(store, path);
    ::usleep(static_cast<useconds_t>(delay_us(rng)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child ended on its own (status " << status << "): a save failed";

    const int temporaries = CountTemporaryFiles(dir.Path(""));
    killed_inside_a_write += temporaries > 0 ? 1 : 0;
    FleetStore loaded;
    Result<CheckpointLoad> load = LoadCheckpoint(path, loaded);
    ASSERT_TRUE(load.ok()) << "kill " << i << ": " << load.status().message();
    ASSERT_EQ(loaded.size(), store.size()) << "kill " << i;
    ASSERT_EQ(CountTemporaryFiles(dir.Path("")), 0) << "loading cleans up after the crash";
  }
  std::cout << "[ crash    ] " << kKills << " kills, " << killed_inside_a_write
            << " left a half-written temporary file behind\n";
}

}  // namespace
}  // namespace gpuvpa::recommender
