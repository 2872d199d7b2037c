// Scheduled delivery against a local HTTP receiver (127.0.0.1) that answers 200, 500, 429, 404
// or never: one delivery per target, cost center and period, across runs and restarts; bounded
// retries; no retry of a 4xx; the webhook URL in no log line.
#include "core/cost/delivery.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base/time_format.h"
#include "test/support/scripted_http_server.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

int64_t T(const char* rfc3339) { return static_cast<int64_t>(*ParseTimestamp(rfc3339)); }

// The Slack-like secret part of the webhook's URL.
constexpr const char* kSecretPath = "/services/T0001/B0002/s3cr3tT0k3n";

class DeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = temp_.Path("ledger.db");
    std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db",
                               path);
    ledger_ = std::move(Ledger::Open(path)).value();
    std::ofstream(temp_.Path("url")) << receiver_.url() << kSecretPath << "\n";
    logger_ = std::make_shared<spdlog::logger>(
        "delivery-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(logger_);
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_);
    EXPECT_EQ(log_.str().find("s3cr3tT0k3n"), std::string::npos) << log_.str();
  }

  // A target over the demo week (2026-11-02..09), due 2026-11-09T00:00Z.
  DeliveryConfig Config(const std::string& kind, std::vector<std::string> cost_centers = {}) {
    std::string yaml =
        "report_url: https://gpuvpa-updater.gpuvpa.svc:8080/reports/\n"
        "max_attempts: 3\nbackoff_initial_s: 0.01\ntimeout_s: 0.5\n"
        "targets:\n  - name: weekly\n    schedule: \"0 0 9 11 *\"\n    period: 7d\n    " +
        kind + ": " + temp_.Path("url") + "\n";
    if (!cost_centers.empty()) {
      yaml += "    cost_centers: [";
      for (size_t i = 0; i < cost_centers.size(); ++i) yaml += (i ? ", " : "") + cost_centers[i];
      yaml += "]\n";
    }
    Result<DeliveryConfig> c = ParseDeliveryConfig(yaml);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }
  std::unique_ptr<Deliverer> Make(const DeliveryConfig& config) {
    Result<std::unique_ptr<Deliverer>> d = Deliverer::Create(*ledger_, config);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return std::move(d).value();
  }

  testing::ScopedTempDir temp_;
  testing::ScriptedHttpServer receiver_{testing::HttpBehaviour::kStatus, "ok"};
  std::unique_ptr<Ledger> ledger_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_, previous_;
  const int64_t now_ = T("2026-11-09T00:30:00Z");
};

TEST_F(DeliveryTest, OneDeliveryPerCostCenterAndPeriodAcrossRunsAndRestarts) {
  ShowbackQuery week;
  week.from_s = T("2026-11-02T00:00:00Z");
  week.to_s = T("2026-11-09T00:00:00Z");
  const Showback s = *ledger_->QueryShowback(week);
  ASSERT_GE(s.groups.size(), 5u);
  std::unique_ptr<Deliverer> d = Make(Config("webhook_url_file"));
  const Deliverer::Outcome first = d->RunDue(now_);
  EXPECT_EQ(first.delivered, static_cast<int>(s.groups.size()));
  EXPECT_EQ(first.failed + first.refused + first.already, 0);
  const std::vector<std::string> bodies = receiver_.bodies();
  ASSERT_EQ(bodies.size(), s.groups.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    const nlohmann::json doc = nlohmann::json::parse(bodies[i]);
    EXPECT_EQ(doc["schema"], "gpuvpa.delivery/v1");
    EXPECT_EQ(doc["period"]["start"], "2026-11-02T00:00:00Z");
    EXPECT_EQ(doc["period"]["end"], "2026-11-09T00:00:00Z");
    const ShowbackRow& g = s.groups[i];
    EXPECT_EQ(doc["cost_center"], g.group);
    EXPECT_EQ(doc["billed_micro_usd"], g.billed) << "the summary is showback's figure";
    EXPECT_EQ(doc["savings_proposed_monthly_micro_usd"], g.savings_proposed_monthly);
    EXPECT_EQ(doc["delivery_id"],
              "delivery/weekly/" + g.group + "/" + std::to_string(T("2026-11-09T00:00:00Z")));
  }
  // Later in the same period, and after a restart: nothing is sent again.
  EXPECT_EQ(d->RunDue(now_ + 3600).already, static_cast<int>(s.groups.size()));
  std::unique_ptr<Deliverer> restarted = Make(Config("webhook_url_file"));
  EXPECT_EQ(restarted->RunDue(now_ + 7200).already, static_cast<int>(s.groups.size()));
  EXPECT_EQ(receiver_.bodies().size(), s.groups.size());
  // Before the first scheduled time: nothing is due.
  EXPECT_EQ(restarted->RunDue(T("2025-11-08T00:00:00Z")).delivered, 0);
}

TEST_F(DeliveryTest, ServerErrorsAndRateLimitsAreRetriedABoundedNumberOfTimes) {
  for (const int code : {500, 503, 429}) {
    SCOPED_TRACE(code);
    receiver_.set_status(code);
    const size_t before = receiver_.bodies().size();
    std::unique_ptr<Deliverer> d = Make(Config("webhook_url_file", {"research"}));
    const Deliverer::Outcome o = d->RunDue(now_);
    EXPECT_EQ(o.failed, 1);
    EXPECT_EQ(o.delivered + o.refused, 0);
    EXPECT_EQ(receiver_.bodies().size() - before, 3u) << "max_attempts";
    EXPECT_NE(log_.str().find("attempt 3 of 3: HTTP " + std::to_string(code)), std::string::npos)
        << log_.str();
  }
  // Not recorded: the next run delivers once the receiver answers.
  receiver_.set_status(200);
  std::unique_ptr<Deliverer> d = Make(Config("webhook_url_file", {"research"}));
  EXPECT_EQ(d->RunDue(now_).delivered, 1);
  EXPECT_EQ(d->RunDue(now_).already, 1);
}

