// Scheduled delivery: config, summaries, payloads, and the sender with retries.
#include "core/cost/delivery.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/base/yaml_fields.h"
#include "core/cost/allocation.h"
#include "core/cost/money.h"
#include "core/net/http_client.h"

namespace gpuvpa {
namespace {

const YamlField kDelivery{"config", "delivery"};

Result<DeliveryTarget> ParseTarget(const YAML::Node& node, const YamlField& f) {
  GPUVPA_RETURN_IF_ERROR(f.CheckKeys(node, {"name", "schedule", "period", "cost_centers",
                                            "slack_webhook_url_file", "webhook_url_file"}));
  DeliveryTarget t;
  std::string schedule, period = "7d", slack, webhook;
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(node, f, "name", t.name, /*required=*/true));
  GPUVPA_RETURN_IF_ERROR(ValidateClusterName(f["name"].where, t.name));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(node, f, "schedule", schedule, /*required=*/true));
  Result<CronSchedule> cron = CronSchedule::Parse(schedule);
  if (!cron.ok()) return f["schedule"].Error(cron.status().message());
  t.schedule = *cron;
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(node, f, "period", period));
  Result<int64_t> period_s = ParseAllocationStep(period);
  if (!period_s.ok()) return f["period"].Error(period_s.status().message());
  t.period_s = *period_s;
  if (const YAML::Node list = node["cost_centers"]) {
    if (!list.IsSequence()) return f["cost_centers"].Error("is not a list");
    for (size_t i = 0; i < list.size(); ++i) {
      Result<std::string> cc = f["cost_centers"][i].String(list[i]);
      if (!cc.ok()) return cc.status();
      t.cost_centers.push_back(*cc);
    }
  }
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(node, f, "slack_webhook_url_file", slack));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(node, f, "webhook_url_file", webhook));
  if (slack.empty() == webhook.empty())
    return f.Error("give one of slack_webhook_url_file and webhook_url_file");
  t.format = slack.empty() ? DeliveryTarget::Format::kJson : DeliveryTarget::Format::kSlack;
  t.url_file = slack.empty() ? webhook : slack;
  return t;
}

std::string Usd(MicroUsd m) { return FormatUsd(m); }

std::string Percent(MicroUsd part, MicroUsd whole) {
  if (whole <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// Slack's mrkdwn treats &, < and > as markup: names are escaped.
std::string SlackText(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string Period(const DeliverySummary& s) {
  return FormatTimestamp(static_cast<double>(s.from_s)) + " to " +
         FormatTimestamp(static_cast<double>(s.to_s));
}

}  // namespace

Result<DeliveryConfig> ParseDeliveryConfig(std::string_view yaml_text) {
  DeliveryConfig c;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) return c;
    GPUVPA_RETURN_IF_ERROR(
        kDelivery.CheckKeys(root, {"report_url", "targets", "max_attempts", "backoff_initial_s",
                                   "timeout_s", "top_changes", "check_interval_s"}));
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(root, kDelivery, "report_url", c.report_url));
    GPUVPA_RETURN_IF_ERROR(ReadYamlInt(root, kDelivery, "max_attempts", 1, 20, c.max_attempts));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(root, kDelivery, "backoff_initial_s", 0, 60, c.backoff_initial_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlNumber(root, kDelivery, "timeout_s", 0.1, 300, c.timeout_s));
    GPUVPA_RETURN_IF_ERROR(ReadYamlInt(root, kDelivery, "top_changes", 0, 50, c.top_changes));
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlNumber(root, kDelivery, "check_interval_s", 1, 3600, c.check_interval_s));
    if (const YAML::Node targets = root["targets"]) {
      if (!targets.IsSequence()) return kDelivery["targets"].Error("is not a list");
      std::set<std::string> names;
      for (size_t i = 0; i < targets.size(); ++i) {
        Result<DeliveryTarget> t = ParseTarget(targets[i], kDelivery["targets"][i]);
        if (!t.ok()) return t.status();
        if (!names.insert(t->name).second)
          return kDelivery["targets"][i]["name"].Error("\"" + t->name + "\" is given twice");
        c.targets.push_back(std::move(*t));
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("config delivery: ") + e.what());
  }
  return c;
}

