// Scheduled delivery of cost summaries to owners: per target (a Slack incoming webhook, or a
// generic JSON webhook) and cost center, on a cron schedule, a summary of the period that ends
// at the scheduled time: billed cost, idle tax, and the top proposed changes with their savings
// and risk, with a link to the in-cluster report. Each (target, cost center, scheduled time) is
// delivered once: the receiver's answer is recorded in the ledger (Ledger::RecordDelivery) and a
// recorded delivery is never sent again, by this run or any later one. 5xx, 429 and network
// errors are retried with exponential backoff, a bounded number of times (then the next run
// tries again); any other answer (4xx) is recorded as refused and logged with its status, never
// retried. Webhook URLs are read from files (Secrets) and never logged: errors name the target.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/base/cron.h"
#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

struct DeliveryTarget {
  std::string name;  // a DNS-1123 label: part of each delivery's id
  CronSchedule schedule;
  int64_t period_s = 7 * 86400;  // the summary covers [scheduled time - period, scheduled time)
  std::vector<std::string> cost_centers;  // empty: every cost center billed in the period
  enum class Format { kSlack, kJson };
  Format format = Format::kSlack;
  std::string url_file;  // the webhook's URL: the file's first line
};

struct DeliveryConfig {
  std::string report_url;  // the in-cluster owner reports, linked from each summary ("": none)
  std::vector<DeliveryTarget> targets;
  int max_attempts = 5;
  double backoff_initial_s = 1;  // doubled after each attempt, at most 60 s
  double timeout_s = 10;         // per attempt
  int top_changes = 5;
  double check_interval_s = 60;  // how often the schedules are checked
};

// The config's `delivery:` section (YAML text, as GpuvpaConfig::delivery_yaml holds it):
//   report_url, max_attempts, backoff_initial_s, timeout_s, top_changes, check_interval_s, and
//   targets: a list of
//   {name, schedule (cron), period (e.g. 7d), cost_centers (list), slack_webhook_url_file |
//   webhook_url_file}. Unknown fields are errors naming the field.
Result<DeliveryConfig> ParseDeliveryConfig(std::string_view yaml_text);

struct DeliveryChange {
  std::string namespace_name, workload, before, after, risk;
  MicroUsd monthly_savings = 0;
};
struct DeliverySummary {
  std::string cost_center;
  int64_t from_s = 0, to_s = 0;
  ShowbackRow figures;                      // the cost center's showback over [from_s, to_s)
  std::vector<DeliveryChange> top_changes;  // the largest proposed monthly savings first
};
// One summary per cost center billed (or with proposals) in [from_s, to_s), those of
// `cost_centers` only when it is not empty.
Result<std::vector<DeliverySummary>> BuildDeliverySummaries(
    const Ledger& ledger, int64_t from_s, int64_t to_s,
    const std::vector<std::string>& cost_centers, int top_changes);

// Slack Block Kit: a header, the figures as fields, the top changes, a link to the report.
std::string SlackDeliveryPayload(const DeliverySummary& s, std::string_view report_url);
// A generic JSON document (schema "gpuvpa.delivery/v1"), money exact in micro-dollars.
std::string JsonDeliveryPayload(const DeliverySummary& s, std::string_view report_url,
                                std::string_view delivery_id);

class Deliverer {
 public:
  // Reads every target's URL file (INVALID_ARGUMENT naming the target and the file, never the
  // URL). `ledger` must be writable: deliveries are recorded in it.
  static Result<std::unique_ptr<Deliverer>> Create(Ledger& ledger, DeliveryConfig config);
  ~Deliverer();

  struct Outcome {
    int delivered = 0;
    int refused = 0;
    int failed = 0;   // retries exhausted: not recorded, the next run tries again
    int already = 0;  // recorded by an earlier run
  };
  // Sends every summary due at `now_s` (each target's latest scheduled time at or before it)
  // that is not recorded yet. Blocks while it retries; Stop() ends the waits.
  Outcome RunDue(int64_t now_s);
  // RunDue(the wall clock) now and every `interval_s` until Stop().
  void RunEvery(double interval_s);
  void Stop();

  struct Client;

 private:
  Deliverer(Ledger& ledger, DeliveryConfig config);
  // POSTs `body` to the target, retrying 5xx, 429 and network errors with backoff: the status
  // of the answer no retry changes, or 0 when the attempts ran out (or Stop() came).
  int Post(const std::string& target, const Client& client, const std::string& id,
           const std::string& body);
  // Sleeps `seconds` unless stopped; false once stopped.
  bool Wait(double seconds);
  Ledger& ledger_;
  const DeliveryConfig config_;
  std::vector<std::unique_ptr<Client>> clients_;  // one per target
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

// A Deliverer on its own thread (RunEvery), stopped and joined when destroyed.
class DeliverySchedule {
 public:
  // Checks every config.check_interval_s.
  static Result<std::unique_ptr<DeliverySchedule>> Start(Ledger& ledger, DeliveryConfig config);
  ~DeliverySchedule();

 private:
  DeliverySchedule() = default;
  std::unique_ptr<Deliverer> deliverer_;
  std::thread thread_;
};

}  // namespace gpuvpa
