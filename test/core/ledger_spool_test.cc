// The ledger spool: rows survive a round trip byte for byte, a torn last line is skipped and
// reported, a corrupt middle line refuses the whole file, and Drain moves rows exactly once.
#include "core/cost/ledger_spool.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

LedgerAction Row(const std::string& id, MicroUsd metered) {
  LedgerAction a;
  a.action_id = id;
  a.time_s = 1700003600;
  a.kind = ActionKind::kMeteredPeriod;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "ml";
  a.workload = "ScaledObject/agent";
  a.cost_center = "équipe-ia";  // UTF-8 survives
  a.gpu_model = "H100-80GB";
  a.period_start_s = 1700000000;
  a.period_end_s = 1700003600;
  a.metered_gpu_time = 3'600'000;
  a.metered = metered;
  a.reserved = 2 * metered;
  a.evidence_json = R"({"replica_seconds":3600})";
  return a;
}

TEST(LedgerSpoolTest, RowsRoundTripAndDrainMovesThemOnce) {
  testing::ScopedTempDir tmp;
  LedgerSpool spool(tmp.Path("rows.spool"));
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("a", 2'640'000)}).ok());
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("b", 5'280'000)}).ok());
  Result<std::vector<LedgerAction>> rows = spool.Read();
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].cost_center, "équipe-ia");
  EXPECT_EQ((*rows)[1].metered, 5'280'000);
  EXPECT_EQ((*rows)[1].evidence_json, R"({"replica_seconds":3600})");

  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
  ASSERT_TRUE(ledger->Append(Row("a", 2'640'000)).ok());  // already there: a crash after append
  Result<size_t> moved = spool.Drain(*ledger);
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(*moved, 2u);
  EXPECT_EQ(*ledger->CountRows(), 2) << "appends are idempotent by action id";
  EXPECT_FALSE(std::filesystem::exists(spool.path()));
  EXPECT_EQ(*spool.Drain(*ledger), 0u) << "nothing left to move";
}

TEST(LedgerSpoolTest, ATornLastLineIsSkippedAndACorruptMiddleLineRefusesTheFile) {
  testing::ScopedTempDir tmp;
  LedgerSpool spool(tmp.Path("rows.spool"));
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("a", 1), Row("b", 2)}).ok());
  std::string text;
  {
    std::ifstream in(spool.path());
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(spool.path(), std::ios::trunc) << text.substr(0, text.size() - 25);  // torn
  size_t torn = 0;
  Result<std::vector<LedgerAction>> rows = spool.Read(&torn);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
  EXPECT_EQ(torn, 1u);

  std::string corrupt = text;
  corrupt[20] = corrupt[20] == 'x' ? 'y' : 'x';  // inside the first row's JSON
  std::ofstream(spool.path(), std::ios::trunc) << corrupt;
  Result<std::vector<LedgerAction>> refused = spool.Read();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("line 1"), std::string::npos);
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
  EXPECT_FALSE(spool.Drain(*ledger).ok());
  EXPECT_TRUE(std::filesystem::exists(spool.path())) << "kept for a person to look at";
}

}  // namespace
}  // namespace gpuvpa
