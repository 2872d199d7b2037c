// The cost API's parameters at a fixed clock: every window form, steps, aggregations, refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/base/time_format.h"
#include "core/cost/allocation.h"
#include "core/cost/ledger.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

int64_t T(const char* rfc3339) { return static_cast<int64_t>(*ParseTimestamp(rfc3339)); }

// Saturday 2026-12-05 14:30:00 UTC.
const int64_t kNow = T("2026-12-05T14:30:00Z");

TEST(AllocationWindowTest, NamedWindowsAreCalendarUtcAndWeeksStartOnSunday) {
  const std::vector<std::tuple<std::string, int64_t, int64_t>> cases = {
      {"today", T("2026-12-05T00:00:00Z"), kNow},
      {"yesterday", T("2026-12-04T00:00:00Z"), T("2026-12-05T00:00:00Z")},
      {"week", T("2026-11-29T00:00:00Z"), kNow},
      {"lastweek", T("2026-11-22T00:00:00Z"), T("2026-11-29T00:00:00Z")},
      {"month", T("2026-12-01T00:00:00Z"), kNow},
      {"lastmonth", T("2026-11-01T00:00:00Z"), T("2026-12-01T00:00:00Z")},
      {"90m", kNow - 5400, kNow},
      {"36h", kNow - 36 * 3600, kNow},
      {"7d", kNow - 7 * 86400, kNow},
      {"2w", kNow - 14 * 86400, kNow},
      {"2026-11-02T00:00:00Z,2026-11-09T00:00:00Z", T("2026-11-02T00:00:00Z"),
       T("2026-11-09T00:00:00Z")},
      {"2026-11-02T01:00:00+01:00,2026-11-03", T("2026-11-02T00:00:00Z"),
       T("2026-11-03T00:00:00Z")},
      {"1793577600,1793664000", 1793577600, 1793664000},
  };
  for (const auto& [text, from, to] : cases) {
    Result<std::pair<int64_t, int64_t>> w = ParseAllocationWindow(text, kNow);
    ASSERT_TRUE(w.ok()) << text << ": " << w.status().message();
    EXPECT_EQ(w->first, from) << text;
    EXPECT_EQ(w->second, to) << text;
  }
  // On a Sunday, "week" starts that day; January's "lastmonth" is December of the year before.
  EXPECT_EQ(ParseAllocationWindow("week", T("2026-11-29T08:00:00Z"))->first,
            T("2026-11-29T00:00:00Z"));
  EXPECT_EQ(ParseAllocationWindow("lastmonth", T("2027-01-10T00:00:00Z"))->first,
            T("2026-12-01T00:00:00Z"));
}

TEST(AllocationWindowTest, BadWindowsNameTheValue) {
  for (const char* bad :
       {"", "7", "7y", "-7d", "0d", "d", "99999999999d", "today,", ",", "2026-11-09,2026-11-02",
        "2026-11-02,2026-11-02", "abc,def", "1793577600,9999999999999", "2026-02-31,2026-03-01"}) {
    Result<std::pair<int64_t, int64_t>> w = ParseAllocationWindow(bad, kNow);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(w.status().message().find("window \"" + std::string(bad) + "\""), std::string::npos)
        << w.status().message();
  }
  EXPECT_FALSE(ParseAllocationWindow("60y", 100).ok());
  EXPECT_FALSE(ParseAllocationWindow("2d", 100).ok()) << "reaches back before 1970";
}

