// The openb import and showback against an independent computation over the same rows.
#include "core/cost/openb_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cmd/commands.h"
#include "core/cost/showback.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

using cmd::RunImportOpenbCommand;
using cmd::RunShowbackCommand;

const std::string kDataDir = GPUVPA_SHARED_DATA_DIR;
const std::string kPods = kDataDir + "/openb_pod_list_default.csv";
const std::string kNodes = kDataDir + "/openb_node_list_gpu_node.csv";

// Every model in the node list priced explicitly, so the test depends on no default.
const std::map<std::string, double> kPrices = {{"T4", 0.50},      {"P100", 1.25}, {"V100M16", 2.50},
                                               {"V100M32", 3.00}, {"A10", 1.00},  {"G2", 0.75},
                                               {"G3", 1.75}};
constexpr const char* kConfig = R"(
prices:
  - {gpu_model: T4, usd_per_gpu_hour: 0.50}
  - {gpu_model: P100, usd_per_gpu_hour: 1.25}
  - {gpu_model: V100M16, usd_per_gpu_hour: 2.50}
  - {gpu_model: V100M32, usd_per_gpu_hour: 3.00}
  - {gpu_model: A10, usd_per_gpu_hour: 1.00}
  - {gpu_model: G2, in_house: true, usd_per_gpu_hour: 0.75}
  - {gpu_model: G3, in_house: true, usd_per_gpu_hour: 1.75}
cost_centers:
  namespaces: {openb-ls: latency-sensitive, openb-be: best-effort}
)";

std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream hs(line);
  for (std::string f; std::getline(hs, f, ',');) header.push_back(f);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::stringstream ls(line);
    std::string f;
    for (size_t i = 0; i < header.size(); ++i) {
      if (!std::getline(ls, f, ',')) f.clear();
      row[header[i]] = f;
    }
    rows.push_back(row);
  }
  return rows;
}

struct Figures {
  int64_t milli_gpu_s = 0;
  int64_t micro_usd = 0;
};

// The showback CSV (RFC 4180, CRLF, one row per group and no total) as {group -> figures}.
std::map<std::string, Figures> ParseShowbackCsv(const std::string& csv) {
  std::map<std::string, Figures> out;
  std::stringstream in(csv);
  auto fields = [](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    return f;
  };
  std::string line;
  std::getline(in, line);  // header: group, period_start, ..., allocated_gpu_hours, allocated_usd
  const std::vector<std::string> header = fields(line);
  auto column = [&](const char* name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t hours = column("allocated_gpu_hours"), usd = column("allocated_usd");
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields(line);
    if (f.size() != header.size()) {
      ADD_FAILURE() << "a row of " << f.size() << " fields under a header of " << header.size();
      continue;
    }
    out[f[0]] = {std::llround(std::stod(f[hours]) * 3.6e6), std::llround(std::stod(f[usd]) * 1e6)};
  }
  return out;
}

class OpenbImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(tmp_.Path("config.yaml")) << kConfig;
    std::ostringstream out, err;
    ASSERT_EQ(RunImportOpenbCommand({"--pods", kPods, "--nodes", kNodes, "--ledger", Ledger(),
                                     "--config", tmp_.Path("config.yaml")},
                                    out, err),
              0)
        << err.str();
    import_output_ = out.str();
  }
  std::string Ledger() const { return tmp_.Path("ledger.db"); }
  std::string Showback(const std::string& group_by) {
    std::ostringstream out, err;
    EXPECT_EQ(RunShowbackCommand({"--ledger", Ledger(), "--group-by", group_by, "--format", "csv"},
                                 out, err),
              0)
        << err.str();
    return out.str();
  }
  testing::ScopedTempDir tmp_;
  std::string import_output_;
};

