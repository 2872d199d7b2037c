// Real Prometheus processes for tests.
#include "test/support/prometheus_server.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "core/net/http_client.h"
#include "test/support/process.h"
#include "test/support/redis_server.h"

namespace gpuvpa::testing {

PrometheusServer::PrometheusServer(std::string dir)
    : dir_(std::move(dir)), port_(FreeLocalPort()) {}

PrometheusServer::~PrometheusServer() { Kill(); }

bool PrometheusServer::Backfill(const std::string& openmetrics, std::string* error) {
  std::ofstream(dir_ + "/history.om") << openmetrics;
  const std::string cmd = "promtool tsdb create-blocks-from openmetrics '" + dir_ +
                          "/history.om' '" + dir_ + "/tsdb' >'" + dir_ + "/promtool.log' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir_ + "/promtool.log");
    *error = "promtool failed: " + std::string(std::istreambuf_iterator<char>(log), {});
    return false;
  }
  return true;
}

void PrometheusServer::AddScrapeTarget(const std::string& job, int port, double interval_s) {
  const std::string every = std::to_string(static_cast<int>(interval_s * 1000)) + "ms";
  scrape_configs_ += "  - job_name: " + job + "\n    scrape_interval: " + every +
                     "\n    scrape_timeout: " + every +
                     "\n    static_configs:\n      - targets: ['127.0.0.1:" + std::to_string(port) +
                     "']\n";
}

bool PrometheusServer::Start(std::string* error) {
  std::ofstream(dir_ + "/prometheus.yml")
      << "global:\n  scrape_interval: 1h\nscrape_configs:"
      << (scrape_configs_.empty() ? " []\n" : "\n" + scrape_configs_);
  const std::string log = dir_ + "/prometheus.log";
  // The port was free when it was picked, but a parallel test may take it before prometheus
  // binds it: then prometheus exits at once, and it gets another port.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<std::string> args = {"prometheus",
                                     "--config.file=" + dir_ + "/prometheus.yml",
                                     "--storage.tsdb.path=" + dir_ + "/tsdb",
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--storage.tsdb.retention.time=10y",
                                     "--log.level=error"};
    pid_ = SpawnProcess(args, log);
    if (pid_ < 0) {
      *error = "cannot start prometheus (is it installed?)";
      return false;
    }
    // A loaded CI machine can take many seconds to open a backfilled TSDB: wait on a deadline,
    // and stop early only when the process is gone.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < end && !HasExited(pid_)) {
      Result<HttpResponse> ready = HttpGet(url() + "/-/ready", std::chrono::milliseconds(1000));
      if (ready.ok() && ready->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string output = ReadTextFile(log);
    if (pid_ < 0 && output.find("address already in use") != std::string::npos) {
      port_ = FreeLocalPort();
      continue;
    }
    *error = std::string(pid_ < 0 ? "prometheus exited" : "prometheus did not become ready") +
             " on port " + std::to_string(port_) + "; its log:\n" + output.substr(0, 4000);
    Kill();
    return false;
  }
  *error = "prometheus found no free port in 5 attempts";
  return false;
}

void PrometheusServer::Kill() { KillProcess(pid_); }

}  // namespace gpuvpa::testing
