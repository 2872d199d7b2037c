// The demo fleet generator is deterministic and writes valid traces.
#include "recommender/input/demo_fleet.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/gpu/gpu_catalog.h"
#include "recommender/input/trace_csv.h"

namespace gpuvpa::recommender {
namespace {

TEST(DemoFleetTest, SameOptionsGiveTheSameBytesAndSeedsDiffer) {
  DemoFleetOptions o;
  o.days = 1;
  const std::string a = GenerateDemoFleetTrace(o);
  EXPECT_EQ(GenerateDemoFleetTrace(o), a);
  o.seed = 7;
  EXPECT_NE(GenerateDemoFleetTrace(o), a);
}

TEST(DemoFleetTest, EveryRowIsValidAndEveryDeviceReports) {
  DemoFleetOptions o;
  o.days = 1;
  const std::string csv = GenerateDemoFleetTrace(o);
  FleetStore store;
  TraceReplayer replayer(store, GpuCatalog::BuiltIn());
  Result<TraceReplayReport> r = replayer.ReplayText(csv);
  ASSERT_TRUE(r.ok());
  // 7 workloads: 1 + 2 replicas + 1 + 4 devices + 1 + 1 + 1 = 11 rows per minute.
  EXPECT_EQ(r->rows, 1440u * 11);
  EXPECT_EQ(r->malformed, 0u);
  EXPECT_EQ(store.size(), 7u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1440 * 11 + 1);
}

}  // namespace
}  // namespace gpuvpa::recommender
