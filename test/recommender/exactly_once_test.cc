// Regression tests for the exactly-once and input-trust findings (issue 7): each test names the
// finding it pins down and failed on the code before the fix.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/cost/ledger.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/cmd/commands.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/logic/recommender.h"
#include "recommender/logic/usage_charges.h"
#include "test/recommender/test_util.h"
#include "test/support/ledger_backends.h"

namespace gpuvpa::recommender {
namespace {

constexpr const char* kNow = "2026-12-01T00:00:00Z";
constexpr const char* kHeader =
    "timestamp,namespace,workload_kind,workload_name,container,pod,gpu_model,allocation,"
    "vram_bytes,sm_active,device\n";

class ExactlyOnceTest : public ::testing::Test {
 protected:
  int Recommend(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.insert(args.end(), {"--now", kNow});
    return RunRecommendCommand(args, out_, err_);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.Path(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  ShowbackRow Total(const ShowbackQuery& query = {}) {
    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_);
    EXPECT_TRUE(ledger.ok());
    Result<Showback> s = (*ledger)->QueryShowback(query);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s->total;
  }
  static std::string Demo(int days) {
    DemoFleetOptions options;
    options.days = days;
    return GenerateDemoFleetTrace(options);
  }
  // The trace's rows whose timestamp (first field) is in [from, to).
  static std::string Window(const std::string& csv, double from, double to) {
    std::istringstream in(csv);
    std::string line, out;
    std::getline(in, line);
    out = line + "\n";
    while (std::getline(in, line)) {
      const double t = *ParseTimestamp(line.substr(0, line.find(',')));
      if (t >= from && t < to) out += line + "\n";
    }
    return out;
  }
  // Independent computation: milli-GPU-seconds of the distinct (workload, pod, device, time)
  // samples of the given traces, each standing for 60 s of its allocation's device fraction.
  static int64_t DistinctMilliGpuSeconds(const std::vector<std::string>& traces) {
    std::set<std::string> seen;
    int64_t total = 0;
    for (const std::string& csv : traces) {
      std::istringstream in(csv);
      std::string line;
      std::getline(in, line);
      while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        // Demo columns: timestamp, namespace, kind, name, container, pod, device, gpu_model,
        // allocation, ...: the identity of a sample is everything before gpu_model.
        const std::string key =
            f[0] + "|" + f[1] + "|" + f[2] + "|" + f[3] + "|" + f[4] + "|" + f[5] + "|" + f[6];
        if (!seen.insert(key).second) continue;
        const GpuModel* model = *GpuCatalog::BuiltIn().FindModel(f[7]);
        const double fraction = *DeviceFraction(*ParseGpuAllocation(f[8]), model);
        total += std::llround(fraction * 60 * 1000);
      }
    }
    return total;
  }

