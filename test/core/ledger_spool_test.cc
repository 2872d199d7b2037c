// The ledger spool: rows survive a round trip byte for byte, a torn or corrupt line loses only
// itself (and is reported), a record a torn line ran into is kept, Drain moves rows exactly
// once, and a row the ledger refuses goes to the dead-letter file while the others flow.
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
  Result<SpoolDrain> moved = spool.Drain(*ledger);
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(moved->moved, 2u);
  EXPECT_EQ(moved->dead_lettered, 0u);
  EXPECT_EQ(*ledger->CountRows(), 2) << "appends are idempotent by action id";
  EXPECT_FALSE(std::filesystem::exists(spool.path()));
  EXPECT_EQ(spool.Drain(*ledger)->moved, 0u) << "nothing left to move";
}

// A row that names its cluster keeps it through the spool; one that does not takes the
// ledger's when it is moved (and its line is as older builds wrote it).
TEST(LedgerSpoolTest, ARowsClusterSurvivesTheSpool) {
  testing::ScopedTempDir tmp;
  LedgerSpool spool(tmp.Path("rows.spool"));
  LedgerAction named = Row("east-row", 1'000'000);
  named.cluster = "east";
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{named, Row("plain", 2'000'000)}).ok());
  Result<std::vector<LedgerAction>> rows = spool.Read();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].cluster, "east");
  EXPECT_EQ((*rows)[1].cluster, "");
  std::unique_ptr<Ledger> ledger =
      std::move(Ledger::Open(tmp.Path("ledger.db"), {.cluster = "west"})).value();
  ASSERT_EQ(spool.Drain(*ledger)->moved, 2u);
  Result<std::vector<LedgerTotal>> totals = ledger->Totals();
  ASSERT_TRUE(totals.ok());
  ASSERT_EQ(totals->size(), 2u);
  EXPECT_EQ((*totals)[0].cluster, "east");
  EXPECT_EQ((*totals)[1].cluster, "west");
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(LedgerSpoolTest, ATornOrCorruptLineLosesOnlyItself) {
  testing::ScopedTempDir tmp;
  LedgerSpool spool(tmp.Path("rows.spool"));
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("a", 1), Row("b", 2), Row("c", 3)}).ok());
  const std::string text = FileText(spool.path());
  // A torn last line.
  std::ofstream(spool.path(), std::ios::trunc) << text.substr(0, text.size() - 25);
  size_t dropped = 0;
  Result<std::vector<LedgerAction>> rows = spool.Read(&dropped);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u);
  EXPECT_EQ(dropped, 1u);
  // A corrupt middle line: its neighbours are kept.
  std::string corrupt = text;
  const size_t second = text.find('\n') + 1;
  corrupt[second + 20] = corrupt[second + 20] == 'x' ? 'y' : 'x';
  std::ofstream(spool.path(), std::ios::trunc) << corrupt;
  rows = spool.Read(&dropped);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].action_id, "a");
  EXPECT_EQ((*rows)[1].action_id, "c");
  EXPECT_EQ(dropped, 1u);
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
  Result<SpoolDrain> drained = spool.Drain(*ledger);
  ASSERT_TRUE(drained.ok()) << drained.status().message();
  EXPECT_EQ(drained->moved, 2u);
  EXPECT_EQ(drained->dropped_lines, 1u);
  EXPECT_EQ(*ledger->CountRows(), 2);
}

// A SIGKILL tears the last line; the next append must not merge into it (that line would be
// corrupt, not last). And a spool written by a build that did merge is salvaged: the record
// inside the merged line is found.
TEST(LedgerSpoolTest, AppendsAfterATornLineAreKeptAndMergedRecordsAreSalvaged) {
  testing::ScopedTempDir tmp;
  LedgerSpool spool(tmp.Path("rows.spool"));
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("a", 1), Row("b", 2)}).ok());
  const std::string text = FileText(spool.path());
  std::ofstream(spool.path(), std::ios::trunc) << text.substr(0, text.size() - 25);
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("c", 3)}).ok());
  ASSERT_TRUE(spool.Append(std::vector<LedgerAction>{Row("d", 4)}).ok());
  size_t dropped = 0;
  Result<std::vector<LedgerAction>> rows = spool.Read(&dropped);
  ASSERT_TRUE(rows.ok());
  std::vector<std::string> ids;
  for (const LedgerAction& r : *rows) ids.push_back(r.action_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(dropped, 1u);
  // Merged: the torn "b" and "c" in one line, as an older build wrote them.
  const std::string first_line = text.substr(0, text.find('\n') + 1);
  const std::string torn_b = text.substr(first_line.size(), text.size() - first_line.size() - 25);
  LedgerSpool other(tmp.Path("other.spool"));
  ASSERT_TRUE(other.Append(std::vector<LedgerAction>{Row("c", 3)}).ok());
  std::ofstream(spool.path(), std::ios::trunc) << first_line << torn_b << FileText(other.path());
  rows = spool.Read(&dropped);
  ASSERT_TRUE(rows.ok());
  ids.clear();
  for (const LedgerAction& r : *rows) ids.push_back(r.action_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(dropped, 1u);
}

// A row the ledger refuses as invalid (a conflicting duplicate here) is set aside with its
// reason; the rows before and after it reach the ledger, through the spool and directly.
TEST(LedgerSpoolTest, APoisonRowGoesToTheDeadLetterFileAndTheRestFlows) {
  testing::ScopedTempDir tmp;
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(tmp.Path("ledger.db"))).value();
  ASSERT_TRUE(ledger->Append(Row("poison", 100)).ok());
  LedgerSpool spool(tmp.Path("rows.spool"));
  ASSERT_TRUE(
      spool.Append(std::vector<LedgerAction>{Row("a", 1), Row("poison", 999), Row("b", 2)}).ok());
  SpoolingLedgerSink sink(*ledger, spool.path());
  // Directly too: a row over the bounds among good ones.
  LedgerAction huge = Row("huge", 1);
  huge.workload = std::string(2000, 'w');
  Result<size_t> added = sink.Append(std::vector<LedgerAction>{Row("c", 3), huge, Row("d", 4)});
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 2u);
  for (const char* id : {"a", "b", "c", "d"}) EXPECT_TRUE(*ledger->Contains(id)) << id;
  EXPECT_EQ(*ledger->CountRows(), 5);  // poison's first version and a, b, c, d
  EXPECT_EQ(sink.dead_lettered_rows(), 2u);
  EXPECT_FALSE(std::filesystem::exists(spool.path()));
  // The dead-letter file is a spool of its own, each row with its reason.
  LedgerSpool dead(spool.dead_letter_path());
  Result<std::vector<LedgerAction>> set_aside = dead.Read();
  ASSERT_TRUE(set_aside.ok());
  ASSERT_EQ(set_aside->size(), 2u);
  EXPECT_EQ((*set_aside)[0].action_id, "poison");
  EXPECT_EQ((*set_aside)[0].metered, 999);
  EXPECT_EQ((*set_aside)[1].action_id, "huge");
  const std::string reasons = FileText(dead.path());
  EXPECT_NE(reasons.find("dead_letter_reason"), std::string::npos);
  EXPECT_NE(reasons.find("is recorded with metered"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("workload is 2000 bytes"), std::string::npos) << reasons;
}

}  // namespace
}  // namespace gpuvpa
