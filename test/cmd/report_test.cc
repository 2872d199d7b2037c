// gpuvpa plan end to end on the demo fleet: proposals in the ledger match the report, the JSON
// follows its schema, the CSV reads back under RFC 4180, and the HTML renders in a real headless
// Chromium without console errors (the screenshot is kept in the build tree).
#include "updater/report/report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>

#include "cmd/commands.h"
#include "core/base/atomic_file.h"
#include "core/cost/ledger.h"
#include "recommender/cmd/commands.h"
#include "test/support/process.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::updater {
namespace {

using cmd::RunPlanCommand;

using Command = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);

// RFC 4180: fields separated by commas, records by CRLF, quoted fields may hold commas, CRLF
// and doubled quotes. Independent of the writer.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      ++i;
    } else {
      field += c;
    }
  }
  EXPECT_TRUE(field.empty() && row.empty()) << "the last record must end with CRLF";
  return rows;
}

class PlanReportTest : public ::testing::Test {
 protected:
  int Run(Command command, const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return command(args, out_, err_);
  }

  void SetUpDemo() {
    ASSERT_EQ(Run(recommender::RunDemoTraceCommand, {"--out", dir_.Path("demo.csv")}), 0);
    ASSERT_EQ(Run(recommender::RunRecommendCommand,
                  {"--trace", dir_.Path("demo.csv"), "--checkpoint", dir_.Path("ckpt"), "--ledger",
                   dir_.Path("ledger.db")}),
              0)
        << err_.str();
  }

  testing::ScopedTempDir dir_;
  std::ostringstream out_, err_;
};