  testing::ScopedTempDir dir_;
  std::string ledger_ = dir_.Path("ledger.db");
  std::string ckpt_ = dir_.Path("ckpt");
  std::ostringstream out_, err_;
};

// The charges' exactly-once rules on both ledger backends, with the same expected values.
class ExactlyOnceLedgerTest : public ExactlyOnceTest,
                              public ::testing::WithParamInterface<gpuvpa::testing::LedgerBackend> {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(place_.Prepare(&error)) << error;
    ledger_ = place_.url();
    if (GetParam() == gpuvpa::testing::LedgerBackend::kPostgres) {
      std::ofstream(dir_.Path("ledger-url")) << place_.url() << "\n";
      ledger_flag_ = {"--ledger-url-file", dir_.Path("ledger-url")};
    } else {
      ledger_flag_ = {"--ledger", ledger_};
    }
  }
  // A recommend command's arguments with this backend's ledger flag.
  std::vector<std::string> With(std::vector<std::string> args) const {
    args.insert(args.end(), ledger_flag_.begin(), ledger_flag_.end());
    return args;
  }
  gpuvpa::testing::LedgerPlace place_{GetParam()};
  std::vector<std::string> ledger_flag_;
};

INSTANTIATE_TEST_SUITE_P(Backends, ExactlyOnceLedgerTest,
                         ::testing::Values(gpuvpa::testing::LedgerBackend::kSqlite,
                                           gpuvpa::testing::LedgerBackend::kPostgres),
                         gpuvpa::testing::BackendName);

TEST_P(ExactlyOnceLedgerTest, Finding1SameTraceTwiceAddsNothing) {
  const std::string trace = Write("demo.csv", Demo(2));
  ASSERT_EQ(Recommend(With({"--trace", trace, "--checkpoint", ckpt_})), 0) << err_.str();
  const ShowbackRow first = Total();
  EXPECT_EQ(first.allocated_gpu_time, DistinctMilliGpuSeconds({Demo(2)}));
  ASSERT_EQ(Recommend(With({"--trace", trace, "--checkpoint", ckpt_})), 0) << err_.str();
  EXPECT_NE(err_.str().find("0 accepted, 31680 already ingested"), std::string::npos) << err_.str();
  const ShowbackRow second = Total();
  EXPECT_EQ(second.allocated_gpu_time, first.allocated_gpu_time);
  EXPECT_EQ(second.allocated, first.allocated);
}

// The settle sequence's failure policy (recommender/checkpoint/settle.h): a ledger that refuses
// the charge (here: another writer holds its lock past the busy timeout) fails the run, keeps
// the usage pending in the checkpoint it still saves, and the next run charges it exactly once.
TEST_F(ExactlyOnceTest, ARefusedChargeStaysPendingInTheCheckpointAndIsChargedOnceLater) {
  const std::string trace = Write("demo.csv", Demo(2));
  ASSERT_TRUE(Ledger::Open(ledger_).ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(ledger_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_, "--ledger", ledger_}), 1);
  EXPECT_NE(err_.str().find("ledger: "), std::string::npos) << err_.str();
  EXPECT_TRUE(FileExists(ckpt_)) << "the checkpoint holds the pending usage";
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(Total().allocated_gpu_time, 0);
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_, "--ledger", ledger_}), 0)
      << err_.str();
  EXPECT_NE(err_.str().find("0 accepted, 31680 already ingested"), std::string::npos) << err_.str();
  EXPECT_EQ(Total().allocated_gpu_time, DistinctMilliGpuSeconds({Demo(2)}));
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_, "--ledger", ledger_}), 0);
  EXPECT_EQ(Total().allocated_gpu_time, DistinctMilliGpuSeconds({Demo(2)}));
}

TEST_P(ExactlyOnceLedgerTest, Finding1OverlappingWindowsWithoutACheckpointChargeTheUnion) {
  const std::string csv = Demo(4);
  const double start = 1793577600, day = 86400;
  const std::string a = Window(csv, start, start + 2.5 * day);
  const std::string b = Window(csv, start + 1.5 * day, start + 4 * day);
  ASSERT_EQ(Recommend(With({"--trace", Write("a.csv", a)})), 0) << err_.str();
  ASSERT_EQ(Recommend(With({"--trace", Write("b.csv", b)})), 0) << err_.str();
  EXPECT_EQ(Total().allocated_gpu_time, DistinctMilliGpuSeconds({a, b}));
  EXPECT_EQ(Total().allocated_gpu_time, DistinctMilliGpuSeconds({csv}));
}

TEST_P(ExactlyOnceLedgerTest, Finding1DuplicateRowsCountOnce) {
  const std::string row =
      "2026-11-02T00:00:00Z,team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,"
      "2000000000,0.5,0\n";
  ASSERT_EQ(Recommend(With({"--trace", Write("dup.csv", kHeader + row + row + row)})), 0)
      << err_.str();
  EXPECT_EQ(Total().allocated_gpu_time, 60 * 1000);
  EXPECT_NE(err_.str().find("1 accepted, 2 already ingested"), std::string::npos) << err_.str();
}

TEST_F(ExactlyOnceTest, Finding2AFutureRowIsMalformedAndForgetsNobody) {
  std::string csv = kHeader;
  for (int m = 0; m < 60; ++m) {
    const std::string t = std::to_string(1793577600 + m * 60);
    csv += t + ",team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
    csv += t + ",team-b,Deployment,api,main,api-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
  }
  csv +=
      "2027-06-01T00:00:00Z,team-b,Deployment,api,main,api-0,H100-80GB,nvidia.com/gpu=1,2e9,"
      "0.5,0\n";
  csv +=
      "1.7976931348623157e308,team-b,Deployment,api,main,api-0,H100-80GB,nvidia.com/gpu=1,"
      "2e9,0.5,0\n";
  csv += "1e300,team-b,Deployment,api,main,api-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
  csv += "12,team-b,Deployment,api,main,api-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
  const std::string trace = Write("future.csv", csv);
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_, "--ledger", ledger_}), 0)
      << err_.str();
  EXPECT_NE(err_.str().find("120 accepted, 0 already ingested (skipped), 4 malformed"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("is in the future"), std::string::npos);
  EXPECT_NE(err_.str().find("before 2000-01-01"), std::string::npos);
  EXPECT_EQ(Total().allocated_gpu_time, 2 * 60 * 60 * 1000) << "both workloads billed";
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_}), 0) << err_.str();
  EXPECT_NE(err_.str().find("restored 2 workload-containers"), std::string::npos) << err_.str();
}

