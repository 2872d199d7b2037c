// gpuvpa cost-api as a user runs it: the real binary on the demo ledger, queried with curl over
// a real socket (HTTP, HTTPS, mTLS). Every figure is compared with the ledger's own showback for
// the same window; the response's shape is checked against OpenCost's documented allocation
// fields (the table below, written from OpenCost's API documentation, not from our code); the
// FOCUS export against FOCUS 1.2's column definitions.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cmd/commands.h"
#include "core/base/csv.h"
#include "core/base/time_format.h"
#include "core/cost/ledger.h"
#include "test/support/process.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa {
namespace {

using nlohmann::json;

constexpr const char* kToken = "s3cret-token-for-tests";

struct Reply {
  int code = 0;
  std::string body;
};

class CostApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ledger_path_ = temp_.Path("ledger.db");
    std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db",
                               ledger_path_);
    ledger_ = std::move(Ledger::Open(ledger_path_)).value();
    std::ofstream(temp_.Path("token")) << kToken << "\n";
  }
  void TearDown() override { testing::KillProcess(pid_); }

  // Starts the binary with `extra` flags; the port it prints.
  void Start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {std::string(GPUVPA_BIN_DIR) + "/gpuvpa",
                                     "cost-api",
                                     "--ledger",
                                     ledger_path_,
                                     "--token-file",
                                     temp_.Path("token"),
                                     "--listen",
                                     "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    log_ = temp_.Path("api.log");
    pid_ = testing::SpawnProcess(argv, log_);
    ASSERT_GT(pid_, 0);
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      // "gpuvpa cost-api: http port 43123"
      const std::string log = testing::ReadTextFile(log_);
      if (const size_t at = log.find(" port ");
          at != std::string::npos && log.find('\n', at) != std::string::npos)
        port_ = std::atoi(log.c_str() + at + 6);
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_NE(port_, 0) << testing::ReadTextFile(log_);
  }

  // curl, the client people use: the body and the HTTP status (0: no response).
  Reply Curl(const std::string& path_and_query, const std::string& flags = "",
             bool with_token = true) {
    const std::string scheme = flags.find("--cacert") != std::string::npos ? "https" : "http";
    std::string command = "curl -sS -g -o " + temp_.Path("body") + " -w '%{http_code}' " + flags;
    if (with_token) command += " -H 'Authorization: Bearer " + std::string(kToken) + "'";
    command += " '" + scheme + "://127.0.0.1:" + std::to_string(port_) + path_and_query + "'";
    int rc = 0;
    const std::string out = testing::RunShell(command, &rc);
    Reply r;
    r.body = testing::ReadTextFile(temp_.Path("body"));
    std::filesystem::remove(temp_.Path("body"));
    try {
      r.code = std::stoi(out.substr(out.size() >= 3 ? out.size() - 3 : 0));
    } catch (...) {
      r.code = 0;
    }
    return r;
  }

  json Allocation(const std::string& query) {
    const Reply r = Curl("/allocation?" + query);
    EXPECT_EQ(r.code, 200) << query << ": " << r.body;
    json doc = json::parse(r.body, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r.body;
    return doc;
  }

  Showback ShowbackOf(int64_t from, int64_t to, ShowbackGroup group) {
    ShowbackQuery q;
    q.from_s = from;
    q.to_s = to;
    q.group_by = group;
    return std::move(ledger_->QueryShowback(q)).value();
  }

  testing::ScopedTempDir temp_;
  std::string ledger_path_;
  std::unique_ptr<Ledger> ledger_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

int64_t UnixOf(const std::string& rfc3339) {
  return static_cast<int64_t>(std::floor(*ParseTimestamp(rfc3339)));
}

// The exact amounts of a map's allocations, summed.
std::map<std::string, int64_t> ExactSums(const json& map) {
  std::map<std::string, int64_t> sums;
  for (const auto& [name, a] : map.items())
    for (const char* key :
         {"billedMicroUsd", "allocatedMicroUsd", "usedVramMicroUsd", "meteredMicroUsd",
          "reservedMicroUsd", "savingsProposedMonthlyMicroUsd", "billedMilliGpuSeconds"})
      sums[key] += a["gpuvpa"][key].get<int64_t>();
  return sums;
}

std::map<std::string, int64_t> ExactSums(const ShowbackRow& r) {
  return {{"billedMicroUsd", r.billed},
          {"allocatedMicroUsd", r.allocated},
          {"usedVramMicroUsd", r.used_vram},
          {"meteredMicroUsd", r.metered},
          {"reservedMicroUsd", r.reserved},
          {"savingsProposedMonthlyMicroUsd", r.savings_proposed_monthly},
          {"billedMilliGpuSeconds", r.billed_gpu_time}};
}

// Every window form, every aggregation: the sums equal `showback` over the window the response
// names, to the micro-dollar; by cost center, each allocation equals its showback group.
TEST_F(CostApiTest, EveryWindowAndAggregationEqualsShowbackToTheMicroDollar) {
  Start();
  const std::vector<std::string> windows = {"2026-11-01T00:00:00Z,2026-11-08T00:00:00Z",
                                            "1793577600,1793900000",
                                            "2026-11-03T06:30:00Z,2026-11-05T00:00:00Z",
                                            "lastmonth",
                                            "month",
                                            "30d",
                                            "week",
                                            "lastweek",
                                            "today",
                                            "yesterday",
                                            "36h",
                                            "90m",
                                            "2w"};
  const std::vector<std::string> aggregates = {"",
                                               "namespace",
                                               "cluster",
                                               "controllerKind",
                                               "controller",
                                               "container",
                                               "pod",
                                               "costCenter",
                                               "gpuModel",
                                               "migProfile",
                                               "label:team",
                                               "annotation:owner",
                                               "namespace,controller",
                                               "cluster,costCenter,gpuModel"};
  int compared = 0;
  for (const std::string& window : windows) {
    for (const std::string& aggregate : aggregates) {
      const json doc = Allocation("window=" + window + "&aggregate=" + aggregate);
      ASSERT_EQ(doc["code"], 200);
      ASSERT_EQ(doc["status"], "success");
      ASSERT_EQ(doc["data"].size(), 1u) << window;
      const json& map = doc["data"][0];
      if (map.empty()) continue;  // nothing in the ledger then (the demo week is 2026-11-02..09)
      const json& first = map.begin().value();
      const int64_t from = UnixOf(first["window"]["start"]);
      const int64_t to = UnixOf(first["window"]["end"]);
      const Showback s = ShowbackOf(from, to, ShowbackGroup::kCostCenter);
      EXPECT_EQ(ExactSums(map), ExactSums(s.total)) << window << " by " << aggregate;
      for (const auto& [name, a] : map.items()) {
        EXPECT_EQ(a["name"], name);
        // The standard field is the exact amount to 5 decimals.
        EXPECT_NEAR(a["gpuCost"].get<double>(),
                    static_cast<double>(a["gpuvpa"]["billedMicroUsd"].get<int64_t>()) / 1e6,
                    0.000005 + 1e-9);
      }
      if (aggregate == "costCenter") {
        ASSERT_EQ(map.size(), s.groups.size()) << window;
        for (const ShowbackRow& g : s.groups) {
          ASSERT_TRUE(map.contains(g.group)) << g.group;
          EXPECT_EQ(ExactSums(json::object({{g.group, map[g.group]}})), ExactSums(g)) << g.group;
        }
      }
      if (aggregate == "pod" || aggregate == "label:team") {
        EXPECT_TRUE(map.contains("__unallocated__") && map.size() == 1u)
            << "the ledger charges workloads, not pods, and keeps no labels: " << map.dump();
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 5 * static_cast<int>(aggregates.size()))
      << "windows over the demo week were compared";
  // The names: unaggregated is cluster/namespace/kind/controller/container.
  const json all = Allocation("window=lastmonth");
  EXPECT_TRUE(all["data"][0].contains("default/chat/StatefulSet/vllm-llama/vllm"))
      << all["data"][0].dump();
  const json two = Allocation("window=lastmonth&aggregate=namespace,controller");
  EXPECT_TRUE(two["data"][0].contains("chat/vllm-llama")) << two["data"][0].dump();
}

// step=1d over the demo week (2026-11-02..09): seven maps, each equal to the showback of its day;
// accumulate gives one map equal to the showback of the whole window.
TEST_F(CostApiTest, StepsAreDaysThatEqualTheirShowbackAndAccumulateIsTheWindow) {
  Start();
  const std::string window = "window=2026-11-02T00:00:00Z,2026-11-09T00:00:00Z";
  const json stepped = Allocation(window + "&aggregate=namespace&step=1d");
  ASSERT_EQ(stepped["data"].size(), 7u);
  int64_t start = UnixOf("2026-11-02T00:00:00Z");
  for (const json& day : stepped["data"]) {
    ASSERT_FALSE(day.empty());
    EXPECT_EQ(UnixOf(day.begin().value()["start"]), start);
    EXPECT_EQ(ExactSums(day),
              ExactSums(ShowbackOf(start, start + 86400, ShowbackGroup::kCostCenter).total));
    start += 86400;
  }
  const json accumulated = Allocation(window + "&aggregate=namespace&step=1d&accumulate=true");
  ASSERT_EQ(accumulated["data"].size(), 1u);
  EXPECT_EQ(ExactSums(accumulated["data"][0]),
            ExactSums(ShowbackOf(UnixOf("2026-11-02T00:00:00Z"), UnixOf("2026-11-09T00:00:00Z"),
                                 ShowbackGroup::kCostCenter)
                          .total));
  // /allocation/compute is the same handler.
  const Reply compute = Curl("/allocation/compute?" + window + "&aggregate=namespace&step=1d");
  ASSERT_EQ(compute.code, 200);
  EXPECT_EQ(json::parse(compute.body), stepped);
  // A step that does not divide the window: the last step ends with it.
  const json uneven = Allocation("window=2026-11-02T00:00:00Z,2026-11-03T01:00:00Z&step=6h");
  ASSERT_EQ(uneven["data"].size(), 5u);
  const json& last = uneven["data"][4];
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(last.begin().value()["end"], "2026-11-03T01:00:00Z");
  EXPECT_EQ(last.begin().value()["minutes"], 60.0);
}

// The shape OpenCost's clients read, from OpenCost's documented allocation fields: every field
// present with its JSON type; floats at most 5 decimals; no NaN or infinity anywhere.
TEST_F(CostApiTest, TheResponseHasEveryFieldOpenCostClientsReadWithItsType) {
  Start();
  enum Type { kString, kNumber, kObject, kBool };
  const std::vector<std::pair<std::string, Type>> kAllocationFields = {
      {"name", kString},
      {"properties", kObject},
      {"window", kObject},
      {"start", kString},
      {"end", kString},
      {"minutes", kNumber},
      {"cpuCores", kNumber},
      {"cpuCoreRequestAverage", kNumber},
      {"cpuCoreUsageAverage", kNumber},
      {"cpuCoreHours", kNumber},
      {"cpuCost", kNumber},
      {"cpuCostAdjustment", kNumber},
      {"cpuEfficiency", kNumber},
      {"gpuCount", kNumber},
      {"gpuHours", kNumber},
      {"gpuCost", kNumber},
      {"gpuCostAdjustment", kNumber},
      {"gpuCostIdle", kNumber},
      {"gpuEfficiency", kNumber},
      {"gpuAllocation", kObject},
      {"networkTransferBytes", kNumber},
      {"networkReceiveBytes", kNumber},
      {"networkCost", kNumber},
      {"loadBalancerCost", kNumber},
      {"pvBytes", kNumber},
      {"pvByteHours", kNumber},
      {"pvCost", kNumber},
      {"ramBytes", kNumber},
      {"ramByteRequestAverage", kNumber},
      {"ramByteUsageAverage", kNumber},
      {"ramByteHours", kNumber},
      {"ramCost", kNumber},
      {"ramEfficiency", kNumber},
      {"sharedCost", kNumber},
      {"externalCost", kNumber},
      {"totalCost", kNumber},
      {"totalEfficiency", kNumber},
  };
  const std::vector<std::pair<std::string, Type>> kProperties = {
      {"cluster", kString},        {"namespace", kString}, {"controller", kString},
      {"controllerKind", kString}, {"container", kString}, {"labels", kObject}};
  const std::vector<std::pair<std::string, Type>> kGpuAllocation = {{"gpuModel", kString},
                                                                    {"isGPUShared", kBool},
                                                                    {"gpuUsageAverage", kNumber},
                                                                    {"gpuRequestAverage", kNumber}};
  auto has = [](const json& j, Type t) {
    switch (t) {
      case kString:
        return j.is_string();
      case kNumber:
        return j.is_number();
      case kObject:
        return j.is_object();
      case kBool:
        return j.is_boolean();
    }
    return false;
  };
  const Reply r = Curl("/allocation?window=lastmonth");
  ASSERT_EQ(r.code, 200) << r.body;
  EXPECT_EQ(r.body.find("NaN"), std::string::npos);
  EXPECT_EQ(r.body.find("Infinity"), std::string::npos);
  const json doc = json::parse(r.body);
  ASSERT_TRUE(doc["code"].is_number_integer());
  ASSERT_TRUE(doc["data"].is_array());
  ASSERT_FALSE(doc["data"][0].empty());
  for (const auto& [name, a] : doc["data"][0].items()) {
    for (const auto& [field, type] : kAllocationFields) {
      ASSERT_TRUE(a.contains(field)) << name << " lacks " << field;
      EXPECT_TRUE(has(a[field], type)) << name << "." << field << " = " << a[field];
      if (type == kNumber) {
        const double v = a[field].get<double>();
        EXPECT_TRUE(std::isfinite(v) && v >= 0) << name << "." << field;
        EXPECT_NEAR(v * 1e5, std::round(v * 1e5), 1e-3) << name << "." << field << " = " << v;
      }
    }
    for (const auto& [field, type] : kProperties)
      EXPECT_TRUE(a["properties"].contains(field) && has(a["properties"][field], type))
          << name << ".properties." << field;
    for (const auto& [field, type] : kGpuAllocation)
      EXPECT_TRUE(a["gpuAllocation"].contains(field) && has(a["gpuAllocation"][field], type))
          << name << ".gpuAllocation." << field;
    EXPECT_TRUE(a["window"]["start"].is_string() && a["window"]["end"].is_string());
    EXPECT_LE(a["gpuEfficiency"].get<double>(), 1.0);
  }
  const json& embed = doc["data"][0]["default/dev/Deployment/batch-embed/embed"];
  EXPECT_EQ(embed["gpuAllocation"]["isGPUShared"], true) << "a time-sliced share";
  EXPECT_EQ(embed["gpuvpa"]["deviceFraction"], 0.25);
}

// Parameters that are wrong get 400 in OpenCost's error envelope naming the parameter and the
// value; no token or a wrong one gets 401; an unknown path 404; /healthz needs no token.
TEST_F(CostApiTest, BadParametersAndMissingTokensAreRefusedSayingWhy) {
  Start();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"aggregate=namespace", "window: the parameter is required"},
      {"window=7x", "window \"7x\""},
      {"window=2026-11-08T00:00:00Z,2026-11-01T00:00:00Z", "does not start before it ends"},
      {"window=2026-13-01T00:00:00Z,2026-11-01T00:00:00Z", "window \"2026-13-01"},
      {"window=7d&step=0d", "step \"0d\""},
      {"window=7d&step=10s", "shorter than a minute"},
      {"window=2000-01-01T00:00:00Z,2026-01-01T00:00:00Z&step=1m", "more than 10000 steps"},
      {"window=7d&aggregate=namespace,nodes", "aggregate \"namespace,nodes\""},
      {"window=7d&aggregate=label:", "names no key"},
      {"window=7d&accumulate=yes", "accumulate \"yes\""},
      {"window=7d&resolution=1m", "parameter \"resolution\": is not served"},
      {"window=7d&window=1d", "window \"1d\": is given more than once"},
      {"window=7d%zz", "bad percent escape"},
  };
  for (const auto& [query, expected] : bad) {
    const Reply r = Curl("/allocation?" + query);
    EXPECT_EQ(r.code, 400) << query << ": " << r.body;
    const json doc = json::parse(r.body, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.body;
    EXPECT_EQ(doc["code"], 400);
    EXPECT_EQ(doc["status"], "error");
    EXPECT_NE(doc["message"].get<std::string>().find(expected), std::string::npos)
        << query << ": " << doc["message"];
  }
  EXPECT_EQ(Curl("/allocation?window=7d", "", /*with_token=*/false).code, 401);
  EXPECT_EQ(Curl("/focus?window=7d", "-H 'Authorization: Bearer wrong'", false).code, 401);
  EXPECT_EQ(
      Curl("/allocation?window=7d", "-H 'Authorization: Basic " + std::string(kToken) + "'", false)
          .code,
      401);
  EXPECT_EQ(Curl("/assets?window=7d").code, 404);
  EXPECT_EQ(Curl("/healthz", "", false).code, 200);
  EXPECT_EQ(testing::ReadTextFile(log_).find(kToken), std::string::npos) << "never logged";
}

// The FOCUS columns and types of FOCUS 1.2 that gpuvpa fills (the specification's column
// definitions; x_ columns are gpuvpa's own, as FOCUS allows), and the export's money equals
// showback's bill.
TEST_F(CostApiTest, FocusRowsFollowTheSpecificationAndAddUpToShowback) {
  enum Type { kString, kDecimal, kDateTime, kJson };
  const std::vector<std::tuple<std::string, Type, bool>> kSpec = {
      {"BilledCost", kDecimal, false},
      {"BillingAccountId", kString, false},
      {"BillingAccountName", kString, true},
      {"BillingCurrency", kString, false},
      {"BillingPeriodStart", kDateTime, false},
      {"BillingPeriodEnd", kDateTime, false},
      {"ChargeCategory", kString, false},
      {"ChargeClass", kString, true},
      {"ChargeDescription", kString, true},
      {"ChargeFrequency", kString, true},
      {"ChargePeriodStart", kDateTime, false},
      {"ChargePeriodEnd", kDateTime, false},
      {"ConsumedQuantity", kDecimal, true},
      {"ConsumedUnit", kString, true},
      {"ContractedCost", kDecimal, false},
      {"EffectiveCost", kDecimal, false},
      {"InvoiceIssuerName", kString, false},
      {"ListCost", kDecimal, false},
      {"PricingQuantity", kDecimal, true},
      {"PricingUnit", kString, true},
      {"ProviderName", kString, false},
      {"PublisherName", kString, false},
      {"ResourceId", kString, true},
      {"ResourceName", kString, true},
      {"ResourceType", kString, true},
      {"ServiceCategory", kString, false},
      {"ServiceName", kString, false},
      {"SubAccountId", kString, true},
      {"SubAccountName", kString, true},
      {"Tags", kJson, true}};
  // FOCUS 1.2's allowed values where the column has a closed list.
  const std::map<std::string, std::vector<std::string>> kAllowed = {
      {"ChargeCategory", {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}},
      {"ChargeFrequency", {"One-Time", "Recurring", "Usage-Based"}},
      {"ServiceCategory",
       {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
        "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
        "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
        "Storage", "Web", "Other"}}};
  Start();
  const std::string window = "window=2026-11-02T00:00:00Z,2026-11-09T00:00:00Z&step=1d";
  const Reply r = Curl("/focus?" + window);
  ASSERT_EQ(r.code, 200) << r.body;
  std::ostringstream cli, err;
  ASSERT_EQ(cmd::RunShowbackCommand({"--ledger", ledger_path_, "--format", "focus", "--from",
                                     "2026-11-02", "--to", "2026-11-09", "--step", "1d"},
                                    cli, err),
            0)
      << err.str();
  EXPECT_EQ(cli.str(), r.body) << "the command and the API export the same rows";

  // A CSV reader for RFC 4180 rows (quoted cells, doubled quotes).
  auto cells_of = [](const std::string& line) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    return cells;
  };
  std::istringstream in(r.body);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = cells_of(line);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < header.size(); ++i) at[header[i]] = i;
  for (const auto& [name, type, nullable] : kSpec) ASSERT_TRUE(at.count(name)) << name;
  for (const std::string& h : header)
    EXPECT_TRUE(std::any_of(kSpec.begin(), kSpec.end(),
                            [&](const auto& c) { return std::get<0>(c) == h; }) ||
                h.rfind("x_", 0) == 0)
        << h << " is neither a FOCUS column nor an x_ extension";
  // Shapes written out (std::regex trips GCC 12's -Wmaybe-uninitialized under ASan).
  auto is_decimal = [](const std::string& v) {
    size_t i = v.starts_with('-') ? 1 : 0;
    const size_t dot = v.find('.');
    const std::string whole = v.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    const std::string frac = dot == std::string::npos ? "1" : v.substr(dot + 1);
    auto digits = [](const std::string& d) {
      return !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    };
    return digits(whole) && digits(frac);
  };
  auto is_datetime = [](const std::string& v) {
    const std::string shape = "dddd-dd-ddTdd:dd:ddZ";
    if (v.size() != shape.size()) return false;
    for (size_t i = 0; i < v.size(); ++i)
      if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(v[i])) : v[i] != shape[i])
        return false;
    return true;
  };
  int64_t billed_micro = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> cells = cells_of(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    for (const auto& [name, type, nullable] : kSpec) {
      const std::string& v = cells[at[name]];
      if (v.empty()) {
        EXPECT_TRUE(nullable) << name << " is empty: " << line;
        continue;
      }
      if (type == kDecimal) {
        EXPECT_TRUE(is_decimal(v)) << name << " = " << v;
      } else if (type == kDateTime) {
        EXPECT_TRUE(is_datetime(v)) << name << " = " << v;
      } else if (type == kJson) {
        EXPECT_TRUE(json::parse(v, nullptr, false).is_object()) << v;
      }
      if (auto it = kAllowed.find(name); it != kAllowed.end()) {
        EXPECT_NE(std::find(it->second.begin(), it->second.end(), v), it->second.end())
            << name << " = " << v;
      }
    }
    EXPECT_EQ(cells[at["BillingCurrency"]], "USD");
    EXPECT_LE(cells[at["BillingPeriodStart"]], cells[at["ChargePeriodStart"]]);
    EXPECT_LT(cells[at["ChargePeriodStart"]], cells[at["ChargePeriodEnd"]]);
    const std::string& billed = cells[at["BilledCost"]];
    const size_t dot = billed.find('.');
    ASSERT_EQ(billed.size() - dot, 7u) << "micro-dollars: " << billed;
    billed_micro +=
        std::stoll(billed.substr(0, dot)) * 1'000'000 + std::stoll(billed.substr(dot + 1));
    ++rows;
  }
  EXPECT_GE(rows, 7 * 5) << "a row per workload-container and day";
  const Showback s = ShowbackOf(UnixOf("2026-11-02T00:00:00Z"), UnixOf("2026-11-09T00:00:00Z"),
                                ShowbackGroup::kCostCenter);
  // Each day's rows are prorated to the day: the sum over days is the week's bill, up to one
  // micro-dollar of rounding per row and day.
  EXPECT_NEAR(static_cast<double>(billed_micro), static_cast<double>(s.total.billed), rows);
  std::ostringstream whole;
  ASSERT_EQ(cmd::RunShowbackCommand({"--ledger", ledger_path_, "--format", "focus", "--from",
                                     "2026-11-02", "--to", "2026-11-09", "--step", "1w"},
                                    whole, err),
            0);
  int64_t week_micro = 0;
  std::istringstream week(whole.str());
  std::getline(week, line);
  while (std::getline(week, line)) {
    const std::string billed = cells_of(line)[0];
    const size_t dot = billed.find('.');
    week_micro +=
        std::stoll(billed.substr(0, dot)) * 1'000'000 + std::stoll(billed.substr(dot + 1));
  }
  EXPECT_EQ(week_micro, s.total.billed) << "one period: exactly showback's bill";
  std::ostringstream no_window;
  EXPECT_EQ(
      cmd::RunShowbackCommand({"--ledger", ledger_path_, "--format", "focus"}, no_window, err), 2);
  EXPECT_NE(err.str().find("needs --from and --to"), std::string::npos) << err.str();
}