TEST_F(PlanReportTest, ProposalsInTheLedgerMatchTheReportsAndRerunAddsNothing) {
  SetUpDemo();
  const std::string report = dir_.Path("report");
  ASSERT_EQ(Run(RunPlanCommand, {"--checkpoint", dir_.Path("ckpt"), "--ledger",
                                 dir_.Path("ledger.db"), "--report", report}),
            0)
      << err_.str();
  for (const char* name : {"report.html", "report.md", "report.json", "report.csv"})
    EXPECT_TRUE(std::filesystem::exists(report + "/" + name)) << name;
  EXPECT_NE(err_.str().find("7 proposals (7 new)"), std::string::npos) << err_.str();

  const auto json = nlohmann::json::parse(*ReadWholeFile(report + "/report.json"));
  EXPECT_EQ(json["schema"], "gpuvpa.plan-report/v1");
  std::map<std::string, int64_t> savings_by_cost_center;
  std::vector<std::string> names;
  size_t workloads = 0;
  for (const auto& cc : json["cost_centers"]) {
    names.push_back(cc["name"]);
    double sum = 0;
    for (const auto& ns : cc["namespaces"])
      for (const auto& w : ns["workloads"]) {
        ++workloads;
        const double before = w["cost"]["monthly_before_usd"],
                     after = w["cost"]["monthly_after_usd"];
        EXPECT_GE(after, 0);
        sum += before - after;
        // A change has its YAML, except a scale-to-zero that keeps its size and has no known
        // queue: an idle-timeout scale-down, said so, with nothing to apply.
        if (w["action"] == "scale_to_zero" && w["resize"] == "no_change" && w["queue_list"] == "") {
          EXPECT_TRUE(w["changes"].empty());
          EXPECT_NE(w["action_label"].get<std::string>().find("idle-timeout"), std::string::npos);
        } else if (w["action"] != "no_change") {
          EXPECT_FALSE(w["yaml_change"].get<std::string>().empty());
        }
        EXPECT_EQ(w["charts"]["hourly_active_ratio"].size(), 168u);
      }
    savings_by_cost_center[cc["name"]] = std::llround(sum * 1e6);
    EXPECT_NEAR(cc["monthly_savings_usd"].get<double>(), sum, 1e-6);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(workloads, 7u);

  // Showback's "savings proposed" is the latest proposal per workload: the plan's.
  Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(dir_.Path("ledger.db"));
  ASSERT_TRUE(ledger.ok());
  Result<Showback> showback = (*ledger)->QueryShowback({});
  ASSERT_TRUE(showback.ok());
  int64_t proposed_total = 0;
  for (const ShowbackRow& row : showback->groups) {
    EXPECT_EQ(row.savings_proposed_monthly, savings_by_cost_center[row.group]) << row.group;
    proposed_total += row.savings_proposed_monthly;
  }
  EXPECT_GT(proposed_total, 0);

  // The same evidence planned again writes nothing new.
  ASSERT_EQ(
      Run(RunPlanCommand, {"--checkpoint", dir_.Path("ckpt"), "--ledger", dir_.Path("ledger.db")}),
      0);
  EXPECT_NE(err_.str().find("7 proposals (0 new)"), std::string::npos) << err_.str();

  // CSV: RFC 4180, one record per workload, every record as wide as the header.
  const auto csv = ParseCsv(*ReadWholeFile(report + "/report.csv"));
  ASSERT_EQ(csv.size(), 8u);
  for (const auto& row : csv) EXPECT_EQ(row.size(), csv[0].size());
  EXPECT_EQ(csv[0][0], "cost_center");

  const std::string md = *ReadWholeFile(report + "/report.md");
  EXPECT_NE(md.find("| cost center | idle tax (history) |"), std::string::npos);
  EXPECT_NE(md.find("```sh\nkubectl -n agents patch deployment agent-loop"), std::string::npos);
}

TEST_F(PlanReportTest, RecommendationsJsonIsAcceptedAndHostileOnesAreRefusedByField) {
  SetUpDemo();
  ASSERT_EQ(
      Run(recommender::RunRecommendCommand, {"--trace", dir_.Path("demo.csv"), "--format", "json"}),
      0);
  ASSERT_TRUE(WriteFileAtomically(dir_.Path("recs.json"), out_.str()).ok());
  ASSERT_EQ(Run(RunPlanCommand, {"--recommendations", dir_.Path("recs.json"), "--report",
                                 dir_.Path("r"), "--format", "md"}),
            0)
      << err_.str();
  EXPECT_NE(out_.str().find("mig_profile"), std::string::npos) << out_.str();

  std::string text = *ReadWholeFile(dir_.Path("recs.json"));
  const size_t at = text.find("\"sm_p90_ratio\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find(',', at) - at, "\"sm_p90_ratio\": 42");
  ASSERT_TRUE(WriteFileAtomically(dir_.Path("bad.json"), text).ok());
  EXPECT_EQ(Run(RunPlanCommand, {"--recommendations", dir_.Path("bad.json")}), 1);
  EXPECT_NE(err_.str().find("sm_p90_ratio: 42 is not a ratio"), std::string::npos) << err_.str();

  ASSERT_TRUE(WriteFileAtomically(dir_.Path("typo.json"), "[{\"vram_targett_bytes\": 1}]").ok());
  EXPECT_EQ(Run(RunPlanCommand, {"--recommendations", dir_.Path("typo.json")}), 1);
  EXPECT_NE(err_.str().find("vram_targett_bytes"), std::string::npos) << err_.str();

  EXPECT_EQ(Run(RunPlanCommand, {"--checkpoint", dir_.Path("ckpt"), "--format", "pdf"}), 2);
  EXPECT_NE(err_.str().find("\"pdf\""), std::string::npos);
  EXPECT_EQ(Run(RunPlanCommand, {"--checkpoint", dir_.Path("ckpt"), "--format", ""}), 2);

  // A VRAM figure above the device's memory is refused, naming the field and the model.
  text = *ReadWholeFile(dir_.Path("recs.json"));
  const size_t peak = text.find("\"vram_history_peak_bytes\"");
  ASSERT_NE(peak, std::string::npos);
  text.replace(peak, text.find(',', peak) - peak, "\"vram_history_peak_bytes\": 9e14");
  ASSERT_TRUE(WriteFileAtomically(dir_.Path("huge.json"), text).ok());
  EXPECT_EQ(Run(RunPlanCommand, {"--recommendations", dir_.Path("huge.json")}), 1);
  EXPECT_NE(err_.str().find("vram_history_peak_bytes: 9e+14 is above the"), std::string::npos)
      << err_.str();
  EXPECT_EQ(Run(RunPlanCommand, {"--report", dir_.Path("r")}), 2);  // no source
  EXPECT_EQ(Run(RunPlanCommand, {"--help"}), 0);
  EXPECT_NE(out_.str().find("--recommendations"), std::string::npos);
}

PlannedAction HostileAction() {
  PlannedAction a;
  v1::WorkloadIdentity* id = a.evidence.mutable_identity();
  id->set_namespace_name("ml");
  id->set_owner_kind("Deployment");
  id->set_owner_name("x");
  id->set_container("c");
  id->set_cost_center("<script>alert(1)</script>, \"team\"");
  a.reason = "a \"quoted\", comma\r\nand a new line";
  a.from_allocation = a.to_allocation = "nvidia.com/gpu=1";
  a.priced = true;
  a.monthly_before = a.monthly_after = 1'000'000;
  return a;
}

TEST(ReportTextTest, CsvQuotesPerRfc4180AndHtmlEscapesEveryName) {
  ReportInput input;
  input.actions.push_back(HostileAction());
  const auto csv = ParseCsv(RenderCsvReport(input));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[1][0], "<script>alert(1)</script>, \"team\"");
  EXPECT_EQ(csv[1][std::find(csv[0].begin(), csv[0].end(), "reason") - csv[0].begin()],
            "a \"quoted\", comma\r\nand a new line");
  Result<std::string> html = RenderHtmlReport(input);
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find("<script>"), std::string::npos);
  EXPECT_NE(html->find("&lt;script&gt;"), std::string::npos);
  Result<std::string> md = RenderMarkdownReport(input);
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(md->find("<script>"), std::string::npos);
}