TEST_F(ExactlyOnceTest, Finding2TheStoreRefusesNonFiniteSamples) {
  FleetStore store;
  const uint32_t row = testing::TrackTestWorkload(store, "w");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const GpuSample& bad :
       {GpuSample{nan, 1, 0.5, false}, GpuSample{inf, 1, 0.5, false},
        GpuSample{1e300, 1, 0.5, false}, GpuSample{1793577600, nan, 0.5, false},
        GpuSample{1793577600, inf, 0.5, false}, GpuSample{1793577600, 1, nan, false},
        GpuSample{1793577600, 1, 1.5, false}})
    EXPECT_FALSE(store.AddSample(row, bad));
  EXPECT_EQ(store.state(row).sample_count, 0u);
  EXPECT_TRUE(store.AddSample(row, {1793577600, 1e9, 0.5, false}));
  EXPECT_TRUE(DecodeCheckpoint(EncodeCheckpoint(store, 0), store.options()).ok());
}

std::string Frame(const v1::FleetCheckpoint& cp) {
  std::string payload;
  cp.SerializeToString(&payload);
  return FrameCheckpointPayload(payload);
}

v1::FleetCheckpoint ParsePayload(const std::string& framed) {
  v1::FleetCheckpoint cp;
  EXPECT_TRUE(cp.ParseFromString(framed.substr(24)));
  return cp;
}

TEST_F(ExactlyOnceTest, Finding3NonUtf8NamesAreRefusedAtInputAndTheCheckpointStaysLoadable) {
  std::string csv = kHeader;
  csv +=
      "2026-11-02T00:00:00Z,team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,2e9,"
      "0.5,0\n";
  csv +=
      "2026-11-02T00:00:00Z,team-\xff,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,"
      "2e9,0.5,0\n";
  csv +=
      "2026-11-02T00:00:00Z,team-a,Deployment,Web_Server,main,web-0,H100-80GB,"
      "nvidia.com/gpu=1,2e9,0.5,0\n";
  const std::string trace = Write("names.csv", csv);
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_}), 0) << err_.str();
  EXPECT_NE(err_.str().find("1 accepted, 0 already ingested (skipped), 2 malformed"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("namespace \"team-\\xff\" is not a Kubernetes namespace name"),
            std::string::npos)
      << err_.str();
  ASSERT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_}), 0) << err_.str();
  EXPECT_NE(err_.str().find("restored 1 workload-containers from " + ckpt_ + "\n"),
            std::string::npos)
      << err_.str();
}

TEST_F(ExactlyOnceTest, Finding3AnUndecodableFileNeverBecomesThePreviousCheckpoint) {
  FleetStore store;
  store.AddSample(testing::TrackTestWorkload(store, "good"), {1793577600, 1e9, 0.5, false});
  // A file whose frame and CRC are right but whose payload does not decode (a name that is
  // not UTF-8, as an older build could write).
  v1::FleetCheckpoint bad = ParsePayload(EncodeCheckpoint(store, 0));
  bad.mutable_workloads(0)->mutable_identity()->set_owner_name("bad\xff");
  Write("ckpt", Frame(bad));
  ASSERT_TRUE(SaveCheckpoint(store, ckpt_, 0).ok());
  EXPECT_FALSE(FileExists(PreviousCheckpointPath(ckpt_)))
      << "the undecodable file was rotated into PATH.prev";
  FleetStore loaded;
  EXPECT_TRUE(LoadCheckpoint(ckpt_, loaded).ok());
}

