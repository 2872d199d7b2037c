// The live source: DCGM exporter and kube-state-metrics series from Prometheus's HTTP API, read
// in time chunks (query_range) and series batches (groups of hosts) so memory stays bounded
// whatever the fleet size and history, resuming from the store's high-water mark.
//
// Per poll: the hosts that have usage series in the range (/api/v1/label/<host>/values), then
// per chunk and host batch one query_range for all usage metrics; kube-state-metrics once per
// poll (max_over_time over the polled range, one instant query per metric, so pods that ended
// inside the range are still known). 429, 502, 503, 504 and transport errors are retried with
// jittered exponential backoff (Retry-After honoured, capped); every error names the query.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/metrics/labeled_series.h"
#include "core/metrics/prometheus_api.h"
#include "core/net/http_client.h"
#include "recommender/input/dcgm_ingest.h"

namespace gpuvpa::recommender {

// The most hosts one query_range names (its query string spells out each host name twice, one
// regex per host label spelling: about 25 KB at this many).
inline constexpr size_t kMaxHostsPerQuery = 1024;

struct PrometheusSourceOptions {
  HttpClientOptions http;  // base_url, CA file, bearer token file, ...
  double step_s = 60;
  double chunk_s = 6 * 3600;  // time per query_range
  // Hosts per query_range (0: all hosts in one query). Each host holds up to 8 GPUs. The
  // largest response bounds the memory: simdjson's DOM needs ~13 bytes per byte of JSON, about
  // 300 bytes per point; 16 hosts x 8 GPUs x 2 series x 360 steps (6 h) ≈ 92,000 points ≈ 30 MB.
  // A window shorter than chunk_s takes more hosts per query at the same points per answer,
  // up to kMaxHostsPerQuery.
  size_t hosts_per_query = 16;
  // Scrapes land late: read only up to now - lag.
  double lag_s = 60;
  double request_timeout_s = 30;
  int max_retries = 3;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 10;
  // Extra label matchers added to every usage query, e.g. cluster="prod-a".
  std::string selector;
  DcgmNames dcgm;
  KubeStateNames kube_state;
};

// One query_range sent, for tests and the log (a restart reads no history twice).
struct QueriedRange {
  std::string query;
  double start_s = 0;
  double end_s = 0;
};

struct PollResult {
  double through_s = 0;  // everything up to here has been handed to the sink
  size_t chunks = 0;
  size_t queries = 0;
  size_t series = 0;
  size_t points = 0;
  size_t outside_window = 0;  // points the server sent outside the asked window: not ingested
  size_t retries = 0;
  std::vector<std::string> warnings;  // the server's, each prefixed with its query
  Status error;  // the first error that stopped the poll (through_s says how far it got)
};

class PrometheusSource {
 public:
  // Checks the URL and the credential files now (errors name the option and the file).
  static Result<std::unique_ptr<PrometheusSource>> Create(PrometheusSourceOptions options);

  // The sink gets every batch of series (usage for one chunk and host batch, plus the
  // kube-state-metrics of the poll) and the chunk's end time.
  using Sink = std::function<void(std::span<const LabeledSeries> batch, double chunk_end_s)>;
  // Reads (from_s, until_s]: chunk by chunk, in time order. Stops at the first error.
  PollResult Poll(double from_s, double until_s, const Sink& sink);

  // When *stop becomes true, the poll ends before its next request (and during a backoff) with
  // what it has read so far: a daemon told to stop does not finish a long backfill first.
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

  const PrometheusSourceOptions& options() const { return options_; }
  // The query_range ranges of the latest poll.
  std::vector<QueriedRange> queried_ranges() const;

 private:
  explicit PrometheusSource(PrometheusSourceOptions options, std::shared_ptr<HttpClient> client);
  // GET with retries; the body of a 2xx/4xx/5xx answer that carries the API's JSON.
  Result<HttpResponse> Get(const std::string& target, const std::string& query, PollResult& poll);
  // Get + parse as `type`; the server's warnings go to the poll's, with the query.
  Result<PrometheusQueryResult> Query(const std::string& target, const std::string& query,
                                      PrometheusResultType type, PollResult& poll);
  Result<std::vector<std::string>> Hosts(double from_s, double until_s, PollResult& poll);
  std::string UsageQuery(const std::vector<std::string>& hosts, size_t begin, size_t end) const;

  PrometheusSourceOptions options_;
  std::shared_ptr<HttpClient> client_;
  std::mt19937_64 jitter_;
  const std::atomic<bool>* stop_ = nullptr;
  mutable std::mutex mu_;
  std::vector<QueriedRange> queried_;
};

}  // namespace gpuvpa::recommender
