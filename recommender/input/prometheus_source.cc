// Prometheus polling: chunks, host batches, retries.
#include "recommender/input/prometheus_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/base/names.h"
#include "core/metrics/prometheus_api.h"

namespace gpuvpa::recommender {
namespace {

std::string JoinAlternatives(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "|") + n;
  return out;
}

// A PromQL regex alternative that matches `value` literally.
std::string RegexLiteral(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (std::string_view(".+*?()[]{}|^$\\").find(c) != std::string_view::npos) out += "\\\\";
    if (c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string Seconds(double s) { return FormatNumber(s); }

constexpr const char* kStoppedMessage = "poll stopped: the process is shutting down";

bool Retryable(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

}  // namespace

Result<std::unique_ptr<PrometheusSource>> PrometheusSource::Create(
    PrometheusSourceOptions options) {
  if (!(options.step_s >= 1))
    return InvalidArgumentError("prometheus step " + FormatNumber(options.step_s) +
                                " s is below 1 s");
  if (!(options.chunk_s >= options.step_s))
    return InvalidArgumentError("prometheus chunk " + FormatNumber(options.chunk_s) +
                                " s is shorter than the step");
  // Prometheus refuses more than 11,000 points per series in one query_range.
  if (options.chunk_s / options.step_s > 10000)
    return InvalidArgumentError("prometheus chunk " + FormatNumber(options.chunk_s) +
                                " s holds more than 10,000 steps of " +
                                FormatNumber(options.step_s) + " s");
  if (options.max_retries < 0 || options.max_retries > 10)
    return InvalidArgumentError("prometheus max_retries " + std::to_string(options.max_retries) +
                                " is not in 0..10");
  Result<std::shared_ptr<HttpClient>> client = HttpClient::Create(options.http);
  if (!client.ok()) return client.status();
  return std::unique_ptr<PrometheusSource>(
      new PrometheusSource(std::move(options), std::move(client).value()));
}

PrometheusSource::PrometheusSource(PrometheusSourceOptions options,
                                   std::shared_ptr<HttpClient> client)
    : options_(std::move(options)), client_(std::move(client)), jitter_(std::random_device{}()) {}

std::vector<QueriedRange> PrometheusSource::queried_ranges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queried_;
}

Result<HttpResponse> PrometheusSource::Get(const std::string& target, const std::string& query,
                                           PollResult& poll) {
  double backoff = options_.backoff_initial_s;
  Status last;
  auto stopped = [&] { return stop_ != nullptr && stop_->load(); };
  for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
    if (attempt > 0) {
      ++poll.retries;
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      const auto wake = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(backoff * jitter(jitter_)));
      while (!stopped() && std::chrono::steady_clock::now() < wake)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      backoff = std::min(backoff * 2, options_.backoff_max_s);
    }
    if (stopped()) return UnavailableError(kStoppedMessage);
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(options_.request_timeout_s * 1000));
    Result<HttpResponse> response = client_->Get(target, deadline);
    if (!response.ok()) {
      last = UnavailableError("Prometheus query \"" + query + "\": " + response.status().message());
      continue;
    }
    if (Retryable(response->status)) {
      last = UnavailableError("Prometheus query \"" + query + "\": HTTP " +
                              std::to_string(response->status) + " after " +
                              std::to_string(attempt + 1) + " attempts");
      double after = 0;
      const std::string& ra = response->retry_after;
      if (!ra.empty() && std::from_chars(ra.data(), ra.data() + ra.size(), after).ec == std::errc())
        backoff = std::clamp(after, backoff, options_.backoff_max_s);
      continue;
    }
    return response;
  }
  return last;
}