Result<std::vector<DeliverySummary>> BuildDeliverySummaries(
    const Ledger& ledger, int64_t from_s, int64_t to_s,
    const std::vector<std::string>& cost_centers, int top_changes) {
  ShowbackQuery q;
  q.from_s = from_s;
  q.to_s = to_s;
  q.cluster = ledger.options().cluster;
  Result<Showback> showback = ledger.QueryShowback(q);
  if (!showback.ok()) return showback.status();
  Result<std::vector<LedgerAction>> proposals = ledger.LatestProposals(from_s, to_s);
  if (!proposals.ok()) return proposals.status();
  auto wanted = [&](const std::string& cc) {
    return cost_centers.empty() ||
           std::find(cost_centers.begin(), cost_centers.end(), cc) != cost_centers.end();
  };
  std::vector<DeliverySummary> out;
  for (const ShowbackRow& row : showback->groups) {
    if (!wanted(row.group)) continue;
    DeliverySummary s;
    s.cost_center = row.group;
    s.from_s = from_s;
    s.to_s = to_s;
    s.figures = row;
    for (const LedgerAction& a : *proposals) {
      if (a.cost_center != row.group || a.monthly_before <= a.monthly_after) continue;
      DeliveryChange c{a.namespace_name, a.workload, a.before,
                       a.after,          "unknown",  a.monthly_before - a.monthly_after};
      const nlohmann::json evidence = nlohmann::json::parse(a.evidence_json, nullptr, false);
      if (evidence.is_object() && evidence.contains("risk") && evidence["risk"].is_string())
        c.risk = evidence["risk"].get<std::string>();
      s.top_changes.push_back(std::move(c));
    }
    std::stable_sort(s.top_changes.begin(), s.top_changes.end(),
                     [](const DeliveryChange& a, const DeliveryChange& b) {
                       return a.monthly_savings > b.monthly_savings;
                     });
    if (s.top_changes.size() > static_cast<size_t>(top_changes))
      s.top_changes.resize(static_cast<size_t>(top_changes));
    out.push_back(std::move(s));
  }
  return out;
}

