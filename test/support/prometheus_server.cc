// Real Prometheus processes for tests.
#include "test/support/prometheus_server.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "core/http_client.h"
#include "test/support/redis_server.h"

extern char** environ;

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

bool PrometheusServer::Start(std::string* error) {
  std::ofstream(dir_ + "/prometheus.yml") << "global:\n  scrape_interval: 1h\nscrape_configs: []\n";
  std::vector<std::string> args = {"prometheus",
                                   "--config.file=" + dir_ + "/prometheus.yml",
                                   "--storage.tsdb.path=" + dir_ + "/tsdb",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--storage.tsdb.retention.time=10y",
                                   "--log.level=error"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  const std::string log = dir_ + "/prometheus.log";
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&quiet, STDOUT_FILENO, STDERR_FILENO);
  const int rc = posix_spawnp(&pid_, "prometheus", &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (rc != 0) {
    pid_ = -1;
    *error = "cannot start prometheus (is it installed?)";
    return false;
  }
  for (int i = 0; i < 300; ++i) {
    Result<HttpResponse> ready = HttpGet(url() + "/-/ready", std::chrono::milliseconds(500));
    if (ready.ok() && ready->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *error = "prometheus did not become ready (see " + log + ")";
  Kill();
  return false;
}

void PrometheusServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace gpuvpa::testing
