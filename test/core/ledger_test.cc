// Ledger: durable append-only rows, idempotence, schema versions, showback figures.
#include "core/cost/ledger.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/cost/showback.h"
#include "test/support/ledger_backends.h"
#include "test/support/money_util.h"

namespace gpuvpa {
namespace {

LedgerAction Action(const std::string& id, ActionKind kind, ActionStatus status,
                    const std::string& workload, const std::string& cost_center,
                    int64_t time_s = 1000) {
  LedgerAction a;
  a.action_id = id;
  a.time_s = time_s;
  a.kind = kind;
  a.status = status;
  a.namespace_name = "ns";
  a.workload = workload;
  a.cost_center = cost_center;
  a.gpu_model = "H100-80GB";
  return a;
}

// Every test runs on both backends, with the same expected values.
class LedgerTest : public ::testing::TestWithParam<testing::LedgerBackend> {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(place_.Prepare(&error)) << error;
    Result<std::unique_ptr<Ledger>> l = Ledger::Open(Path());
    ASSERT_TRUE(l.ok()) << l.status().message();
    ledger_ = std::move(l).value();
  }
  const std::string& Path() const { return place_.url(); }
  // Runs SQL behind the ledger's back; returns the database's error text or "".
  std::string RawExec(const std::string& sql) { return place_.RawExec(sql); }
  bool postgres() const { return GetParam() == testing::LedgerBackend::kPostgres; }
  testing::LedgerPlace place_{GetParam()};
  std::unique_ptr<Ledger> ledger_;
};

INSTANTIATE_TEST_SUITE_P(Backends, LedgerTest,
                         ::testing::Values(testing::LedgerBackend::kSqlite,
                                           testing::LedgerBackend::kPostgres),
                         testing::BackendName);

TEST_P(LedgerTest, AppendIsIdempotentOnActionId) {
  LedgerAction a =
      Action("a-1", ActionKind::kRecommendation, ActionStatus::kProposed, "web", "search");
  EXPECT_EQ(*ledger_->Append(a), 1u);
  EXPECT_EQ(*ledger_->Append(a), 0u);
  std::vector<LedgerAction> batch = {
      a, Action("a-2", ActionKind::kAppliedChange, ActionStatus::kApplied, "web", "search")};
  EXPECT_EQ(*ledger_->Append(batch), 1u);
  EXPECT_EQ(*ledger_->CountRows(), 2);
  EXPECT_TRUE(*ledger_->Contains("a-2"));
  EXPECT_FALSE(*ledger_->Contains("a-3"));
}

TEST_P(LedgerTest, RowsSurviveReopeningAndCannotBeChangedOrDeleted) {
  ASSERT_TRUE(
      ledger_->Append(Action("a-1", ActionKind::kActivation, ActionStatus::kApplied, "w", "cc"))
          .ok());
  ledger_.reset();
  EXPECT_NE(RawExec("UPDATE actions SET cost_center = 'x'").find("append-only"), std::string::npos);
  EXPECT_NE(RawExec("DELETE FROM actions").find("append-only"), std::string::npos);
  Result<std::unique_ptr<Ledger>> reopened = Ledger::Open(Path());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->CountRows(), 1);
  EXPECT_EQ(*(*reopened)->IntegrityCheck(), "ok");
  EXPECT_EQ((*reopened)->schema_version(), Ledger::kSchemaVersion);
}

