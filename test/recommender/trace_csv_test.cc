// Trace CSV replay: header handling, malformed rows reported with line and field and skipped.
#include "recommender/input/trace_csv.h"

#include <gtest/gtest.h>

#include <random>

#include "core/gpu/gpu_catalog.h"
#include "recommender/checkpoint/checkpoint.h"
#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

constexpr const char* kHeader =
    "timestamp,namespace,workload_kind,workload_name,container,pod,gpu_model,allocation,vram_bytes,"
    "sm_active\n";

std::string Row(const std::string& ts, const std::string& sm = "0.5",
                const std::string& model = "A100-80GB",
                const std::string& alloc = "nvidia.com/gpu=1",
                const std::string& vram = "1000000000") {
  return ts + ",ns,Deployment,web,main,web-abc," + model + "," + alloc + "," + vram + "," + sm +
         "\n";
}

class TraceCsvTest : public ::testing::Test {
 protected:
  Result<TraceReplayReport> Replay(const std::string& csv) {
    TraceReplayer replayer(store_, GpuCatalog::BuiltIn());
    return replayer.ReplayText(csv);
  }
  FleetStore store_;
};

TEST_F(TraceCsvTest, AcceptsWellFormedRowsWithDefaults) {
  Result<TraceReplayReport> r =
      Replay(std::string(kHeader) + Row("1793577600") + Row("2026-11-02T00:01:00Z", "0.25"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rows, 2u);
  EXPECT_EQ(r->accepted, 2u);
  EXPECT_EQ(r->malformed, 0u);
  EXPECT_EQ(r->first_time_s, 1793577600);
  EXPECT_EQ(r->last_time_s, 1793577660);
  ASSERT_EQ(store_.size(), 1u);
  EXPECT_EQ(store_.state(0).identity.cost_center(), "unallocated");
  EXPECT_EQ(store_.state(0).identity.gpu_model(), "A100-80GB");
  EXPECT_EQ(store_.state(0).sample_count, 2u);
}

TEST_F(TraceCsvTest, ReportsMalformedRowsWithLineAndFieldAndSkipsThem) {
  const std::string csv =
      std::string(kHeader) + Row("1793577600") +                           // line 2 ok
      Row("1793577660", "1.7") +                                           // line 3 sm
      Row("yesterday") +                                                   // line 4 timestamp
      Row("1793577720", "0.5", "NVIDIA B999") +                            // line 5 gpu_model
      Row("1793577780", "0.5", "A100-80GB", "nvidia.com/gpu=x") +          // line 6
      Row("1793577840", "0.5", "A100-40GB", "nvidia.com/mig-3g.40gb=1") +  // line 7
      Row("1793577900", "0.5", "A100-80GB", "nvidia.com/gpu=1", "-5") +    // line 8
      "1793577960,ns,Deployment,web\n" +                                   // line 9 short
      "1793578020,,Deployment,web,main,web-abc,A100-80GB,nvidia.com/gpu=1,1,0.5\n" +  // 10
      "\n" +              // line 11 blank
      Row("1793578080");  // line 12 ok
  Result<TraceReplayReport> r = Replay(csv);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rows, 10u);
  EXPECT_EQ(r->accepted, 2u);
  EXPECT_EQ(r->malformed, 8u);
  const std::vector<std::pair<size_t, std::string>> expected = {
      {3, "sm_active"},  {4, "timestamp"},  {5, "gpu_model"}, {6, "allocation"},
      {7, "allocation"}, {8, "vram_bytes"}, {9, "row"},       {10, "namespace"}};
  ASSERT_EQ(r->issues.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r->issues[i].line, expected[i].first) << r->issues[i].message;
    EXPECT_EQ(r->issues[i].field, expected[i].second) << r->issues[i].message;
  }
  EXPECT_NE(r->issues[0].message.find("\"1.7\""), std::string::npos) << r->issues[0].message;
  EXPECT_NE(r->issues[2].message.find("B999"), std::string::npos);
  EXPECT_NE(r->issues[4].message.find("3g.40gb"), std::string::npos);
  EXPECT_EQ(store_.state(0).sample_count, 2u);
}

TEST_F(TraceCsvTest, HeaderProblemsAreErrorsNamingTheColumn) {
  Result<TraceReplayReport> missing = Replay("timestamp,namespace\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("workload_kind"), std::string::npos);
  Result<TraceReplayReport> unknown = Replay(std::string("vram_byte,") + kHeader);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("vram_byte"), std::string::npos);
}

TEST_F(TraceCsvTest, OptionalColumnsInAnyOrderAndCrlfLineEnds) {
  const std::string csv =
      "cost_center,sm_active,vram_bytes,allocation,gpu_model,pod,container,workload_name,workload_"
      "kind,"
      "namespace,timestamp,device,cuda_oom\r\n"
      "fin,0.9,2000000000,nvidia.com/gpu=2,H100-80GB,p,c,train,Job,ml,1793577600,1,1\r\n";
  Result<TraceReplayReport> r = Replay(csv);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->accepted, 1u) << (r->issues.empty() ? "" : r->issues[0].message);
  EXPECT_EQ(store_.state(0).identity.cost_center(), "fin");
  EXPECT_EQ(store_.state(0).cuda_oom_count, 1u);
}