// HTTPS with the server's certificate, and mTLS: a client without a certificate the CA signed
// gets no answer at all.
TEST_F(CostApiTest, ServesHttpsAndRefusesClientsWithoutACertificateUnderMtls) {
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificates(temp_.Path(""), &error)) << error;
  const std::string ca = temp_.Path("ca.pem");
  Start({"--tls-cert-file", temp_.Path("server.pem"), "--tls-key-file", temp_.Path("server.key"),
         "--client-ca-file", ca});
  const Reply no_cert = Curl("/allocation?window=lastmonth", "--cacert " + ca);
  EXPECT_EQ(no_cert.code, 0) << "the handshake fails without a client certificate";
  const Reply with_cert = Curl("/allocation?window=lastmonth",
                               "--cacert " + ca + " --cert " + temp_.Path("client.pem") +
                                   " --key " + temp_.Path("client.key"));
  EXPECT_EQ(with_cert.code, 200) << with_cert.body;
  EXPECT_EQ(json::parse(with_cert.body)["status"], "success");
  const Reply foreign = Curl("/allocation?window=lastmonth",
                             "--cacert " + ca + " --cert " + temp_.Path("foreign-updater.pem") +
                                 " --key " + temp_.Path("foreign-updater.key"));
  EXPECT_EQ(foreign.code, 0) << "a certificate another CA signed is refused";
}

