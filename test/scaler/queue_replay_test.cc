// Queue replay: hand-computed small cases and the two Azure LLM inference traces.
#include "scaler/replay/queue_replay.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scaler/cmd/replay_command.h"

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

}  // namespace
}  // namespace gpuvpa::scaler