TEST_F(TraceCsvTest, RowsWithoutACostCenterTakeTheNamespaceMapping) {
  CostCenterRules rules;
  rules.namespace_cost_centers["ns"] = "payments";
  TraceReplayer replayer(store_, GpuCatalog::BuiltIn(), rules);
  ASSERT_TRUE(replayer.ReplayText(std::string(kHeader) + Row("1793577600")).ok());
  EXPECT_EQ(store_.state(0).identity.cost_center(), "payments");
}

TEST_F(TraceCsvTest, ManyMalformedRowsAreCountedButOnlyTheFirstFewListed) {
  std::string csv = kHeader;
  for (int i = 0; i < 100; ++i) csv += Row("bad");
  Result<TraceReplayReport> r = Replay(csv);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->malformed, 100u);
  EXPECT_EQ(r->issues.size(), kMaxReportedIssues);
}

TEST_F(TraceCsvTest, MissingFileIsNotFound) {
  TraceReplayer replayer(store_, GpuCatalog::BuiltIn());
  Result<TraceReplayReport> r = replayer.ReplayFile("/nonexistent/trace.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuvpa::recommender

namespace gpuvpa::recommender {
namespace {

// Batched ingest (samples grouped by workload) must leave the store exactly as a
// sample-by-sample replay does: the same checkpoint bytes and the same report, over a trace
// with interleaved workloads and pods, a workload whose allocation changes mid-trace, rows
// repeated (already ingested), rows the store refuses, malformed rows, and a span long enough
// (with a short half-life) to move the decay reference several times.
TEST(TraceBatchTest, GroupedIngestEqualsOneRowAtATime) {
  FleetStoreOptions options;
  options.half_life_s = 60;  // kMaxDecayExponent half-lives pass every 100 minutes
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  const std::string header =
      "timestamp,namespace,workload_kind,workload_name,container,pod,device,gpu_model,"
      "allocation,vram_bytes,sm_active,cuda_oom\n";
  std::vector<std::string> rows;
  for (int t = 0; t < 1500; ++t) {
    const double time = 1793577600.0 + 30.0 * t;
    for (int w = 0; w < 23; ++w) {
      if (unit(rng) < 0.1) continue;  // a missed scrape
      const std::string alloc = w == 3 && t > 700 ? "nvidia.com/mig-3g.40gb=1" : "nvidia.com/gpu=1";
      std::string row = std::to_string(static_cast<int64_t>(time)) + ",ns" + std::to_string(w % 4) +
                        ",Deployment,w" + std::to_string(w) + ",main,w" + std::to_string(w) + "-p" +
                        std::to_string((t / 400) % 2) + "," + std::to_string(w % 2) +
                        ",H100-80GB," + alloc + "," +
                        std::to_string(static_cast<int64_t>(unit(rng) * 3e10)) + "," +
                        std::to_string(unit(rng)) + "," + (unit(rng) < 0.01 ? "1" : "0") + "\n";
      if (unit(rng) < 0.002) row = "garbage,row\n";
      rows.push_back(row);
      if (unit(rng) < 0.02) rows.push_back(row);  // repeated: already ingested
    }
  }
  const double now = 1793577600.0 + 30.0 * 1600;
  TraceReplayOptions replay;
  replay.now_s = now;

  FleetStore batched(options);
  TraceReplayer whole(batched, GpuCatalog::BuiltIn(), {}, replay);
  std::string csv = header;
  for (const std::string& r : rows) csv += r;
  Result<TraceReplayReport> all = whole.ReplayText(csv);
  ASSERT_TRUE(all.ok()) << all.status().ToString();

  FleetStore sequential(options);
  TraceReplayer one(sequential, GpuCatalog::BuiltIn(), {}, replay);
  TraceReplayReport sum;
  for (const std::string& r : rows) {
    Result<TraceReplayReport> rep = one.ReplayText(header + r);
    ASSERT_TRUE(rep.ok());
    sum.rows += rep->rows;
    sum.accepted += rep->accepted;
    sum.already_ingested += rep->already_ingested;
    sum.malformed += rep->malformed;
  }
  EXPECT_GT(batched.clock().reference_time_s(), 0);  // the reference moved
  EXPECT_EQ(all->rows, sum.rows);
  EXPECT_EQ(all->accepted, sum.accepted);
  EXPECT_EQ(all->already_ingested, sum.already_ingested);
  EXPECT_EQ(all->malformed, sum.malformed);
  EXPECT_GT(all->already_ingested, 0u);
  EXPECT_GT(all->malformed, 0u);
  EXPECT_EQ(EncodeCheckpoint(batched, now), EncodeCheckpoint(sequential, now));
}

}  // namespace
}  // namespace gpuvpa::recommender
