// A real Prometheus for tests: history backfilled with `promtool tsdb create-blocks-from
// openmetrics`, served on 127.0.0.1 at an ephemeral port, killed on exit.
#pragma once

#include <sys/types.h>

#include <string>

namespace gpuvpa::testing {

class PrometheusServer {
 public:
  // `dir` holds the config, the OpenMetrics file and the TSDB.
  explicit PrometheusServer(std::string dir);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Backfills `openmetrics` (text ending in "# EOF") into the TSDB; call before Start.
  bool Backfill(const std::string& openmetrics, std::string* error);
  // Scrapes http://127.0.0.1:<port>/metrics every `interval_s` (a job named `job`, the target's
  // labels as a PodMonitor without honorLabels would not add them); call before Start.
  void AddScrapeTarget(const std::string& job, int port, double interval_s);
  // Starts prometheus and waits until it is ready.
  bool Start(std::string* error);
  void Kill();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string dir_;
  std::string scrape_configs_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace gpuvpa::testing