std::string SlackDeliveryPayload(const DeliverySummary& s, std::string_view report_url) {
  const ShowbackRow& f = s.figures;
  const std::string idle =
      f.usage_measured ? Usd(f.idle_tax_vram) + " (" + Percent(f.idle_tax_vram, f.allocated) + ")"
                       : "unknown (no measured usage)";
  nlohmann::json blocks = nlohmann::json::array();
  blocks.push_back(
      {{"type", "header"},
       {"text",
        {{"type", "plain_text"}, {"text", ("GPU costs of " + s.cost_center).substr(0, 150)}}}});
  blocks.push_back(
      {{"type", "section"},
       {"text", {{"type", "mrkdwn"}, {"text", SlackText(Period(s))}}},
       {"fields",
        {{{"type", "mrkdwn"}, {"text", "*Billed*\n" + Usd(f.billed)}},
         {{"type", "mrkdwn"}, {"text", "*Idle tax (VRAM basis)*\n" + idle}},
         {{"type", "mrkdwn"},
          {"text", "*Proposed savings*\n" + Usd(f.savings_proposed_monthly) + " a month"}},
         {{"type", "mrkdwn"},
          {"text", "*Metered scale-to-zero*\n" + Usd(f.metered) + " of " + Usd(f.reserved) +
                       " reserved"}}}}});
  std::string changes;
  for (const DeliveryChange& c : s.top_changes)
    changes += "• `" + SlackText(c.namespace_name + "/" + c.workload) +
               "`: " + SlackText(c.before) + " → " + SlackText(c.after) + ", saves " +
               Usd(c.monthly_savings) + " a month, risk " + SlackText(c.risk) + "\n";
  if (!changes.empty())
    blocks.push_back(
        {{"type", "section"},
         {"text", {{"type", "mrkdwn"}, {"text", ("*Top changes*\n" + changes).substr(0, 3000)}}}});
  if (!report_url.empty())
    blocks.push_back({{"type", "actions"},
                      {"elements",
                       {{{"type", "button"},
                         {"text", {{"type", "plain_text"}, {"text", "Open the report"}}},
                         {"url", std::string(report_url)}}}}});
  blocks.push_back({{"type", "context"},
                    {"elements",
                     {{{"type", "mrkdwn"},
                       {"text", "gpuvpa: showback estimates; metered figures are chargeback"}}}}});
  const nlohmann::json doc = {{"text", "GPU costs of " + s.cost_center + ": " + Usd(f.billed) +
                                           " billed, idle tax " + idle + ", " + Period(s)},
                              {"blocks", blocks}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonDeliveryPayload(const DeliverySummary& s, std::string_view report_url,
                                std::string_view delivery_id) {
  const ShowbackRow& f = s.figures;
  nlohmann::json changes = nlohmann::json::array();
  for (const DeliveryChange& c : s.top_changes)
    changes.push_back({{"namespace", c.namespace_name},
                       {"workload", c.workload},
                       {"before", c.before},
                       {"after", c.after},
                       {"monthly_savings_micro_usd", c.monthly_savings},
                       {"risk", c.risk}});
  const nlohmann::json doc = {
      {"schema", "gpuvpa.delivery/v1"},
      {"delivery_id", std::string(delivery_id)},
      {"cost_center", s.cost_center},
      {"period",
       {{"start", FormatTimestamp(static_cast<double>(s.from_s))},
        {"end", FormatTimestamp(static_cast<double>(s.to_s))}}},
      {"currency", "USD"},
      {"billed_micro_usd", f.billed},
      {"allocated_micro_usd", f.allocated},
      {"idle_tax_vram_micro_usd",
       f.usage_measured ? nlohmann::json(f.idle_tax_vram) : nlohmann::json(nullptr)},
      {"metered_micro_usd", f.metered},
      {"reserved_micro_usd", f.reserved},
      {"savings_proposed_monthly_micro_usd", f.savings_proposed_monthly},
      {"top_changes", changes},
      {"report_url",
       report_url.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(report_url))}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct Deliverer::Client {
  std::shared_ptr<HttpClient> http;
  std::string target;  // the URL's path and query: the secret part, never logged
  std::string url;     // the whole URL, to be scrubbed from error messages
};

Deliverer::Deliverer(Ledger& ledger, DeliveryConfig config)
    : ledger_(ledger), config_(std::move(config)) {}

Deliverer::~Deliverer() = default;

Result<std::unique_ptr<Deliverer>> Deliverer::Create(Ledger& ledger, DeliveryConfig config) {
  std::unique_ptr<Deliverer> d(new Deliverer(ledger, std::move(config)));
  for (const DeliveryTarget& t : d->config_.targets) {
    const std::string what = "delivery target " + t.name + ": URL file";
    Result<std::string> read = ReadFirstLine(t.url_file, what);
    if (!read.ok()) return InvalidArgumentError(read.status().message());
    const std::string url = std::move(read).value();
    const size_t scheme = url.find("://");
    const size_t path = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
    auto client = std::make_unique<Client>();
    client->url = url;
    client->target = path == std::string::npos ? "/" : url.substr(path);
    HttpClientOptions options;
    options.base_url = path == std::string::npos ? url : url.substr(0, path);
    options.max_response_bytes = 1 << 20;
    Result<std::shared_ptr<HttpClient>> http =
        scheme == std::string::npos ? Result<std::shared_ptr<HttpClient>>(InvalidArgumentError(""))
                                    : HttpClient::Create(options);
    // The URL itself is a secret (Slack's holds the token): the error names the file only.
    if (!http.ok())
      return InvalidArgumentError(what + " " + QuoteForError(t.url_file) +
                                  " does not hold an http(s) URL");
    client->http = *http;
    d->clients_.push_back(std::move(client));
  }
  return d;
}

void Deliverer::RunEvery(double interval_s) {
  do {
    const Outcome o = RunDue(static_cast<int64_t>(std::floor(UnixNowSeconds())));
    if (o.delivered + o.refused + o.failed > 0)
      spdlog::info("deliveries: {} delivered, {} refused, {} to retry", o.delivered, o.refused,
                   o.failed);
  } while (Wait(interval_s));
}

Result<std::unique_ptr<DeliverySchedule>> DeliverySchedule::Start(Ledger& ledger,
                                                                  DeliveryConfig config) {
  const double interval_s = config.check_interval_s;
  Result<std::unique_ptr<Deliverer>> d = Deliverer::Create(ledger, std::move(config));
  if (!d.ok()) return d.status();
  std::unique_ptr<DeliverySchedule> s(new DeliverySchedule());
  s->deliverer_ = std::move(*d);
  Deliverer* raw = s->deliverer_.get();
  s->thread_ = std::thread([raw, interval_s] { raw->RunEvery(interval_s); });
  return s;
}

DeliverySchedule::~DeliverySchedule() {
  deliverer_->Stop();
  if (thread_.joinable()) thread_.join();
}

void Deliverer::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

bool Deliverer::Wait(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopped_; });
  return !stopped_;
}

int Deliverer::Post(const std::string& target, const Client& client, const std::string& id,
                    const std::string& body) {
  double backoff = config_.backoff_initial_s;
  for (int attempt = 1; attempt <= config_.max_attempts; ++attempt) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(config_.timeout_s * 1000));
    Result<HttpResponse> r =
        client.http->Send("POST", client.target, body, "application/json", deadline);
    if (r.ok() && r->status < 500 && r->status != 429) return r->status;  // no retry changes it
    std::string why = r.ok() ? "HTTP " + std::to_string(r->status) : r.status().message();
    for (const std::string& secret : {client.url, client.target})
      for (size_t p = why.find(secret); !secret.empty() && p != std::string::npos;
           p = why.find(secret))
        why.replace(p, secret.size(), "<webhook of " + target + ">");
    spdlog::warn("delivery {}: attempt {} of {}: {}", id, attempt, config_.max_attempts, why);
    if (attempt == config_.max_attempts || !Wait(backoff)) break;
    backoff = std::min(backoff * 2, 60.0);
  }
  return 0;
}