TEST_F(DeliveryTest, AClientErrorIsRecordedAsRefusedAndNeverRetried) {
  receiver_.set_status(404);
  std::unique_ptr<Deliverer> d = Make(Config("slack_webhook_url_file", {"research", "chat"}));
  const Deliverer::Outcome o = d->RunDue(now_);
  EXPECT_EQ(o.refused, 2);
  EXPECT_EQ(receiver_.bodies().size(), 2u) << "one attempt each";
  EXPECT_NE(log_.str().find("refused with HTTP 404"), std::string::npos) << log_.str();
  receiver_.set_status(200);
  EXPECT_EQ(d->RunDue(now_).already, 2) << "a refusal is recorded: no retry";
  EXPECT_EQ(receiver_.bodies().size(), 2u);
}

TEST_F(DeliveryTest, AReceiverThatNeverAnswersCostsTheTimeoutPerAttempt) {
  receiver_.set_behaviour(testing::HttpBehaviour::kSilent);
  std::unique_ptr<Deliverer> d = Make(Config("webhook_url_file", {"research"}));
  const auto t0 = std::chrono::steady_clock::now();
  const Deliverer::Outcome o = d->RunDue(now_);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.failed, 1);
  EXPECT_EQ(receiver_.requests().size(), 3u);
  EXPECT_LT(took, 10.0) << "three attempts of 0.5 s, not a hang";
  EXPECT_NE(log_.str().find("<webhook of weekly>"), std::string::npos)
      << "the error names the target, not the URL: " << log_.str();
}

TEST_F(DeliveryTest, SlackMessagesAreBlockKitWithTheFiguresAndTheTopChanges) {
  std::unique_ptr<Deliverer> d = Make(Config("slack_webhook_url_file", {"ai-agents"}));
  ASSERT_EQ(d->RunDue(now_).delivered, 1);
  const nlohmann::json doc = nlohmann::json::parse(receiver_.bodies().at(0));
  ASSERT_TRUE(doc["text"].is_string()) << "the notification's fallback text";
  ASSERT_TRUE(doc["blocks"].is_array());
  std::set<std::string> types;
  std::string all;
  for (const nlohmann::json& b : doc["blocks"]) {
    types.insert(b["type"]);
    if (b.contains("text")) {
      ASSERT_LE(b["text"]["text"].get<std::string>().size(), 3000u);
      all += b["text"]["text"].get<std::string>();
    }
    if (b.contains("fields")) {
      ASSERT_LE(b["fields"].size(), 10u);
      for (const nlohmann::json& f : b["fields"]) all += f["text"].get<std::string>();
    }
  }
  EXPECT_EQ(types, (std::set<std::string>{"header", "section", "actions", "context"}));
  EXPECT_LE(doc["blocks"][0]["text"]["text"].get<std::string>().size(), 150u);
  EXPECT_NE(all.find("Idle tax"), std::string::npos);
  EXPECT_NE(all.find("nvidia.com/mig-4g.40gb=1"), std::string::npos) << "the proposed change";
  EXPECT_NE(all.find("risk low"), std::string::npos) << all;
  EXPECT_EQ(doc["blocks"][2]["type"], "section");
}

TEST(DeliveryConfigTest, RefusesTyposAndContradictionsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"targets:\n  - {name: a, schedule: '@daily', webhook_url_file: f, colour: red}", "colour"},
      {"targets:\n  - {name: a, schedule: '@daily'}", "give one of"},
      {"targets:\n  - {name: a, schedule: '@daily', webhook_url_file: f, "
       "slack_webhook_url_file: g}",
       "give one of"},
      {"targets:\n  - {name: a, schedule: '61 * * * *', webhook_url_file: f}", "cron minute"},
      {"targets:\n  - {name: a, schedule: '@daily', period: 7x, webhook_url_file: f}",
       "delivery.targets[0].period"},
      {"targets:\n  - {name: Bad_Name, schedule: '@daily', webhook_url_file: f}", "Bad_Name"},
      {"targets:\n  - {name: a, schedule: '@daily', webhook_url_file: f}\n  - {name: a, "
       "schedule: '@daily', webhook_url_file: f}",
       "given twice"},
      {"max_attempts: 0", "max_attempts"},
      {"reprot_url: x", "reprot_url"},
  };
  for (const auto& [yaml, expected] : bad) {
    Result<DeliveryConfig> c = ParseDeliveryConfig(yaml);
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.status().message().find(expected), std::string::npos)
        << yaml << ": " << c.status().message();
  }
  testing::ScopedTempDir temp;
  std::ofstream(temp.Path("bad-url")) << "not a url s3cr3t\n";
  Result<DeliveryConfig> c = ParseDeliveryConfig(
      "targets:\n  - {name: a, schedule: '@daily', webhook_url_file: " + temp.Path("bad-url") +
      "}");
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(temp.Path("l.db"))).value();
  Result<std::unique_ptr<Deliverer>> d = Deliverer::Create(*ledger, *c);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("bad-url"), std::string::npos) << d.status().message();
  EXPECT_EQ(d.status().message().find("s3cr3t"), std::string::npos) << "the URL is not shown";
}

}  // namespace
}  // namespace gpuvpa