TEST_P(LedgerTest, InvalidRowsAreRefusedNamingTheFieldAndNothingOfTheBatchIsWritten) {
  LedgerAction good = Action("ok-1", ActionKind::kActivation, ActionStatus::kApplied, "w", "cc");
  LedgerAction bad = Action("bad-1", ActionKind::kActivation, ActionStatus::kApplied, "w", "");
  std::vector<LedgerAction> batch = {good, bad};
  Result<size_t> r = ledger_->Append(batch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cost_center"), std::string::npos);
  EXPECT_EQ(*ledger_->CountRows(), 0);
}

// A repeated id with other content is refused naming both values; the same id with the same
// content (its time and evidence may differ: a retried step) is the one row it was.
TEST_P(LedgerTest, ARepeatedIdWithOtherContentIsRefusedNamingBothValues) {
  LedgerAction a =
      Action("usage/ns/w/1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "w", "finance");
  a.allocated = 6'880'000;
  ASSERT_EQ(*ledger_->Append(a), 1u);
  LedgerAction retried = a;
  retried.time_s += 60;
  retried.evidence_json = R"({"attempt":2})";
  EXPECT_EQ(*ledger_->Append(retried), 0u);
  LedgerAction squatted = a;
  squatted.allocated = 0;
  std::vector<LedgerAction> batch = {
      Action("other", ActionKind::kActivation, ActionStatus::kApplied, "w", "cc"), squatted};
  Result<size_t> r = ledger_->Append(batch);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(r.status().message().find("\"usage/ns/w/1\" is recorded with allocated \"6880000\"; "
                                      "this one has \"0\""),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(*ledger_->CountRows(), 1) << "all rows of the call or none";
  LedgerAction recoloured = a;
  recoloured.cost_center = "research";
  r = ledger_->Append(recoloured);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cost_center \"finance\""), std::string::npos)
      << r.status().message();
}

// Every field has a bound: text that shows safely, amounts and times whose sums fit 64 bits.
TEST_P(LedgerTest, FieldsOutsideTheirBoundsAreRefusedNamingFieldAndValue) {
  auto refused = [&](const std::function<void(LedgerAction&)>& edit, const std::string& expect) {
    LedgerAction a = Action("x", ActionKind::kMeteredPeriod, ActionStatus::kApplied, "w", "cc");
    edit(a);
    Result<size_t> r = ledger_->Append(a);
    EXPECT_FALSE(r.ok()) << expect;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
    }
  };
  refused([](LedgerAction& a) { a.metered = INT64_MAX; },
          "metered 9223372036854775807 is above its bound");
  refused([](LedgerAction& a) { a.time_s = INT64_MAX; }, "time_s 9223372036854775807");
  refused([](LedgerAction& a) { a.period_end_s = 5'000'000'000; }, "period_end_s 5000000000");
  refused([](LedgerAction& a) { a.allocated_gpu_time = -1; }, "allocated_gpu_time -1 is negative");
  refused([](LedgerAction& a) { a.cost_center = "TOTAL\r\nforged"; }, "cost_center");
  refused([](LedgerAction& a) { a.workload = "\x1b[31mred"; }, "control characters");
  refused([](LedgerAction& a) { a.namespace_name = std::string("\xff\xfe"); }, "namespace");
  refused([](LedgerAction& a) { a.workload = std::string(1025, 'w'); }, "workload is 1025 bytes");
  refused([](LedgerAction& a) { a.action_id = std::string(1025, 'i'); }, "action_id is 1025");
  refused([](LedgerAction& a) { a.evidence_json = std::string(64 * 1024 + 1, ' '); },
          "evidence is 65537 bytes");
  EXPECT_EQ(*ledger_->CountRows(), 0);
  LedgerAction at_bound =
      Action("max", ActionKind::kMeteredPeriod, ActionStatus::kApplied, "w", "cc");
  at_bound.metered = kMaxLedgerMicroUsd;
  EXPECT_TRUE(ledger_->Append(at_bound).ok());
}

// Rows at the bound still overflow a sum when there are enough of them: showback refuses and
// names the row that would overflow, never a wrapped total.
// A day's total of one key past 2^63 - 1 is refused at append, all rows or none; a showback
// whose sum would overflow names the daily total it was adding, or the row when it reads rows.
TEST_P(LedgerTest, SumsThatWouldOverflowAreRefusedAndNamed) {
  std::vector<LedgerAction> rows;
  for (int i = 0; i < 93'000; ++i) {
    LedgerAction a = Action("big/" + std::to_string(i), ActionKind::kMeteredPeriod,
                            ActionStatus::kApplied, "w", "cc");
    a.metered = kMaxLedgerMicroUsd;
    rows.push_back(a);
  }
  Result<size_t> refused = ledger_->Append(rows);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("a daily total would pass 2^63 - 1"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(*ledger_->CountRows(), 0) << "nothing of the append was written";
  // Half of them a day later: each day's total fits, the showback's does not.
  for (size_t i = 0; i < rows.size(); i += 2) rows[i].time_s += 86'400;
  ASSERT_TRUE(ledger_->Append(rows).ok());
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("sum overflows"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("adding the daily total of \"default/ns/w\" on 1970-01-0"),
            std::string::npos)
      << s.status().message();
  ShowbackQuery every_row;
  every_row.use_daily_totals = false;
  s = ledger_->QueryShowback(every_row);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("adding row \"big/"), std::string::npos)
      << s.status().message();
}

TEST_P(LedgerTest, ANewerSchemaIsRefused) {
  ledger_.reset();
  EXPECT_EQ(RawExec(postgres() ? "INSERT INTO gpuvpa_schema (version) VALUES (99)"
                               : "PRAGMA user_version = 99"),
            "");
  Result<std::unique_ptr<Ledger>> l = Ledger::Open(Path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(l.status().message().find("99"), std::string::npos);
}

TEST_P(LedgerTest, WorkedExampleThroughTheLedgerAndShowback) {
  // A scaler-driven workload busy 2 h a day for 30 days at $2.64/GPU-h, against the 730 h
  // reservation it replaces.
  LedgerAction m =
      Action("m-1", ActionKind::kMeteredPeriod, ActionStatus::kApplied, "agent", "ai-agents");
  m.metered_gpu_time = testing::GpuHours(60);
  m.metered = testing::Cost(m.metered_gpu_time, 2.64);
  m.reserved = testing::Cost(testing::GpuHours(kHoursPerMonth), 2.64);
  ASSERT_TRUE(ledger_->Append(m).ok());
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_EQ(s->groups[0].metered, testing::Usd(158.40));
  EXPECT_EQ(s->groups[0].reserved, testing::Usd(1927.20));
  const std::string table = FormatShowback(*s, ShowbackGroup::kCostCenter, ReportFormat::kTable);
  EXPECT_NE(table.find("$158.40"), std::string::npos) << table;
  EXPECT_NE(table.find("$1,927.20"), std::string::npos) << table;
  EXPECT_NE(table.find("chargeback"), std::string::npos);
}

TEST_P(LedgerTest, ShowbackTotalsAllocationIdleTaxAndSavingsPerCostCenter) {
  std::vector<LedgerAction> rows;
  LedgerAction usage =
      Action("u-1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "train", "research");
  usage.allocated = testing::Usd(100);
  usage.used_vram = testing::Usd(30);
  usage.used_sm = testing::Usd(10);
  rows.push_back(usage);
  LedgerAction unmeasured =
      Action("u-2", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "old", "research");
  unmeasured.allocated = testing::Usd(50);
  unmeasured.usage_measured = false;
  rows.push_back(unmeasured);
  // Two recommendations for one workload: only the latest counts as proposed.
  LedgerAction r1 =
      Action("r-1", ActionKind::kRecommendation, ActionStatus::kProposed, "web", "search", 10);
  r1.monthly_before = testing::Usd(1000);
  r1.monthly_after = testing::Usd(500);
  LedgerAction r2 = r1;
  r2.action_id = "r-2";
  r2.time_s = 20;
  r2.monthly_after = testing::Usd(400);
  rows.push_back(r1);
  rows.push_back(r2);
  // An applied change and its rollback cancel out; a second applied change stands.
  LedgerAction applied =
      Action("c-1", ActionKind::kAppliedChange, ActionStatus::kApplied, "api", "search", 30);
  applied.monthly_before = testing::Usd(800);
  applied.monthly_after = testing::Usd(200);
  LedgerAction rollback =
      Action("c-2", ActionKind::kRollback, ActionStatus::kApplied, "api", "search", 40);
  rollback.monthly_before = testing::Usd(200);
  rollback.monthly_after = testing::Usd(800);
  LedgerAction applied2 =
      Action("c-3", ActionKind::kAppliedChange, ActionStatus::kApplied, "db", "search", 50);
  applied2.monthly_before = testing::Usd(300);
  applied2.monthly_after = testing::Usd(100);
  LedgerAction failed =
      Action("c-4", ActionKind::kAppliedChange, ActionStatus::kFailed, "db", "search", 60);
  failed.monthly_before = testing::Usd(999);
  for (const auto& a : {applied, rollback, applied2, failed}) rows.push_back(a);
  ASSERT_TRUE(ledger_->Append(rows).ok());

  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->groups.size(), 2u);
  const ShowbackRow& research = s->groups[0];
  const ShowbackRow& search = s->groups[1];
  EXPECT_EQ(research.group, "research");
  EXPECT_EQ(research.allocated, testing::Usd(150));
  EXPECT_EQ(research.idle_tax_vram, testing::Usd(70)) << "unmeasured rows add no idle tax";
  EXPECT_EQ(research.idle_tax_sm, testing::Usd(90));
  EXPECT_EQ(search.savings_proposed_monthly, testing::Usd(600));
  EXPECT_EQ(search.savings_realised_monthly, testing::Usd(200));
  EXPECT_EQ(s->total.allocated, research.allocated + search.allocated);
  EXPECT_EQ(s->total.savings_proposed_monthly, testing::Usd(600));

  // A time window keeps only the rows inside it.
  ShowbackQuery window;
  window.from_s = 15;
  window.to_s = 45;
  Result<Showback> w = ledger_->QueryShowback(window);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->groups.size(), 1u);
  EXPECT_EQ(w->groups[0].savings_proposed_monthly, testing::Usd(600));
  EXPECT_EQ(w->groups[0].savings_realised_monthly, 0)
      << "change and rollback both inside the window";
}

TEST_P(LedgerTest, ShowbackFormatsAsCsvJsonAndMarkdown) {
  LedgerAction usage =
      Action("u-1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "train", "research");
  usage.allocated_gpu_time = testing::GpuHours(10);
  usage.allocated = testing::Usd(12.5);
  ASSERT_TRUE(ledger_->Append(usage).ok());
  const Showback s = *ledger_->QueryShowback({});
  const std::string csv = FormatShowback(s, ShowbackGroup::kCostCenter, ReportFormat::kCsv);
  EXPECT_EQ(csv.substr(0, csv.find(',')), "cost_center");
  EXPECT_NE(csv.find("research,,,USD,10.000,12.500000"), std::string::npos) << csv;
  EXPECT_NE(FormatShowback(s, ShowbackGroup::kCostCenter, ReportFormat::kJson)
                .find("\"allocated_usd\": 12.5"),
            std::string::npos);
  ShowbackQuery by_model;
  by_model.group_by = ShowbackGroup::kGpuModel;
  const std::string md = FormatShowback(*ledger_->QueryShowback(by_model), ShowbackGroup::kGpuModel,
                                        ReportFormat::kMarkdown);
  EXPECT_NE(md.find("| H100-80GB"), std::string::npos) << md;
  EXPECT_NE(md.find("| GPU model"), std::string::npos) << md;
}

TEST_P(LedgerTest, ShowbackSummaryIsThreeLinesAndSaysWhatIsMissing) {
  const std::string empty = FormatShowback(*ledger_->QueryShowback({}), ShowbackGroup::kCostCenter,
                                           ReportFormat::kSummary);
  EXPECT_NE(empty.find("fleet idle tax            none: no allocated GPU time"), std::string::npos)
      << empty;
  EXPECT_NE(empty.find("no metered periods"), std::string::npos) << empty;
  LedgerAction usage =
      Action("u-1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "train", "research");
  usage.allocated_gpu_time = testing::GpuHours(10);
  usage.allocated = testing::Usd(40);
  usage.used_vram = testing::Usd(10);
  LedgerAction metered =
      Action("m-1", ActionKind::kMeteredPeriod, ActionStatus::kApplied, "ScaledObject/q", "ai");
  metered.metered_gpu_time = testing::GpuHours(1);
  metered.metered = testing::Usd(2.5);
  metered.reserved = testing::Usd(20);
  LedgerAction proposal =
      Action("r-1", ActionKind::kRecommendation, ActionStatus::kProposed, "train", "research");
  proposal.monthly_before = testing::Usd(1000);
  proposal.monthly_after = testing::Usd(250);
  ASSERT_TRUE(ledger_->Append(std::vector<LedgerAction>{usage, metered, proposal}).ok());
  const std::string summary = FormatShowback(*ledger_->QueryShowback({}),
                                             ShowbackGroup::kCostCenter, ReportFormat::kSummary);
  EXPECT_EQ(summary,
            "fleet idle tax            $30.00 of $40.00 allocated GPU cost is idle (75.0 %, "
            "VRAM-residency basis)\n"
            "proposed monthly savings  $750.00 a month\n"
            "scale-to-zero metering    $2.50 metered vs $20.00 reserved (12.5 % of the "
            "reservation)\n");
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

// Two installations writing the same workload names (and so the same action ids) into one
// ledger: their rows, marks and showback stay apart.
TEST_P(LedgerTest, TwoClustersWritingTheSameIdsStayApart) {
  ledger_.reset();
  Result<std::unique_ptr<Ledger>> east = Ledger::Open(Path(), {.cluster = "east"});
  Result<std::unique_ptr<Ledger>> west = Ledger::Open(Path(), {.cluster = "west"});
  ASSERT_TRUE(east.ok() && west.ok()) << east.status().message() << west.status().message();
  LedgerAction a =
      Action("usage/ns/w/1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "w", "finance");
  a.period_start_s = 0;
  a.period_end_s = 3600;
  a.allocated = 1'000'000;
  ASSERT_EQ(*(*east)->Append(std::span(&a, 1), std::vector<ChargeMark>{{"w/gpu0", 3600}}), 1u);
  a.allocated = 3'000'000;  // another cluster's row under the same id: not a conflict
  ASSERT_EQ(*(*west)->Append(std::span(&a, 1), std::vector<ChargeMark>{{"w/gpu0", 7200}}), 1u);
  EXPECT_EQ(*(*west)->Append(a), 0u) << "the same row again is still one row";
  EXPECT_EQ(*(*east)->CountRows(), 2);
  EXPECT_EQ((*(*east)->ChargeMarks()).at("w/gpu0"), 3600);
  EXPECT_EQ((*(*west)->ChargeMarks()).at("w/gpu0"), 7200);
  // A row may name its cluster itself (what `gpuvpa ledger copy` writes).
  LedgerAction named = a;
  named.cluster = "north";
  EXPECT_EQ(*(*east)->Append(named), 1u);

  ShowbackQuery per_cluster;
  per_cluster.group_by = ShowbackGroup::kCluster;
  Result<Showback> by_cluster = (*east)->QueryShowback(per_cluster);
  ASSERT_TRUE(by_cluster.ok()) << by_cluster.status().message();
  ASSERT_EQ(by_cluster->groups.size(), 3u);
  EXPECT_EQ(by_cluster->groups[0].group, "east");
  EXPECT_EQ(by_cluster->groups[0].allocated, 1'000'000);
  EXPECT_EQ(by_cluster->groups[2].group, "west");
  EXPECT_EQ(by_cluster->groups[2].allocated, 3'000'000);
  EXPECT_EQ(by_cluster->total.allocated, 7'000'000);
  ShowbackQuery west_query;
  west_query.cluster = "west";
  Result<Showback> west_only = (*east)->QueryShowback(west_query);
  ASSERT_TRUE(west_only.ok());
  EXPECT_EQ(west_only->total.allocated, 3'000'000);

  LedgerAction bad = a;
  bad.cluster = "West_1";
  Result<size_t> refused = (*east)->Append(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cluster \"West_1\""), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(Ledger::Open(Path(), {.cluster = "Bad Name"}).ok());
}

// A ledger written before clusters existed (schema 2, the demo's, kept as written) opens with
// this build: migrated, every row and mark kept under the migrating installation's cluster,
// and the same figures to the cent.
TEST(LedgerMigrationTest, AVersionTwoLedgerMigratesKeepingItsRowsMarksAndFigures) {
  testing::ScopedTempDir tmp;
  const std::string path = tmp.Path("ledger.db");
  std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db", path);
  Result<std::unique_ptr<Ledger>> l = Ledger::Open(path, {.cluster = "prod-eu"});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ((*l)->schema_version(), Ledger::kSchemaVersion);
  EXPECT_EQ(*(*l)->CountRows(), 15);
  EXPECT_EQ((*(*l)->ChargeMarks()).size(), 11u);
  EXPECT_EQ(*(*l)->IntegrityCheck(), "ok");
  Result<Showback> s = (*l)->QueryShowback({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  const std::string summary =
      FormatShowback(*s, ShowbackGroup::kCostCenter, ReportFormat::kSummary);
  for (const char* figure :
       {"$5,698.95 of $7,436.39", "$21,663.69 a month", "$407.53 metered vs $4,020.67 reserved"})
    EXPECT_NE(summary.find(figure), std::string::npos) << figure << "\n" << summary;
  Result<Ledger::Page> rows = (*l)->ReadRows(0, 100);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 15u);
  for (const LedgerAction& a : rows->rows) EXPECT_EQ(a.cluster, "prod-eu") << a.action_id;
  // Appending a row the old build wrote is still the one row it was.
  EXPECT_EQ(*(*l)->Append(rows->rows[0]), 0u);
  EXPECT_EQ(*(*l)->Append(rows->rows), 0u);
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

// Every figure of a showback row, for comparing two showbacks exactly.
std::vector<int64_t> Figures(const ShowbackRow& r) {
  return {r.allocated_gpu_time,
          r.allocated,
          r.used_vram,
          r.used_sm,
          r.idle_tax_vram,
          r.idle_tax_sm,
          r.savings_realised_monthly,
          r.savings_proposed_monthly,
          r.metered_gpu_time,
          r.metered,
          r.reserved,
          r.billed,
          r.billed_metered,
          r.allocated_unbilled,
          r.usage_measured,
          r.usage_unmeasured,
          r.billed_gpu_time};
}

TEST_P(LedgerTest, EachStepEqualsAShowbackOverItsWindow) {
  // Periods that straddle step edges, instants, metered periods that make a workload metered
  // in some steps only, recommendations superseded within a step and across steps.
  std::vector<LedgerAction> rows;
  for (int i = 0; i < 60; ++i) {
    LedgerAction u = Action("u-" + std::to_string(i), ActionKind::kAllocatedUsage,
                            ActionStatus::kApplied, "Deployment/w" + std::to_string(i % 4) + "/c",
                            i % 3 ? "search" : "research", 1000 + i * 37);
    u.period_start_s = 1000 + i * 37;
    u.period_end_s = u.period_start_s + 25 + (i % 5) * 40;
    u.allocated_gpu_time = 1'000'003 + i * 7;
    u.allocated = 2'000'011 + i * 13;
    u.used_vram = u.allocated / 3;
    u.used_sm = u.allocated / 5;
    u.usage_measured = i % 7 != 0;
    rows.push_back(u);
    if (i % 9 == 0) {
      LedgerAction m = Action("m-" + std::to_string(i), ActionKind::kMeteredPeriod,
                              ActionStatus::kApplied, "Deployment/w1/c", "search", 1000 + i * 37);
      m.period_start_s = 1000 + i * 37;
      m.period_end_s = m.period_start_s + 90;
      m.metered_gpu_time = 500'001;
      m.metered = 900'007 + i;
      m.reserved = 1'900'007;
      rows.push_back(m);
    }
    if (i % 4 == 1) {
      LedgerAction r =
          Action("r-" + std::to_string(i), ActionKind::kRecommendation, ActionStatus::kProposed,
                 "Deployment/w" + std::to_string(i % 8) + "/c", "search", 1000 + i * 41);
      r.monthly_before = testing::Usd(1000);
      r.monthly_after = testing::Usd(100 + i);
      rows.push_back(r);
    }
  }
  ASSERT_TRUE(ledger_->Append(rows).ok());
  for (ShowbackGroup group : {ShowbackGroup::kCostCenter, ShowbackGroup::kAllocation}) {
    ShowbackQuery q;
    q.group_by = group;
    q.from_s = 1100;
    q.to_s = 3500;
    q.step_s = 300;
    Result<std::vector<Showback>> steps = ledger_->QueryShowbackSteps(q);
    ASSERT_TRUE(steps.ok()) << steps.status().message();
    ASSERT_EQ(steps->size(), 8u);
    int64_t proposed = 0;
    for (const Showback& step : *steps) {
      ShowbackQuery one;
      one.group_by = group;
      one.from_s = step.from_s;
      one.to_s = step.to_s;
      Result<Showback> alone = ledger_->QueryShowback(one);
      ASSERT_TRUE(alone.ok()) << alone.status().message();
      ASSERT_EQ(step.groups.size(), alone->groups.size()) << *step.from_s;
      for (size_t g = 0; g < step.groups.size(); ++g) {
        EXPECT_EQ(step.groups[g].group, alone->groups[g].group);
        EXPECT_EQ(Figures(step.groups[g]), Figures(alone->groups[g]))
            << "step from " << *step.from_s << ", group " << step.groups[g].group;
      }
      EXPECT_EQ(Figures(step.total), Figures(alone->total));
      proposed += step.total.savings_proposed_monthly;
    }
    EXPECT_EQ(steps->back().to_s, 3500) << "the last step ends with the window";
    EXPECT_GT(proposed, 0);
  }
  ShowbackQuery bad;
  bad.step_s = 60;
  EXPECT_EQ(ledger_->QueryShowbackSteps(bad).status().code(), StatusCode::kInvalidArgument)
      << "a step needs a window";
  bad.from_s = 0;
  bad.to_s = 1'000'000'000;
  bad.step_s = 1;
  Result<std::vector<Showback>> many = ledger_->QueryShowbackSteps(bad);
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("more than 10000"), std::string::npos)
      << many.status().message();
}

// Showback through the daily totals equals showback over every row, exactly: every window,
// step and grouping, rows within a day, instants, periods across midnight and across several
// days, metered and unmeasured rows, savings, two clusters; appends retried (the totals count
// each row once) and rows appended before the totals existed (the migration fills them).
TEST_P(LedgerTest, DailyTotalsGiveTheFiguresOfEveryRow) {
  constexpr int64_t kDay0 = 20'000 * 86'400;
  uint64_t seed = 12345;
  auto next = [&](uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((seed >> 33) % n);
  };
  const ActionKind kinds[] = {ActionKind::kAllocatedUsage, ActionKind::kAllocatedUsage,
                              ActionKind::kMeteredPeriod,  ActionKind::kAppliedChange,
                              ActionKind::kRollback,       ActionKind::kRecommendation};
  std::vector<LedgerAction> rows;
  for (int i = 0; i < 1'500; ++i) {
    const ActionKind kind = kinds[next(std::size(kinds))];
    const bool instant = kind == ActionKind::kAppliedChange || kind == ActionKind::kRollback ||
                         kind == ActionKind::kRecommendation || next(10) == 0;
    LedgerAction a = Action("d-" + std::to_string(i), kind,
                            kind == ActionKind::kRecommendation && next(3) == 0
                                ? ActionStatus::kApplied
                                : (kind == ActionKind::kRecommendation ? ActionStatus::kProposed
                                                                       : ActionStatus::kApplied),
                            "Deployment/w" + std::to_string(next(6)) + "/c",
                            next(2) ? "search" : "research", kDay0 + next(12 * 86'400));
    a.cluster = next(4) == 0 ? "east" : "";
    a.namespace_name = "ns" + std::to_string(next(3));
    a.gpu_model = next(2) ? "H100-80GB" : "A100-80GB";
    a.before = next(2) ? "nvidia.com/gpu=1" : "nvidia.com/mig-3g.40gb=1";
    if (!instant) {
      // Within the hour, across midnight now and then, or over several days.
      const int64_t lengths[] = {1 + next(3'600), 1 + next(50'000), 86'400 + next(3 * 86'400)};
      a.period_start_s = a.time_s;
      a.period_end_s = a.time_s + lengths[next(3)];
      a.time_s = a.period_end_s;
    }
    a.allocated_gpu_time = 1'000'003 + next(5'000'000);
    a.allocated = 2'000'011 + next(9'000'000);
    a.used_vram = a.allocated / (2 + next(3));
    a.used_sm = a.allocated / (3 + next(3));
    a.usage_measured = next(6) != 0;
    if (kind == ActionKind::kMeteredPeriod) {
      a.metered_gpu_time = 500'001 + next(1'000'000);
      a.metered = 900'007 + next(1'000'000);
      a.reserved = 1'900'007 + next(1'000'000);
    }
    if (kind != ActionKind::kAllocatedUsage && kind != ActionKind::kMeteredPeriod) {
      a.monthly_before = testing::Usd(1000 + next(1000));
      a.monthly_after = testing::Usd(next(900));
    }
    rows.push_back(a);
  }
  const std::span<const LedgerAction> all(rows);
  ASSERT_TRUE(ledger_->Append(all.first(500)).ok());
  // The first 500 rows were there before the daily totals: the migration to schema 5 sums them.
  ASSERT_EQ(RawExec(postgres() ? "DROP TRIGGER actions_daily ON actions; DROP TABLE ledger_daily; "
                                 "DROP FUNCTION gpuvpa_add_daily(); DROP INDEX "
                                 "actions_by_period_start; DROP INDEX actions_across_days; DELETE "
                                 "FROM gpuvpa_schema WHERE version = 5"
                               : "DROP TRIGGER actions_daily; DROP TABLE ledger_daily; DROP INDEX "
                                 "actions_by_period_start; DROP INDEX actions_across_days; PRAGMA "
                                 "user_version = 4"),
            "");
  ledger_.reset();
  ledger_ = std::move(Ledger::Open(Path())).value();
  ASSERT_EQ(ledger_->schema_version(), 5);
  ASSERT_EQ(*ledger_->Append(all.subspan(500, 700)), 700u);
  ASSERT_EQ(*ledger_->Append(all.subspan(300, 1'200)), 300u) << "a retried batch and 300 new";

  auto compare = [&](ShowbackQuery q, const std::string& what) {
    Result<std::vector<Showback>> daily = ledger_->QueryShowbackSteps(q);
    q.use_daily_totals = false;
    Result<std::vector<Showback>> every_row = ledger_->QueryShowbackSteps(q);
    ASSERT_TRUE(daily.ok()) << what << ": " << daily.status().message();
    ASSERT_TRUE(every_row.ok()) << what << ": " << every_row.status().message();
    ASSERT_EQ(daily->size(), every_row->size()) << what;
    for (size_t k = 0; k < daily->size(); ++k) {
      const Showback& a = (*daily)[k];
      const Showback& b = (*every_row)[k];
      ASSERT_EQ(a.groups.size(), b.groups.size()) << what << ", step " << k;
      for (size_t g = 0; g < a.groups.size(); ++g) {
        EXPECT_EQ(a.groups[g].group, b.groups[g].group) << what;
        EXPECT_EQ(Figures(a.groups[g]), Figures(b.groups[g]))
            << what << ", step " << k << ", group " << a.groups[g].group;
      }
      EXPECT_EQ(Figures(a.total), Figures(b.total)) << what << ", step " << k;
    }
  };
  const int64_t h = 3'600, d = 86'400;
  const struct {
    std::optional<int64_t> from, to, step;
  } windows[] = {{std::nullopt, std::nullopt, std::nullopt},
                 {kDay0, kDay0 + 7 * d, std::nullopt},
                 {kDay0, kDay0 + 14 * d, d},
                 {kDay0 + 3 * h, kDay0 + 8 * d + 5 * h, d},
                 {kDay0 - 2 * d, kDay0 + 12 * d, 2 * d},
                 {kDay0 + d, kDay0 + 4 * d, 6 * h},
                 {kDay0 + 5 * h, kDay0 + 11 * d, 36 * h},
                 {kDay0 + 5 * h, kDay0 + 9 * d + 2 * h, std::nullopt},
                 {kDay0 + 2 * d + 7, kDay0 + 3 * d + 7, std::nullopt}};
  int64_t billed = 0;
  for (const auto& w : windows)
    for (ShowbackGroup group : {ShowbackGroup::kCostCenter, ShowbackGroup::kGpuModel,
                                ShowbackGroup::kCluster, ShowbackGroup::kAllocation})
      for (std::optional<std::string> cluster : {std::optional<std::string>(), {"east"}}) {
        ShowbackQuery q;
        q.from_s = w.from;
        q.to_s = w.to;
        q.step_s = w.step;
        q.group_by = group;
        q.cluster = cluster;
        compare(q, "window " + std::to_string(w.from.value_or(-1)) + ".." +
                       std::to_string(w.to.value_or(-1)) + " step " +
                       std::to_string(w.step.value_or(0)) + " group " +
                       std::to_string(static_cast<int>(group)) + " cluster " +
                       cluster.value_or("*"));
        if (!w.from && !cluster) billed = ledger_->QueryShowback(q)->total.billed;
      }
  EXPECT_GT(billed, 0);
  EXPECT_EQ(*ledger_->IntegrityCheck(), "ok");
  // A hand edit of the totals is found.
  ASSERT_EQ(RawExec("UPDATE ledger_daily SET allocated_micro_usd = allocated_micro_usd + 1 WHERE "
                    "day = (SELECT MIN(day) FROM ledger_daily)"),
            "");
  Result<std::string> check = ledger_->IntegrityCheck();
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_NE(check->find("ledger_daily differs from the rows it sums"), std::string::npos) << *check;
}

TEST(AllocationGroupTest, TextRoundTripsAndRefusesOtherShapes) {
  const std::string text =
      AllocationGroupText({"east", "ns", "Deployment/a/b", "cc", "H100-80GB", "nvidia.com/gpu=1"});
  Result<AllocationGroup> g = ParseAllocationGroup(text);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->cluster, "east");
  EXPECT_EQ(g->workload, "Deployment/a/b");
  EXPECT_EQ(g->gpu_model, "H100-80GB");
  EXPECT_EQ(g->resource, "nvidia.com/gpu=1");
  EXPECT_FALSE(ParseAllocationGroup("a\x1f"
                                    "b")
                   .ok());
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

TEST_P(LedgerTest, AReadOnlyLedgerReadsAndRefusesToWrite) {
  LedgerAction usage =
      Action("u-1", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "train", "research");
  usage.allocated = testing::Usd(12.5);
  ASSERT_TRUE(ledger_->Append(usage).ok());
  Result<std::unique_ptr<Ledger>> reader = Ledger::Open(Path(), {.read_only = true});
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  Result<Showback> s = (*reader)->QueryShowback({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->total.allocated, testing::Usd(12.5));
  Result<size_t> appended = (*reader)->Append(
      Action("u-2", ActionKind::kAllocatedUsage, ActionStatus::kApplied, "train", "research"));
  EXPECT_EQ(appended.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(appended.status().message().find("read-only"), std::string::npos);
  EXPECT_EQ(*ledger_->CountRows(), 1);
  if (!postgres()) {
    // Nothing is created or migrated by a reader.
    const std::string missing = Path() + ".missing";
    EXPECT_FALSE(Ledger::Open(missing, {.read_only = true}).ok());
    EXPECT_FALSE(std::filesystem::exists(missing));
    const std::string old = Path() + ".v2";
    std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db",
                               old);
    Result<std::unique_ptr<Ledger>> v2 = Ledger::Open(old, {.read_only = true});
    ASSERT_FALSE(v2.ok());
    EXPECT_EQ(v2.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(v2.status().message().find("schema version 2"), std::string::npos)
        << v2.status().message();
  }
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

TEST_P(LedgerTest, ADeliveryIsRecordedOncePerIdAndNeverChanged) {
  DeliveryRecord d{"delivery/weekly/research/1794182400",
                   1794184200,
                   "weekly",
                   "research",
                   1793577600,
                   1794182400,
                   "delivered",
                   200};
  EXPECT_FALSE(*ledger_->HasDelivery(d.delivery_id));
  EXPECT_TRUE(*ledger_->RecordDelivery(d));
  EXPECT_FALSE(*ledger_->RecordDelivery(d)) << "a second record of the same id is not new";
  EXPECT_TRUE(*ledger_->HasDelivery(d.delivery_id));
  DeliveryRecord bad = d;
  bad.delivery_id = "delivery/x";
  bad.outcome = "maybe";
  EXPECT_EQ(ledger_->RecordDelivery(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(RawExec("UPDATE deliveries SET outcome = 'refused'").find("append-only"),
            std::string::npos);
  EXPECT_NE(RawExec("DELETE FROM deliveries").find("append-only"), std::string::npos);
  Result<std::unique_ptr<Ledger>> reader = Ledger::Open(Path(), {.read_only = true});
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(*(*reader)->HasDelivery(d.delivery_id));
  d.delivery_id += "-2";
  EXPECT_EQ((*reader)->RecordDelivery(d).status().code(), StatusCode::kFailedPrecondition);
  // Another cluster's ledger keeps its own deliveries.
  Result<std::unique_ptr<Ledger>> other = Ledger::Open(Path(), {.cluster = "west"});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(*(*other)->HasDelivery("delivery/weekly/research/1794182400"));
}

}  // namespace
}  // namespace gpuvpa