TEST_F(ExactlyOnceTest, Finding3TheLoaderRefusesDuplicateBucketsAndNonFiniteState) {
  FleetStore store;
  store.AddSample(testing::TrackTestWorkload(store, "w"), {1793577600, 1e9, 0.5, false});
  const v1::FleetCheckpoint good = ParsePayload(EncodeCheckpoint(store, 0));
  ASSERT_TRUE(DecodeCheckpoint(Frame(good), store.options()).ok());

  v1::FleetCheckpoint dup = good;
  v1::HistogramCheckpoint* sm = dup.mutable_workloads(0)->mutable_sm();
  sm->add_bucket_index(sm->bucket_index(0));
  sm->add_bucket_weight(0);
  Result<FleetStore> r = DecodeCheckpoint(Frame(dup), store.options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("repeated"), std::string::npos) << r.status().message();

  v1::FleetCheckpoint inf = good;
  inf.mutable_workloads(0)->set_allocated_gpu_seconds(std::numeric_limits<double>::infinity());
  r = DecodeCheckpoint(Frame(inf), store.options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("allocated_gpu_seconds is not finite"), std::string::npos);
}

TEST_F(ExactlyOnceTest, Finding3RandomValidIdentitiesRoundTrip) {
  std::mt19937_64 rng(7);
  auto name = [&](size_t max_len, bool dots) {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
    std::string s(1, 'a' + static_cast<char>(rng() % 26));
    const size_t len = 1 + rng() % (max_len - 1);
    while (s.size() < len) {
      const char c = kChars[rng() % (dots ? 38 : 37)];
      if ((c == '.' || c == '-') && (s.back() == '.' || s.back() == '-')) continue;
      s += c;
    }
    while (s.back() == '.' || s.back() == '-') s.back() = 'z';
    return s;
  };
  for (int round = 0; round < 20; ++round) {
    FleetStore store;
    for (int i = 0; i < 20; ++i) {
      v1::WorkloadIdentity id = testing::TestIdentity("w");
      id.set_namespace_name(name(63, false));
      id.set_owner_name(name(253, true));
      id.set_container(name(63, false));
      id.set_cost_center("cc \xc3\xa9t\xc3\xa9 " + std::to_string(rng() % 1000));  // UTF-8
      ASSERT_TRUE(ValidateIdentity(id).ok()) << ValidateIdentity(id).message();
      const uint32_t row = store.Track(id, {1, 8e10, 8e10});
      const uint32_t series = store.TrackDevice(row, name(253, true), static_cast<int>(rng() % 8));
      ASSERT_EQ(store.Ingest(row, series, {1793577600.0 + i, 1e9, 0.25, false}),
                IngestOutcome::kAdded);
    }
    const std::string bytes = EncodeCheckpoint(store, 0);
    Result<FleetStore> back = DecodeCheckpoint(bytes, store.options());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(EncodeCheckpoint(*back, 0), bytes);
  }
}

TEST_F(ExactlyOnceTest, Finding5IdsOfNamesWithSeparatorsNeverCollide) {
  EXPECT_NE(EncodeIdParts({"a/b", "c"}), EncodeIdParts({"a", "b/c"}));
  EXPECT_NE(EncodeIdParts({"a:b", "c"}), EncodeIdParts({"a", "b:c"}));
  EXPECT_NE(EncodeIdParts({"a%2Fb"}), EncodeIdParts({"a/b"}));
  v1::WorkloadIdentity x = testing::TestIdentity("a/b"), y = testing::TestIdentity("a");
  x.set_container("c");
  y.set_container("b/c");
  EXPECT_NE(UsageActionId(x, 0, 60, 1, 60000), UsageActionId(y, 0, 60, 1, 60000));
  EXPECT_NE(ChargeSeriesKey(x, "p:1", 0), ChargeSeriesKey(x, "p", 1));
  // And such names no longer enter the store at all.
  std::string csv = kHeader;
  csv += "2026-11-02T00:00:00Z,team-a,Deployment,a/b,c,p-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
  csv += "2026-11-02T00:00:00Z,team-a,Deployment,a,b/c,p-0,H100-80GB,nvidia.com/gpu=1,2e9,0.5,0\n";
  EXPECT_EQ(Recommend({"--trace", Write("slash.csv", csv), "--ledger", ledger_}), 0);
  EXPECT_NE(err_.str().find("0 accepted, 0 already ingested (skipped), 2 malformed"),
            std::string::npos)
      << err_.str();
}

