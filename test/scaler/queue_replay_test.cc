// Queue replay: hand-computed small cases and the two Azure LLM inference traces.
#include "scaler/replay/queue_replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/cost/ledger.h"
#include "core/cost/money.h"
#include "core/cost/price_book.h"
#include "scaler/cmd/replay_command.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::scaler {
namespace {

const std::string kDataDir = GPUVPA_SHARED_DATA_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(QueueReplayTest, OneBurstScalesUpWaitsOutTheColdStartAndScalesToZeroAfterCooldown) {
  QueueReplayOptions o;
  o.service_s = 1;
  o.target = 5;
  o.cold_start_s = 10;
  o.poll_interval_s = 30;
  o.cooldown_s = 300;
  // Ten requests at once: ceil(10 / 5) = 2 replicas, ready at 10 s, five requests each.
  Result<QueueReplayResult> r = ReplayQueue(std::vector<double>(10, 1000.0), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->peak_replicas, 2);
  EXPECT_EQ(r->cold_starts, 1);
  EXPECT_EQ(r->replica_starts, 2);
  EXPECT_DOUBLE_EQ(r->wait_max_s, 14);  // the fifth request of a replica starts at 10 + 4
  EXPECT_DOUBLE_EQ(r->wait_p50_s, 12);
  // Both replicas live from the first tick until the cooldown ends at 300 s.
  EXPECT_DOUBLE_EQ(r->metered_gpu_s, 2 * 300.0);
  EXPECT_DOUBLE_EQ(r->duration_s, 300);
}

TEST(QueueReplayTest, IdleGapsLongerThanTheCooldownScaleToZeroAndSave) {
  QueueReplayOptions o;
  o.service_s = 1;
  o.cold_start_s = 5;
  o.poll_interval_s = 10;
  o.cooldown_s = 60;
  o.stabilization_s = 60;
  std::vector<double> arrivals;
  for (int burst = 0; burst < 3; ++burst)
    for (int i = 0; i < 20; ++i) arrivals.push_back(burst * 3600.0 + i * 0.5);
  Result<QueueReplayResult> r = ReplayQueue(arrivals, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cold_starts, 3);
  EXPECT_GT(r->idle_at_zero_s, 2 * 3000.0);
  EXPECT_LT(r->metered_gpu_s, 0.1 * r->reserved_gpu_s);
}

TEST(QueueReplayTest, ActivationIsStrictlyAboveTheThreshold) {
  QueueReplayOptions o;
  o.activation_threshold = 3;
  o.cooldown_s = 0;
  // Three waiting requests equal the threshold: never active, never served, and said so.
  Result<QueueReplayResult> at = ReplayQueue({0, 0, 0}, o);
  ASSERT_FALSE(at.ok());
  EXPECT_NE(at.status().message().find("activation threshold"), std::string::npos)
      << at.status().message();
  Result<QueueReplayResult> above = ReplayQueue({0, 0, 0, 0}, o);
  ASSERT_TRUE(above.ok());
  EXPECT_EQ(above->cold_starts, 1);
}

TEST(QueueReplayTest, AzureTracesBurstySavesMoreThanSteady) {
  QueueReplayOptions o;
  o.service_s = 0.25;
  o.poll_interval_s = 15;
  o.cooldown_s = 60;
  o.stabilization_s = 60;
  o.cold_start_s = 30;
  Result<std::vector<double>> code =
      ReadArrivals(ReadFile(kDataDir + "/AzureLLMInferenceTrace_code.csv"));
  Result<std::vector<double>> conv =
      ReadArrivals(ReadFile(kDataDir + "/AzureLLMInferenceTrace_conv.csv"));
  ASSERT_TRUE(code.ok() && conv.ok());
  ASSERT_EQ(code->size(), 8819u);
  ASSERT_EQ(conv->size(), 19366u);
  Result<QueueReplayResult> bursty = ReplayQueue(*code, o);
  Result<QueueReplayResult> steady = ReplayQueue(*conv, o);
  ASSERT_TRUE(bursty.ok() && steady.ok());
  EXPECT_LT(bursty->metered_gpu_s, bursty->reserved_gpu_s)
      << "scale-to-zero must save on the bursty trace";
  EXPECT_GT(bursty->cold_starts, 1) << "the bursty trace has idle gaps longer than the cooldown";
  EXPECT_GT(bursty->idle_at_zero_s, 0);
  EXPECT_EQ(steady->idle_at_zero_s, 0) << "the steady trace never idles long enough to reach zero";
  EXPECT_GT(1 - bursty->metered_gpu_s / bursty->reserved_gpu_s,
            1 - steady->metered_gpu_s / steady->reserved_gpu_s);
}

TEST(QueueReplayTest, CommandPrintsMeteredAndReserved) {
  std::ostringstream out, err;
  ASSERT_EQ(RunReplayCommand({"--arrivals", kDataDir + "/AzureLLMInferenceTrace_code.csv",
                              "--service-seconds", "0.25", "--usd-per-gpu-hour", "2.64"},
                             out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("GPU-seconds metered"), std::string::npos);
  EXPECT_NE(out.str().find("baseline (a)"), std::string::npos);
  EXPECT_NE(out.str().find("baseline (b)"), std::string::npos);
  EXPECT_NE(out.str().find("cold starts"), std::string::npos);
  EXPECT_EQ(RunReplayCommand({"--arrivals", "x.csv"}, out, err), 2) << "service time is required";
  err.str("");
  EXPECT_EQ(
      RunReplayCommand(
          {"--arrivals", "x.csv", "--service-seconds", "1", "--cooldown-seconds", "-1"}, out, err),
      2);
  EXPECT_NE(err.str().find("--cooldown-seconds"), std::string::npos) << err.str();
}

// Each request's own service time from a column; baseline (a) is the fewest always-on replicas
// with the same p99 wait, never more than the peak (b).
TEST(QueueReplayTest, PerRequestServiceTimesAndTheTwoBaselines) {
  // Two requests a second for an hour, each taking 0.4 s or 1.2 s (alternating, in ms).
  std::string csv = "TIMESTAMP,duration_ms\n";
  for (int i = 0; i < 7200; ++i)
    csv += std::to_string(1700000000.0 + i * 0.5) + "," + (i % 2 ? "1200" : "400") + "\n";
  Result<std::vector<Arrival>> requests = ReadArrivalRequests(csv, "duration_ms", 0.001, 1);
  ASSERT_TRUE(requests.ok()) << requests.status().message();
  EXPECT_DOUBLE_EQ((*requests)[1].service_s, 1.2);
  QueueReplayOptions o;
  o.target = 1;
  o.max_replicas = 10;
  o.poll_interval_s = 15;
  o.cold_start_s = 30;
  Result<QueueReplayResult> r = ReplayQueue(*requests, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // 0.8 s of work per second needs at least one replica, and FCFS with 1.2 s jobs every second
  // queues behind one replica: the steady state needs about two.
  EXPECT_GE(r->fixed_replicas, 1);
  EXPECT_LE(r->fixed_replicas, r->peak_replicas);
  EXPECT_LE(r->fixed_wait_p99_s, r->wait_p99_s);
  EXPECT_LE(r->fixed_gpu_s, r->reserved_gpu_s);
  EXPECT_FALSE(ReadArrivalRequests(csv, "latency", 0.001, 1).ok());
  Result<std::vector<Arrival>> bad = ReadArrivalRequests("TIMESTAMP,d\n1700000000,-3\n", "d", 1, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
}

// The demo's queue: the same bytes every time, only inside the nightly window; replayed with
// --ledger it is one priced metered_period row, and a re-run adds nothing.
TEST(QueueReplayTest, DemoArrivalsReplayIntoOneLedgerRowOnce) {
  const std::string csv = GenerateDemoArrivals({});
  EXPECT_EQ(csv, GenerateDemoArrivals({}));
  Result<std::vector<Arrival>> arrivals = ReadArrivalRequests(csv, "service_seconds", 1, 1);
  ASSERT_TRUE(arrivals.ok()) << arrivals.status().message();
  EXPECT_GT(arrivals->size(), 7u * 100) << "about 120 a night";
  EXPECT_LT(arrivals->size(), 7u * 140);
  for (const Arrival& a : *arrivals) {
    const double hour = std::fmod(a.time_s, 86400) / 3600;
    EXPECT_GE(hour, 1);
    EXPECT_LT(hour, 3);
    EXPECT_GE(a.service_s, 40);
    EXPECT_LE(a.service_s, 80);
  }
  testing::ScopedTempDir tmp;
  const std::string path = tmp.Path("arrivals.csv");
  std::ofstream(path) << csv;
  const std::vector<std::string> args = {
      "--arrivals",     path,        "--service-column",  "service_seconds",
      "--max-replicas", "1",         "--gpu-per-replica", "4",
      "--gpu-model",    "H100-80GB", "--ledger",          tmp.Path("ledger.db"),
      "--namespace",    "research",  "--scaled-object",   "nightly-train",
      "--cost-center",  "research"};
  std::ostringstream out, err;
  ASSERT_EQ(RunReplayCommand(args, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("1 metered_period row in"), std::string::npos) << out.str();
  ASSERT_EQ(RunReplayCommand(args, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("0 metered_period rows (already there)"), std::string::npos)
      << out.str();

  QueueReplayOptions o;
  o.max_replicas = 1;
  o.gpu_per_replica = 4;
  Result<QueueReplayResult> r = ReplayQueue(*arrivals, o);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
  EXPECT_EQ(*ledger->CountRows(), 1);
  const Showback s = *ledger->QueryShowback({});
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].group, "research");
  const double price = *PriceBook::BuiltInDefaults().GpuHourPrice("H100-80GB");
  EXPECT_EQ(s.groups[0].metered_gpu_time, *GpuSecondsToMilli(r->metered_gpu_s));
  EXPECT_EQ(s.groups[0].metered, *PriceGpuTime(*GpuSecondsToMilli(r->metered_gpu_s), price));
  EXPECT_EQ(s.groups[0].reserved, *PriceGpuSeconds(r->reserved_gpu_s, price));
  EXPECT_LT(s.groups[0].metered, s.groups[0].reserved / 5) << "2 h a night of 24";

  // A ledger row needs its identity and a price.
  std::vector<std::string> no_price = {"--arrivals",   path,       "--service-seconds",
                                       "60",           "--ledger", tmp.Path("other.db"),
                                       "--namespace",  "research", "--scaled-object",
                                       "nightly-train"};
  EXPECT_EQ(RunReplayCommand(no_price, out, err), 2);
  EXPECT_NE(err.str().find("--ledger needs"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace gpuvpa::scaler
