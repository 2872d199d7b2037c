// gpuvpa-recommender's whole cycle at fleet scale, against a real Prometheus: N GPUs' DCGM
// history (one workload-container per GPU, bench/dcgm_history.h) backfilled with promtool, the
// daemon created from a gpuvpa config as the binary does (SQLite ledger, checkpoint file), then
//   1. the catch-up poll: every sample but the last C steps;
//   2. C steady polls, each one step later: one new sample per series, as a daemon polling
//      every minute sees them; each checkpoints (checkpoint_interval_seconds: 1, the polls are
//      60 s apart) and none charges (the default charge_interval_seconds, an hour);
//   2b. the charge that the hourly poll adds: every workload's pending usage to the ledger, and
//      a checkpoint;
//   3. a checkpoint save alone; a gRPC List of every recommendation over a real socket (the
//      updater's call); a /metrics scrape over HTTP.
// Each poll is split as the daemon's log splits it (read = queries + ingest, recommend, ledger,
// checkpoint, publish). Peak RSS is this process's: the daemon plus the List's and the scrape's
// answers as the client holds them (Prometheus runs apart).
//
//   recommender_cycle_bench [--workloads N] [--minutes M] [--cycles C] [--hosts-per-query K]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "bench/dcgm_history.h"
#include "core/base/time_format.h"
#include "core/cli/logging.h"
#include "core/config/config.h"
#include "core/net/grpc_client.h"
#include "core/net/grpc_server.h"
#include "core/net/http_client.h"
#include "core/net/http_server.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/daemon/recommendation_service.h"
#include "recommender/daemon/recommender_daemon.h"
#include "test/support/prometheus_server.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::recommender {
namespace {

double PeakRssMib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

constexpr char kUsage[] =
    "usage: recommender_cycle_bench [--workloads N] [--minutes M] [--cycles C] "
    "[--hosts-per-query K]\n"
    "  N workload-containers (one GPU each, default 10000), M minutes of backfilled history\n"
    "  (default 30), C steady polls of one new sample each (default 3), K hosts per\n"
    "  query_range (default: the daemon's, 16)\n";

// A poll's phases, then the background save of its checkpoint (encoded in the poll, decoded
// back and written by the daemon's writer thread), waited for here before the next poll as the
// 60 s between polls would.
bool PrintPoll(const char* what, RecommenderDaemon& d) {
  const PollTimings t = d.last_poll_timings();
  const auto t0 = std::chrono::steady_clock::now();
  const Status saved = d.FlushCheckpoint();
  const double save_s = Seconds(t0);
  std::printf(
      "%-10s %7.2f s  read %6.2f  recommend %5.2f  ledger %5.2f  checkpoint %5.2f  publish "
      "%5.2f | background save %5.2f s  peak RSS %6.0f MiB\n",
      what, t.total_s, t.read_s, t.settle.recommend_s, t.settle.ledger_s, t.settle.checkpoint_s,
      t.publish_s, save_s, PeakRssMib());
  if (!saved.ok()) std::cerr << what << ": checkpoint: " << saved.message() << "\n";
  return saved.ok();
}

int Run(int workloads, int minutes, int cycles, int hosts_per_query) {
  testing::ScopedTempDir dir;
  const int steps = minutes + cycles;
  const double end = std::floor(UnixNowSeconds() / 60) * 60 - 3 * 3600;
  const double start = end - (steps - 1) * 60.0;
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  if (!bench::WriteDcgmHistory(dir.Path("history.om"), {workloads, start, steps, true}) ||
      !bench::BackfillDcgmHistory(dir.Path("history.om"), dir.Path("tsdb"), &error)) {
    std::cerr << (error.empty() ? "cannot write " + dir.Path("history.om") : error) << "\n";
    return 1;
  }
  const double backfill_s = Seconds(t0);
  testing::PrometheusServer prometheus(dir.dir().string());
  if (!prometheus.Start(&error)) {
    std::cerr << error << "\n";
    return 1;
  }
  // The daemon's own configuration path; min_history_hours 0 so that every workload gets a
  // target from the short history (the work a week-old fleet's poll does).
  const std::string yaml =
      "ledger:\n  path: " + dir.Path("ledger.db") +
      "\nprices:\n  - gpu_model: H100-80GB\n    usd_per_gpu_hour: 4\n"
      "cost_centers:\n  namespace_label_key: cost-center\n"
      "recommender:\n  prometheus:\n    server_address: " +
      prometheus.url() + "\n    hosts_per_query: " + std::to_string(hosts_per_query) +
      "\n    timeout_seconds: 120\n  checkpoint: " + dir.Path("checkpoint") +
      "\n  checkpoint_interval_seconds: 1\n  history_days: 1\n  min_history_hours: 0\n"
      "  listen_http: 127.0.0.1:0\n  listen_grpc: 127.0.0.1:0\n";
  Result<GpuvpaConfig> gpuvpa = ParseConfig(yaml);
  Result<DaemonConfig> config = gpuvpa.ok() ? ParseDaemonConfig(gpuvpa->recommender_yaml, "bench")
                                            : Result<DaemonConfig>(gpuvpa.status());
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  Result<std::unique_ptr<RecommenderDaemon>> created =
      RecommenderDaemon::Create(*config, *std::move(gpuvpa));
  if (!created.ok()) {
    std::cerr << created.status().message() << "\n";
    return 1;
  }
  RecommenderDaemon& d = **created;
  std::printf(
      "%d workload-containers (%d series), %d min of history at 60 s + %d steady steps; "
      "generate + promtool %.1f s\n",
      workloads, 2 * workloads, minutes, cycles, backfill_s);

  // Polled as of the history's own clock: now - lag is the newest sample to read.
  const double lag = config->prometheus.lag_s;
  double now = end - cycles * 60.0 + lag;
  if (Status s = d.PollOnce(now); !s.ok()) {
    std::cerr << "catch-up poll: " << s.message() << "\n";
    return 1;
  }
  if (!PrintPoll("catch-up", d)) return 1;
  for (int c = 1; c <= cycles; ++c) {
    now += 60;
    if (Status s = d.PollOnce(now); !s.ok()) {
      std::cerr << "poll " << c << ": " << s.message() << "\n";
      return 1;
    }
    if (!PrintPoll(("steady " + std::to_string(c)).c_str(), d)) return 1;
  }
  // The hourly charge (charge_interval_seconds), as the poll that is due does it.
  if (Status s = d.ChargeAndCheckpointNow(now); !s.ok()) {
    std::cerr << "charge: " << s.message() << "\n";
    return 1;
  }
  if (!PrintPoll("charge", d)) return 1;
  const size_t recommendations = d.snapshot()->by_key.size();

  t0 = std::chrono::steady_clock::now();
  if (Status s = d.SaveCheckpointNow(now); !s.ok()) {
    std::cerr << "checkpoint: " << s.message() << "\n";
    return 1;
  }
  const double checkpoint_s = Seconds(t0);
  const uintmax_t checkpoint_bytes = std::filesystem::file_size(config->checkpoint_path);

  // The served API, as gpuvpa-recommender serves it.
  RecommendationServiceImpl service(d);
  ServerOptions grpc_options;
  grpc_options.listen_address = "127.0.0.1:0";
  Result<RunningServer> grpc_server = StartServer(grpc_options, {&service});
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      "127.0.0.1:0", [&d](const std::string& path) { return d.HandleHttp(path); });
  if (!grpc_server.ok() || !http.ok()) {
    std::cerr << "serve: "
              << (grpc_server.ok() ? http.status().message() : grpc_server.status().message())
              << "\n";
    return 1;
  }
  ClientChannelOptions channel_options;
  channel_options.address = "127.0.0.1:" + std::to_string(grpc_server->port);
  channel_options.max_receive_bytes = 256 << 20;  // as the updater's
  Result<std::shared_ptr<grpc::Channel>> channel = MakeClientChannel(channel_options);
  if (!channel.ok()) {
    std::cerr << channel.status().message() << "\n";
    return 1;
  }
  auto stub = v1::RecommendationService::NewStub(*channel);
  double list_s = 0;
  size_t listed = 0, list_bytes = 0;
  for (int round = 0; round < 3; ++round) {  // the first one opens the connection
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::ListRecommendationsResponse response;
    t0 = std::chrono::steady_clock::now();
    const grpc::Status status = stub->List(&context, v1::ListRecommendationsRequest(), &response);
    const double s = Seconds(t0);
    if (!status.ok()) {
      std::cerr << "List: " << status.error_message() << "\n";
      return 1;
    }
    if (round > 0) list_s = round == 1 ? s : std::min(list_s, s);
    listed = static_cast<size_t>(response.recommendations_size());
    list_bytes = response.ByteSizeLong();
  }
  HttpClientOptions http_options;
  http_options.base_url = "http://127.0.0.1:" + std::to_string((*http)->port());
  http_options.max_response_bytes = 1u << 30;
  Result<std::shared_ptr<HttpClient>> scraper = HttpClient::Create(http_options);
  if (!scraper.ok()) {
    std::cerr << scraper.status().message() << "\n";
    return 1;
  }
  t0 = std::chrono::steady_clock::now();
  const size_t page_bytes = d.HandleHttp("/metrics").body.size();
  const double page_s = Seconds(t0);  // the page alone, without HTTP
  double scrape_s = 0;
  size_t scrape_bytes = 0, scrape_lines = 0;
  for (int round = 0; round < 3; ++round) {
    t0 = std::chrono::steady_clock::now();
    Result<HttpResponse> page =
        (*scraper)->Get("/metrics", std::chrono::steady_clock::now() + std::chrono::seconds(60));
    const double s = Seconds(t0);
    if (!page.ok() || page->status != 200) {
      std::cerr << "/metrics: "
                << (page.ok() ? std::to_string(page->status) : page.status().message()) << "\n";
      return 1;
    }
    scrape_s = round == 0 ? s : std::min(scrape_s, s);
    scrape_bytes = page->body.size();
    scrape_lines = static_cast<size_t>(std::count(page->body.begin(), page->body.end(), '\n'));
  }
  // The same scrape by curl, a client like Prometheus's own (ours parses with Beast, which
  // spends more per byte than the server does).
  double curl_s = -1;
  const std::string curl =
      "curl -s -o /dev/null -w '%{time_total}' " + http_options.base_url + "/metrics 2>/dev/null";
  for (int round = 0; round < 3; ++round)
    if (FILE* p = ::popen(curl.c_str(), "r")) {
      double s = -1;
      const bool read = std::fscanf(p, "%lf", &s) == 1;
      if (::pclose(p) == 0 && read) curl_s = curl_s < 0 ? s : std::min(curl_s, s);
    }
  if (curl_s >= 0) std::printf("/metrics scraped by curl: %.2f s (best of 3)\n", curl_s);
  std::printf(
      "checkpoint alone %.2f s (%.1f MB); List %zu of %zu recommendations %.2f s (%.1f MB, best "
      "of 2 after the first); /metrics %.2f s (%.1f MB, %zu lines, best of 3; the page alone %.2f "
      "s, %.1f MB); peak RSS %.0f MiB\n",
      checkpoint_s, static_cast<double>(checkpoint_bytes) / 1e6, listed, recommendations, list_s,
      static_cast<double>(list_bytes) / 1e6, scrape_s, static_cast<double>(scrape_bytes) / 1e6,
      scrape_lines, page_s, static_cast<double>(page_bytes) / 1e6, PeakRssMib());
  grpc_server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

}  // namespace
}  // namespace gpuvpa::recommender

int main(int argc, char** argv) {
  int workloads = 10000, minutes = 30, cycles = 3, hosts_per_query = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << gpuvpa::recommender::kUsage;
      return 0;
    }
    int* value = flag == "--workloads"         ? &workloads
                 : flag == "--minutes"         ? &minutes
                 : flag == "--cycles"          ? &cycles
                 : flag == "--hosts-per-query" ? &hosts_per_query
                                               : nullptr;
    if (value == nullptr || i + 1 >= argc || (*value = std::atoi(argv[++i])) <= 0) {
      std::cerr << "recommender_cycle_bench: bad argument " << flag << "\n"
                << gpuvpa::recommender::kUsage;
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);                   // each poll as it ends
  const char* level = std::getenv("GPUVPA_BENCH_LOG_LEVEL");  // e.g. debug: every query's time
  (void)gpuvpa::ConfigureLogging(level != nullptr ? level : "warn");
  return gpuvpa::recommender::Run(workloads, minutes, cycles, hosts_per_query);
}