TEST_F(ExactlyOnceTest, Finding6PercentSmUnitsStopTheRunWithTheEvidence) {
  std::string csv = kHeader;
  for (int m = 0; m < 100; ++m)
    csv += std::to_string(1793577600 + m * 60) +
           ",team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,2e9," +
           std::to_string(m % 60) + ",0\n";
  const std::string trace = Write("percent.csv", csv);
  EXPECT_EQ(Recommend({"--trace", trace, "--checkpoint", ckpt_, "--ledger", ledger_}), 1);
  EXPECT_NE(err_.str().find("column sm_active looks like percent"), std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("largest 59"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("--sm-unit percent"), std::string::npos);
  EXPECT_FALSE(FileExists(ckpt_)) << "nothing is saved from a run that stopped";
  EXPECT_EQ(Total().allocated_gpu_time, 0);
  ASSERT_EQ(Recommend({"--trace", trace, "--sm-unit", "percent", "--format", "json"}), 0)
      << err_.str();
  EXPECT_NE(err_.str().find("100 accepted"), std::string::npos);
}

TEST_F(ExactlyOnceTest, Finding6MebibytesExportedAsBytesStopTheRun) {
  std::string csv = kHeader;
  for (int m = 0; m < 30; ++m)
    csv += std::to_string(1793577600 + m * 60) +
           ",team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,40960,0.5,0\n";
  const std::string trace = Write("mib.csv", csv);
  EXPECT_EQ(Recommend({"--trace", trace}), 1);
  EXPECT_NE(err_.str().find("column vram_bytes looks like MiB"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("--vram-unit mib"), std::string::npos);
  EXPECT_EQ(Recommend({"--trace", trace, "--vram-unit", "mib", "--min-history-hours", "0"}), 0);
}

TEST_F(ExactlyOnceTest, Finding7NoBoundAboveWhatTheAllocationHolds) {
  FleetStore store;
  const uint32_t h100 = testing::TrackTestWorkload(store, "big", "H100-80GB");
  const uint32_t mig =
      testing::TrackTestWorkload(store, "mig", "H100-80GB", "nvidia.com/mig-3g.40gb=1");
  for (int h = 0; h < 48; ++h) {
    const double t = 1793577600 + h * 3600.0;
    store.AddSample(h100, {t, 79.5 * testing::kGiB, 0.9, h % 5 == 0});  // OOM bumps past 80 GB
    store.AddSample(mig, {t, 38.9 * testing::kGiB, 0.9, false});
  }
  RecommenderOptions options;
  options.min_history_s = 0;
  const Recommender recommender(options);
  const Recommendation big = recommender.Recommend(store, h100);
  EXPECT_LE(big.vram_target_bytes, 80 * testing::kGiB);
  EXPECT_LE(big.vram_upper_bytes, 80 * testing::kGiB);
  EXPECT_TRUE(big.needs_larger_gpu);
  const Recommendation small = recommender.Recommend(store, mig);
  const double usable = store.state(mig).unit.vram_limit_bytes;
  EXPECT_DOUBLE_EQ(usable, 40192.0 * 1024 * 1024);
  EXPECT_LE(small.vram_upper_bytes, usable);
  EXPECT_LE(small.vram_target_bytes, usable);
  // A sample above the device's memory is a malformed row, not usage.
  std::string csv = kHeader;
  csv +=
      "2026-11-02T00:00:00Z,team-a,Deployment,web,main,web-0,H100-80GB,nvidia.com/gpu=1,"
      "9e10,0.5,0\n";
  EXPECT_EQ(Recommend({"--trace", Write("over.csv", csv)}), 0);
  EXPECT_NE(err_.str().find("is more than the H100-80GB's"), std::string::npos) << err_.str();
}

TEST_F(ExactlyOnceTest, Finding12TheTableShowsTheHistoryPeakBesideTheLatestWindow) {
  const std::string trace = Write("demo.csv", Demo(7));
  ASSERT_EQ(Recommend({"--trace", trace}), 0) << err_.str();
  const std::string table = out_.str();
  const size_t trainer = table.find("research/nightly-train/trainer");
  ASSERT_NE(trainer, std::string::npos) << table;
  const std::string line = table.substr(trainer, table.find('\n', trainer) - trainer);
  EXPECT_NE(line.find("68.0/0.5"), std::string::npos) << "history peak / last window\n" << line;
  EXPECT_NE(table.find("PEAK hist/1h"), std::string::npos);
  std::istringstream lines(table);
  for (std::string l; std::getline(lines, l);) EXPECT_LE(l.size(), 120u) << l;
  // Sorted by idle-tax cost: the first row is the largest.
  EXPECT_EQ(table.find("research/nightly-train/trainer"), table.find('\n') + 1) << table;
}

}  // namespace
}  // namespace gpuvpa::recommender
