// Ingest from a real Prometheus: writes DCGM-shaped history (GPUs x days at 60 s: one
// DCGM_FI_DEV_FB_USED and one DCGM_FI_PROF_SM_ACTIVE series per GPU), backfills it with promtool,
// starts prometheus, then runs one recommender poll over the whole history (the daemon's path:
// chunked query_range, simdjson, DCGM join, idempotent ingest) and prints wall time and peak RSS.
//
//   prometheus_ingest_bench --series 10000 --days 1 [--chunk-hours 6] [--hosts-per-query 64]
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "bench/dcgm_history.h"
#include "core/base/time_format.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/input/dcgm_ingest.h"
#include "recommender/input/prometheus_source.h"
#include "test/support/prometheus_server.h"
#include "test/support/temp_dir.h"

namespace {

double PeakRssMib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  int series = 1000;
  double days = 1, chunk_hours = 6;
  size_t hosts_per_query = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--series")
      series = std::atoi(argv[i + 1]);
    else if (flag == "--days")
      days = std::atof(argv[i + 1]);
    else if (flag == "--chunk-hours")
      chunk_hours = std::atof(argv[i + 1]);
    else if (flag == "--hosts-per-query")
      hosts_per_query = std::strtoul(argv[i + 1], nullptr, 10);
    else {
      std::cerr << "usage: prometheus_ingest_bench --series N --days D [--chunk-hours H] "
                   "[--hosts-per-query K]\n";
      return 2;
    }
  }
  if (argc == 2 && std::string(argv[1]) == "--help") {
    std::cout << "usage: prometheus_ingest_bench --series N --days D [--chunk-hours H] "
                 "[--hosts-per-query K]\n";
    return 0;
  }
  const int gpus = std::max(1, series / 2);
  const int steps = static_cast<int>(days * 1440);
  gpuvpa::testing::ScopedTempDir dir;
  const double end = std::floor(gpuvpa::UnixNowSeconds() / 60) * 60 - 3 * 3600;
  const double start = end - (steps - 1) * 60.0;
  auto t0 = std::chrono::steady_clock::now();
  if (!gpuvpa::bench::WriteDcgmHistory(dir.Path("history.om"), {gpus, start, steps, false})) {
    std::cerr << "cannot write " << dir.Path("history.om") << "\n";
    return 1;
  }
  const double generate_s = Seconds(t0);
  t0 = std::chrono::steady_clock::now();
  std::string error;
  if (!gpuvpa::bench::BackfillDcgmHistory(dir.Path("history.om"), dir.Path("tsdb"), &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  const double backfill_s = Seconds(t0);
  gpuvpa::testing::PrometheusServer prometheus(dir.dir().string());
  if (!prometheus.Start(&error)) {
    std::cerr << error << "\n";
    return 1;
  }

  gpuvpa::recommender::PrometheusSourceOptions options;
  options.http.base_url = prometheus.url();
  options.http.max_response_bytes = 512u << 20;
  options.chunk_s = chunk_hours * 3600;
  options.hosts_per_query = hosts_per_query;
  options.request_timeout_s = 120;
  auto source = gpuvpa::recommender::PrometheusSource::Create(options);
  if (!source.ok()) {
    std::cerr << source.status().message() << "\n";
    return 1;
  }
  gpuvpa::recommender::FleetStoreOptions store_options;
  store_options.history_s = (days + 1) * 86400;
  gpuvpa::recommender::FleetStore store(store_options);
  gpuvpa::recommender::DcgmIngestOptions ingest;
  ingest.now_s = gpuvpa::UnixNowSeconds();
  gpuvpa::recommender::DcgmIngester ingester(store, gpuvpa::GpuCatalog::BuiltIn(), ingest);
  const double rss_before = PeakRssMib();
  size_t accepted = 0;
  double max_batch_points = 0;
  t0 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  const gpuvpa::recommender::PollResult poll = (*source)->Poll(
      start - 60, end + 60, [&](std::span<const gpuvpa::LabeledSeries> batch, double) {
        double points = 0;
        for (const auto& s : batch) points += static_cast<double>(s.points.size());
        max_batch_points = std::max(max_batch_points, points);
        accepted += ingester.Ingest(batch).accepted;
      });
  const double poll_s = Seconds(t0);
  const double poll_cpu_s = CpuSeconds() - cpu0;
  if (!poll.error.ok()) {
    std::cerr << "poll: " << poll.error.message() << "\n";
    return 1;
  }
  std::printf(
      "series %d (GPUs %d) x %.2f days at 60 s = %zu points; generate %.1f s, promtool %.1f s\n"
      "poll: %.2f s wall (%.2f s CPU in this process; the rest is Prometheus), %zu queries, %zu "
      "chunks, %.2f M points/s; %zu samples ingested, %zu "
      "workloads\n"
      "largest batch %.0f points; peak RSS %.1f MiB (%.1f MiB before the poll)\n",
      series, gpus, days, poll.points, generate_s, backfill_s, poll_s, poll_cpu_s, poll.queries,
      poll.chunks, static_cast<double>(poll.points) / poll_s / 1e6, accepted, store.size(),
      max_batch_points, PeakRssMib(), rss_before);
  return 0;
}