TEST(CostApiCommandTest, RefusesAMissingTokenFileAndHalfATlsPair) {
  std::ostringstream out, err;
  EXPECT_EQ(cmd::RunCostApiCommand({"--ledger", "/nonexistent.db"}, out, err), 2);
  EXPECT_NE(err.str().find("--token-file"), std::string::npos) << err.str();
  testing::ScopedTempDir temp;
  std::ofstream(temp.Path("token")) << "t\n";
  std::ofstream(temp.Path("cert.pem")) << "x\n";
  err.str("");
  EXPECT_EQ(cmd::RunCostApiCommand({"--ledger", temp.Path("l.db"), "--token-file",
                                    temp.Path("token"), "--tls-cert-file", temp.Path("cert.pem")},
                                   out, err),
            2);
  EXPECT_NE(err.str().find("go together"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(
      cmd::RunCostApiCommand(
          {"--ledger", temp.Path("missing.db"), "--token-file", temp.Path("token")}, out, err),
      1);
  EXPECT_NE(err.str().find("missing.db"), std::string::npos) << err.str();
  std::ostringstream help;
  EXPECT_EQ(cmd::RunCostApiCommand({"--help"}, help, err), 0);
  EXPECT_NE(help.str().find("/allocation"), std::string::npos);
}

}  // namespace
}  // namespace gpuvpa