Result<PrometheusQueryResult> PrometheusSource::Query(const std::string& target,
                                                      const std::string& query,
                                                      PrometheusResultType type, PollResult& poll) {
  const auto asked = std::chrono::steady_clock::now();
  Result<HttpResponse> response = Get(target, query, poll);
  ++poll.queries;
  if (!response.ok()) return response.status();
  const auto answered = std::chrono::steady_clock::now();
  Result<PrometheusQueryResult> parsed =
      ParsePrometheusResponse(response->body, response->status, type, query);
  if (spdlog::should_log(spdlog::level::debug)) {
    auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    spdlog::debug("Prometheus answered {} bytes in {:.3f} s, parsed in {:.3f} s: {:.120}",
                  response->body.size(), seconds(asked, answered),
                  seconds(answered, std::chrono::steady_clock::now()), query);
  }
  if (parsed.ok())
    for (const std::string& w : parsed->warnings) poll.warnings.push_back(query + ": " + w);
  return parsed;
}

Result<std::vector<std::string>> PrometheusSource::Hosts(double from_s, double until_s,
                                                         PollResult& poll) {
  std::vector<std::string> hosts;
  if (options_.hosts_per_query == 0) return hosts;
  // DCGM's host labels on its VRAM series, and the node agent's node label on its own.
  std::vector<std::pair<std::string, std::vector<std::string>>> asks;
  for (const std::string& label : options_.dcgm.host_labels)
    asks.emplace_back(label, options_.dcgm.vram_mib);
  if (const NodeAgentNames& a = options_.dcgm.node_agent; a.enabled)
    asks.emplace_back(a.node_label, std::vector<std::string>{a.memory_bytes});
  for (const auto& [label, metrics] : asks) {
    const std::string query = "label " + label + " values of " + metrics.front();
    const std::string target =
        "/api/v1/label/" + label + "/values?match[]=" +
        UrlEncode("{__name__=~\"" + JoinAlternatives(metrics) + "\"" +
                  (options_.selector.empty() ? "" : "," + options_.selector) + "}") +
        "&start=" + Seconds(from_s) + "&end=" + Seconds(until_s);
    Result<HttpResponse> response = Get(target, query, poll);
    ++poll.queries;
    if (!response.ok()) return response.status();
    Result<std::vector<std::string>> values =
        ParsePrometheusLabelValues(response->body, response->status, query);
    if (!values.ok()) return values.status();
    hosts.insert(hosts.end(), values->begin(), values->end());
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

std::string PrometheusSource::UsageQuery(const std::vector<std::string>& hosts, size_t begin,
                                         size_t end) const {
  const DcgmNames& n = options_.dcgm;
  std::vector<std::string> metrics = n.vram_mib;
  for (const auto* list : {&n.sm_active, &n.gr_engine_active, &n.gpu_util_percent})
    metrics.insert(metrics.end(), list->begin(), list->end());
  const std::string selector = options_.selector.empty() ? "" : "," + options_.selector;
  std::string base = "__name__=~\"" + JoinAlternatives(metrics) + "\"" + selector;
  // The node agent's series, with its own host label.
  const NodeAgentNames& a = n.node_agent;
  const std::string agent =
      a.enabled
          ? "__name__=~\"" + JoinAlternatives({a.memory_bytes, a.busy_ratio, a.sm_active_ratio}) +
                "\"" + selector
          : "";
  if (begin == end) return "{" + base + "}" + (agent.empty() ? "" : " or {" + agent + "}");
  // One alternative per host label spelling: a series carries one of them.
  std::string host_regex;
  for (size_t i = begin; i < end; ++i)
    host_regex += (i == begin ? "" : "|") + RegexLiteral(hosts[i]);
  std::string query;
  for (const std::string& label : n.host_labels)
    query += (query.empty() ? "" : " or ") + std::string("{") + base + "," + label + "=~\"" +
             host_regex + "\"}";
  if (!agent.empty()) query += " or {" + agent + "," + a.node_label + "=~\"" + host_regex + "\"}";
  return query;
}

PollResult PrometheusSource::Poll(double from_s, double until_s, const Sink& sink) {
  PollResult poll;
  poll.through_s = from_s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queried_.clear();  // the ranges of this poll only: bounded in a long-running daemon
  }
  const double step = options_.step_s;
  // Aligned to the step, so that a restart asks for exactly the next points.
  double start = (std::floor(from_s / step) + 1) * step;
  const double last = std::floor(until_s / step) * step;
  if (start > last) return poll;

  // kube-state-metrics for the whole polled range: owners, requests, labels, annotations.
  const KubeStateNames& k = options_.kube_state;
  const std::string range = "[" + Seconds(std::max(step, last - start + step)) + "s]";
  std::vector<std::pair<std::string, std::string>> ksm = {
      {k.pod_owner, "max_over_time(" + k.pod_owner + range + ")"},
      {k.replicaset_owner, "max_over_time(" + k.replicaset_owner + range + ")"},
      {k.job_owner, "max_over_time(" + k.job_owner + range + ")"},
      {k.requests, "max_over_time(" + k.requests + "{resource=~\"nvidia_com_.*\"}" + range + ")"},
      {k.namespace_labels, "max_over_time(" + k.namespace_labels + range + ")"}};
  for (const char* kind : {"deployment", "statefulset", "daemonset", "job", "cronjob"}) {
    const std::string metric = std::string("kube_") + kind + k.annotations_suffix;
    ksm.emplace_back(metric, "max_over_time(" + metric + range + ")");
  }
  std::vector<LabeledSeries> kube_state;
  for (const auto& [metric, query] : ksm) {
    Result<PrometheusQueryResult> parsed =
        Query("/api/v1/query?query=" + UrlEncode(query) + "&time=" + Seconds(last), query,
              PrometheusResultType::kVector, poll);
    if (!parsed.ok()) {
      poll.error = parsed.status();
      return poll;
    }
    for (LabeledSeries& s : parsed->series) {
      s.metric = metric;  // functions drop the name
      kube_state.push_back(std::move(s));
    }
  }
  if (!kube_state.empty()) sink(kube_state, start - step);

  Result<std::vector<std::string>> hosts = Hosts(start, last, poll);
  if (!hosts.ok()) {
    poll.error = hosts.status();
    return poll;
  }
  const size_t full_chunk_steps =
      std::max<size_t>(1, static_cast<size_t>(std::llround(options_.chunk_s / step)));
  while (start <= last) {
    const double end = std::min(last, start + options_.chunk_s - step);
    // The batch is sized for a full chunk's points per answer; a shorter window (a steady poll
    // reads a step or two) takes proportionally more hosts per query, up to kMaxHostsPerQuery
    // (the query string carries every host name). 100,000 GPUs at 16 hosts were 782 queries
    // per one-step poll.
    size_t per_query = hosts->size();
    if (options_.hosts_per_query > 0) {
      const auto steps = static_cast<size_t>(std::llround((end - start) / step)) + 1;
      per_query = std::max(options_.hosts_per_query,
                           std::min(kMaxHostsPerQuery, options_.hosts_per_query * full_chunk_steps /
                                                           std::min(steps, full_chunk_steps)));
    }
    size_t begin = 0;
    do {
      const size_t stop = std::min(hosts->size(), begin + std::max<size_t>(1, per_query));
      const std::string query = UsageQuery(*hosts, begin, stop);
      {
        std::lock_guard<std::mutex> lock(mu_);
        queried_.push_back({query, start, end});
      }
      Result<PrometheusQueryResult> parsed =
          Query("/api/v1/query_range?query=" + UrlEncode(query) + "&start=" + Seconds(start) +
                    "&end=" + Seconds(end) + "&step=" + Seconds(step),
                query, PrometheusResultType::kMatrix, poll);
      if (!parsed.ok()) {
        poll.error = parsed.status();
        return poll;
      }
      poll.series += parsed->series.size();
      // A sample stands for the time before it inside the asked window: a point outside it (a
      // broken or hostile server) is never ingested, so never charged.
      for (LabeledSeries& s : parsed->series) {
        const size_t sent = s.points.size();
        std::erase_if(s.points, [&](const MetricPoint& p) {
          return !(p.time_s >= start && p.time_s <= end);
        });
        poll.outside_window += sent - s.points.size();
        poll.points += s.points.size();
      }
      sink(parsed->series, end);
      begin = stop;
    } while (begin < hosts->size());
    ++poll.chunks;
    poll.through_s = end;
    start = end + step;
  }
  return poll;
}

}  // namespace gpuvpa::recommender