TEST_F(OpenbImportTest, AllocatedGpuHoursAndCostMatchAnIndependentComputation) {
  // Independent: blended price from the node inventory, then every scheduled GPU pod by its
  // fraction (num_gpu x gpu_milli) over its lifetime, rounded per pod to the micro-dollar.
  int64_t weighted = 0, gpus = 0;
  for (const auto& node : ReadCsv(kNodes)) {
    const int64_t n = std::stoll(node.at("gpu"));
    weighted += n * std::llround(kPrices.at(node.at("model")) * 1e6);
    gpus += n;
  }
  const double blended = static_cast<double>(weighted) / static_cast<double>(gpus) / 1e6;
  Figures expected;
  int64_t fractional_pods = 0, gpu_pods = 0;
  for (const auto& pod : ReadCsv(kPods)) {
    const int64_t num_gpu = std::stoll(pod.at("num_gpu"));
    const int64_t milli = std::stoll(pod.at("gpu_milli"));
    if (num_gpu == 0 || milli == 0 || pod.at("scheduled_time").empty()) continue;
    ASSERT_TRUE(pod.at("gpu_spec").empty()) << "this trace names no model per pod";
    const int64_t lifetime =
        std::stoll(pod.at("deletion_time")) - std::stoll(pod.at("scheduled_time"));
    const int64_t milli_gpu_s = num_gpu * milli * lifetime;
    expected.milli_gpu_s += milli_gpu_s;
    expected.micro_usd += std::llround(static_cast<double>(milli_gpu_s) * blended / 3.6);
    ++gpu_pods;
    fractional_pods += milli < 1000 ? 1 : 0;
  }
  ASSERT_GT(fractional_pods, gpu_pods / 3)
      << "the trace is ~44 % fractional; the test must cover it";

  const std::map<std::string, Figures> by_model = ParseShowbackCsv(Showback("gpu-model"));
  ASSERT_EQ(by_model.size(), 1u);  // "unspecified" only: the CSV has no total row
  EXPECT_EQ(by_model.at("unspecified").micro_usd, expected.micro_usd);
  EXPECT_NEAR(by_model.at("unspecified").milli_gpu_s, expected.milli_gpu_s,
              1.8e3)  // CSV keeps 3 decimals of GPU-h
      << "allocated GPU-hours";
  EXPECT_NE(import_output_.find(std::to_string(gpu_pods) + " holding GPU time"), std::string::npos)
      << import_output_;
}

TEST_F(OpenbImportTest, CostCentersAddUpToTheFleetTotalExactly) {
  const std::map<std::string, Figures> by_cc = ParseShowbackCsv(Showback("cost-center"));
  ASSERT_TRUE(by_cc.count("latency-sensitive") && by_cc.count("best-effort") &&
              by_cc.count("unallocated"))
      << "Burstable and Guaranteed pods have no mapping and land in unallocated";
  EXPECT_FALSE(by_cc.count("TOTAL")) << "a total row would double-count in a pivot table";
  int64_t sum = 0;
  for (const auto& [group, figures] : by_cc) sum += figures.micro_usd;
  // The JSON total is the integer sum of the groups.
  std::ostringstream out, err;
  ASSERT_EQ(RunShowbackCommand({"--ledger", Ledger(), "--format", "json"}, out, err), 0);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(std::llround(doc["total"]["allocated_usd"].get<double>() * 1e6), sum);
  EXPECT_TRUE(doc["total"]["idle_tax_vram_usd"].is_null())
      << "usage was not measured: idle tax is unknown, not $0";
  EXPECT_EQ(doc["currency"], "USD");
  EXPECT_EQ(doc["schema_version"], 2);
}

TEST_F(OpenbImportTest, ImportingTwiceAddsNothing) {
  std::ostringstream out, err;
  ASSERT_EQ(RunImportOpenbCommand({"--pods", kPods, "--nodes", kNodes, "--ledger", Ledger(),
                                   "--config", tmp_.Path("config.yaml")},
                                  out, err),
            0);
  EXPECT_NE(out.str().find("(0 new rows)"), std::string::npos) << out.str();
}

TEST(OpenbImportPricingTest, AnUnpricedInventoryModelIsAnErrorNamingIt) {
  GpuvpaConfig config;  // built-in defaults only: no price for the trace's in-house G2
  std::ifstream pods(kPods), nodes(kNodes);
  std::stringstream p, n;
  p << pods.rdbuf();
  n << nodes.rdbuf();
  Result<OpenbImport> r = BuildOpenbImport(p.str(), n.str(), config);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"G2\""), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace gpuvpa