// Runs headless Chromium on a file; returns its log (console messages included) and whether it
// exited 0 within the deadline.
// `output` is "--screenshot=PNG" or "--dump-dom" (the DOM after load goes to the log).
bool RenderInChromium(const std::string& html_path, const std::string& output,
                      const std::string& profile_dir, const std::string& log_path,
                      int width = 1280) {
  const pid_t pid = testing::SpawnProcess(
      {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
       "--no-first-run", "--disable-background-networking", "--disable-component-update",
       "--disable-sync", "--allow-file-access-from-files", "--user-data-dir=" + profile_dir,
       "--enable-logging=stderr", "--v=0", "--window-size=" + std::to_string(width) + ",2400",
       output, "file://" + html_path},
      log_path);
  if (pid <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(PlanReportTest, HtmlReportRendersInHeadlessChromiumWithoutConsoleErrors) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "Debian chromium is needed: bash deploy/setup-deps.sh --with-browser";
  // The detector sees a console error when there is one.
  ASSERT_TRUE(WriteFileAtomically(dir_.Path("broken.html"),
                                  "<html><body><script>console.error('broken page')</script>"
                                  "</body></html>")
                  .ok());
  ASSERT_TRUE(RenderInChromium(dir_.Path("broken.html"), "--screenshot=" + dir_.Path("broken.png"),
                               dir_.Path("profile0"), dir_.Path("broken.log")));
  EXPECT_NE(ReadWholeFile(dir_.Path("broken.log"))->find("CONSOLE"), std::string::npos);

  SetUpDemo();
  ASSERT_EQ(Run(RunPlanCommand, {"--checkpoint", dir_.Path("ckpt"), "--report", dir_.Path("r"),
                                 "--format", "html"}),
            0);
  const std::string shot_dir = std::string(GPUVPA_BIN_DIR) + "/../test-artifacts";
  std::filesystem::create_directories(shot_dir);
  // 1400 px wide (a desktop), and 400 px (a phone): Chromium's window is at least 500 px wide,
  // so the 400 px view is the report in a 400 px frame of a page that measures it.
  std::ofstream(dir_.Path("r/at-400.html"))
      << "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"report.html\" "
         "style=\"width:400px;height:2400px;border:0\"></"
         "iframe><script>document.getElementById('f')"
         ".onload=function(){var "
         "d=this.contentDocument;document.body.setAttribute('data-page-width',"
         "d.documentElement.scrollWidth+'/'+this.contentWindow.innerWidth)}</script></body></html>";
  for (const auto& [page, width, png] :
       {std::tuple<std::string, int, std::string>{"report.html", 1400, "plan-report-1400.png"},
        {"at-400.html", 500, "plan-report-400.png"}}) {
    const std::string path = shot_dir + "/" + png;
    std::filesystem::remove(path);
    ASSERT_TRUE(RenderInChromium(dir_.Path("r/" + page), "--screenshot=" + path,
                                 dir_.Path("profile-" + png), dir_.Path(png + ".log"), width));
    const std::string log = *ReadWholeFile(dir_.Path(png + ".log"));
    EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
    const std::string image = *ReadWholeFile(path);
    ASSERT_GT(image.size(), 10000u);
    EXPECT_EQ(image.substr(1, 3), "PNG");
    std::cout << "screenshot: " << std::filesystem::canonical(path) << "\n";
  }
  // At 400 px nothing makes the page itself scroll sideways: wide tables and YAML scroll inside
  // their boxes, charts scale, headline numbers wrap.
  ASSERT_TRUE(RenderInChromium(dir_.Path("r/at-400.html"), "--dump-dom", dir_.Path("profile-dom"),
                               dir_.Path("dom.log"), 500));
  const std::string dom = *ReadWholeFile(dir_.Path("dom.log"));
  const size_t at = dom.find("data-page-width=\"");
  ASSERT_NE(at, std::string::npos) << dom.substr(0, 2000);
  const std::string measured = dom.substr(at + 17, dom.find('"', at + 17) - at - 17);
  const int page_width = std::stoi(measured.substr(0, measured.find('/')));
  EXPECT_EQ(measured.substr(measured.find('/') + 1), "400") << measured;
  EXPECT_LE(page_width, 400) << "the report is " << page_width << " px wide in a 400 px view";
}

}  // namespace
}  // namespace gpuvpa::updater