Deliverer::Outcome Deliverer::RunDue(int64_t now_s) {
  Outcome outcome;
  for (size_t i = 0; i < config_.targets.size(); ++i) {
    const DeliveryTarget& t = config_.targets[i];
    Client& client = *clients_[i];
    const std::optional<int64_t> due = t.schedule.LatestAtOrBefore(now_s);
    if (!due) continue;
    Result<std::vector<DeliverySummary>> summaries = BuildDeliverySummaries(
        ledger_, *due - t.period_s, *due, t.cost_centers, config_.top_changes);
    if (!summaries.ok()) {
      spdlog::warn("delivery target {}: {}", t.name, summaries.status().message());
      continue;
    }
    for (const DeliverySummary& s : *summaries) {
      const std::string id =
          "delivery/" + t.name + "/" + s.cost_center + "/" + std::to_string(*due);
      Result<bool> recorded = ledger_.HasDelivery(id);
      if (!recorded.ok()) {
        spdlog::warn("delivery {}: {}", id, recorded.status().message());
        ++outcome.failed;
        continue;
      }
      if (*recorded) {
        ++outcome.already;
        continue;
      }
      const std::string body = t.format == DeliveryTarget::Format::kSlack
                                   ? SlackDeliveryPayload(s, config_.report_url)
                                   : JsonDeliveryPayload(s, config_.report_url, id);
      const int status = Post(t.name, client, id, body);
      if (status == 0) {
        ++outcome.failed;
        continue;
      }
      DeliveryRecord record{id,
                            now_s,
                            t.name,
                            s.cost_center,
                            s.from_s,
                            s.to_s,
                            status >= 200 && status < 300 ? "delivered" : "refused",
                            status};
      if (record.outcome == "refused")
        spdlog::warn("delivery {}: refused with HTTP {}: not retried (check the webhook)", id,
                     status);
      else
        spdlog::info("delivery {}: delivered (HTTP {})", id, status);
      Result<bool> stored = ledger_.RecordDelivery(record);
      if (!stored.ok()) {
        spdlog::error("delivery {}: sent, but not recorded: {}", id, stored.status().message());
        ++outcome.failed;
        continue;
      }
      ++(record.outcome == "delivered" ? outcome.delivered : outcome.refused);
    }
  }
  return outcome;
}

}  // namespace gpuvpa