TEST(AllocationRequestTest, ParsesEveryParameterAndRefusesTheRest) {
  Result<AllocationRequest> r = ParseAllocationRequest(
      "window=7d&aggregate=cluster,namespace,label%3Ateam,annotation:owner,migProfile&step=1d&"
      "accumulate=true&includeIdle=1&shareIdle=false",
      kNow);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->to_s - r->from_s, 7 * 86400);
  EXPECT_EQ(r->step_s, 86400);
  ASSERT_EQ(r->aggregate.size(), 5u);
  EXPECT_EQ(r->aggregate[2].property, AllocationProperty::kLabel);
  EXPECT_EQ(r->aggregate[2].key, "team");
  EXPECT_EQ(r->aggregate[3].property, AllocationProperty::kAnnotation);
  EXPECT_EQ(r->aggregate[4].property, AllocationProperty::kMigProfile);
  EXPECT_TRUE(r->accumulate);
  EXPECT_TRUE(r->include_idle);
  EXPECT_FALSE(r->share_idle);
  Result<AllocationRequest> spaced =
      ParseAllocationRequest("window=2026-11-02+00:00:00,2026-11-03T00:00:00Z", kNow);
  ASSERT_TRUE(spaced.ok()) << spaced.status().message();
  EXPECT_EQ(spaced->from_s, T("2026-11-02T00:00:00Z"));
  EXPECT_FALSE(spaced->step_s.has_value());
  EXPECT_TRUE(spaced->aggregate.empty());

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "window: the parameter is required"},
      {"window=7d&step=1", "step \"1\": is shorter than a minute"},
      {"window=7d&step=1x", "step \"1x\""},
      {"window=7d&aggregate=node", "aggregate \"node\""},
      {"window=7d&aggregate=namespace,", "aggregate \"namespace,\""},
      {"window=7d&filterNamespaces=a", "parameter \"filterNamespaces\": is not served"},
      {"window=7d&shareIdle=maybe", "shareIdle \"maybe\""},
      {"window=7d&step=1d&step=2d", "step \"2d\": is given more than once"},
      {"window=%ff", "is not UTF-8"},
      {"window=7d%2", "bad percent escape"},
  };
  for (const auto& [query, expected] : bad) {
    Result<AllocationRequest> refused = ParseAllocationRequest(query, kNow);
    ASSERT_FALSE(refused.ok()) << query;
    EXPECT_NE(refused.status().message().find(expected), std::string::npos)
        << query << ": " << refused.status().message();
  }
}

TEST(AllocationRequestTest, WorkloadsSplitIntoOpenCostNames) {
  const AllocationNames full = SplitWorkload("StatefulSet/vllm-llama/vllm");
  EXPECT_EQ(full.controller_kind, "StatefulSet");
  EXPECT_EQ(full.controller, "vllm-llama");
  EXPECT_EQ(full.container, "vllm");
  const AllocationNames no_container = SplitWorkload("ScaledObject/nightly-train");
  EXPECT_EQ(no_container.controller, "nightly-train");
  EXPECT_EQ(no_container.container, "");
  EXPECT_EQ(SplitWorkload("bare").controller, "bare");
  EXPECT_EQ(AllocationErrorBody(400, "window \"\xff\": bad").find("\xff"), std::string::npos)
      << "the error envelope is valid UTF-8 JSON whatever the value";
}

// The answer is JSON text written directly: names with quotes, backslashes and non-ASCII text
// come back as they were stored, and the exact amounts with them.
TEST(AllocationResponseTest, NamesThatNeedEscapingStayValidJson) {
  testing::ScopedTempDir temp;
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(temp.Path("l.db"))).value();
  const std::string ns = "team \"q\" \\ é";
  LedgerAction a;
  a.action_id = "u-1";
  a.time_s = 86'400;
  a.kind = ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = ns;
  a.workload = "Deployment/x\"y/c";
  a.cost_center = "cc/\"1\"";
  a.gpu_model = "H100-80GB";
  a.before = "nvidia.com/gpu=1";
  a.period_start_s = 86'400;
  a.period_end_s = 90'000;
  a.allocated_gpu_time = 3'600'000;
  a.allocated = 2'640'001;
  a.used_vram = 1'000'000;
  ASSERT_EQ(*ledger->Append(a), 1u);
  for (const char* aggregate : {"namespace", "costCenter,controller", ""}) {
    Result<AllocationRequest> request =
        ParseAllocationRequest(std::string("window=0,172800&step=1d&aggregate=") + aggregate, 0);
    ASSERT_TRUE(request.ok()) << request.status().message();
    Result<std::string> body = AllocationResponse(*ledger, *request);
    ASSERT_TRUE(body.ok()) << body.status().message();
    const nlohmann::json doc = nlohmann::json::parse(*body, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << *body;
    ASSERT_EQ(doc["data"].size(), 2u) << aggregate;
    EXPECT_TRUE(doc["data"][0].empty()) << "nothing on the first day";
    ASSERT_EQ(doc["data"][1].size(), 1u) << *body;
    const auto first = doc["data"][1].begin();
    const std::string name = first.key();
    const nlohmann::json& allocation = first.value();
    EXPECT_EQ(allocation["name"], name);
    EXPECT_EQ(allocation["properties"]["namespace"], ns);
    EXPECT_EQ(allocation["properties"]["controller"], "x\"y");
    EXPECT_EQ(allocation["properties"]["costCenter"], "cc/\"1\"");
    EXPECT_EQ(allocation["gpuvpa"]["allocatedMicroUsd"], 2'640'001);
    EXPECT_DOUBLE_EQ(allocation["gpuHours"].get<double>(), 1.0);
    if (std::string(aggregate) == "namespace") {
      EXPECT_EQ(name, ns);
    }
  }
}

}  // namespace
}  // namespace gpuvpa
