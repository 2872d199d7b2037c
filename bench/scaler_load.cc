// Load client for gpuvpa-scaler: GetMetrics latency at a fixed request rate across many distinct
// ScaledObjects, over loopback gRPC. Open loop: each request is timed from when it was due, so a
// slow server cannot hide its queueing (no coordinated omission).
//
//   build/bin/scaler_load [--rate 2000] [--seconds 10] [--scaled-objects 10000] [--threads 8]
//                         [--target HOST:PORT]   # default: an in-process server on 127.0.0.1
// ScaledObjects use the push source (each its own queue, reported once up front), so the
// figures are the scaler's own cost, not a queue backend's.
//   --redis HOST:PORT  instead, each ScaledObject reads its own list (LLEN) on this real Redis
//                      server; the report adds what reached Redis by its own counts: LLEN
//                      commands (INFO commandstats) and client reads (INFO stats
//                      total_reads_processed: about one per round trip, however many commands
//                      a client pipelines into it), per request; in-process, also the asks that
//                      waited on a read and the refresh round trips.
//   --warmup           ask every ScaledObject once before the timed run (KEDA has been polling
//                      them), so the figures are the steady state rather than the first pass.
//   --server-binary PATH  serve from a separate `PATH serve` process on 127.0.0.1 (as deployed:
//                      KEDA is never in the scaler's process) instead of in-process.
//   --stalled-rate N   also send N req/s (from their own threads) for ScaledObjects on a Redis
//                      server of the config that accepts connections and never answers: the
//                      healthy requests' latency must not move (bulkheads).
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "core/cli/cli.h"
#include "core/net/grpc_server.h"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/gpuvpa.grpc.pb.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/external_scaler_service.h"
#include "scaler/service/push_service.h"
#include "scaler/service/scaler_core.h"
#include "scaler/sources/backends.h"

using namespace gpuvpa;          // NOLINT: a benchmark's main
using namespace gpuvpa::scaler;  // NOLINT
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  double rate = 2000;
  int seconds = 10;
  int scaled_objects = 10000;
  int threads = 8;
  bool warmup = false;
  std::string target;
  double stalled_rate = 0;
  std::string redis_address;
  std::string server_binary;
  CLI::App app("Open-loop GetMetrics latency client over loopback.", "scaler_load");
  app.add_option("--rate", rate, "requests per second")->check(gpuvpa::PositiveNumber());
  app.add_option("--seconds", seconds, "duration")->check(gpuvpa::PositiveNumber());
  app.add_option("--scaled-objects", scaled_objects, "distinct ScaledObjects")
      ->check(gpuvpa::PositiveNumber());
  app.add_option("--threads", threads, "client threads")->check(gpuvpa::PositiveNumber());
  app.add_option("--target", target, "scaler address (default: in-process server)");
  app.add_option("--stalled-rate", stalled_rate,
                 "req/s for ScaledObjects on a stalled Redis backend (in-process server only)")
      ->check(gpuvpa::NonNegativeNumber());
  app.add_option("--redis", redis_address,
                 "HOST:PORT of a real Redis: ScaledObjects read lists there (in-process server)");
  app.add_flag("--warmup", warmup,
               "ask every ScaledObject once before the timed run (as KEDA has been polling)");
  app.add_option("--server-binary", server_binary,
                 "gpuvpa-scaler to start as a separate serve process (default: in-process)")
      ->check(CLI::ExistingFile)
      ->excludes("--target");
  if (std::optional<int> done = gpuvpa::ParseCommandLine(
          app, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr))
    return *done;

  // A "Redis" that accepts connections (the kernel's backlog) and never answers.
  const int stalled_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(stalled_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(stalled_fd, 1024);
  ::getsockname(stalled_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int stalled_port = ntohs(addr.sin_port);

  // In-process server unless a target is given.
  ScalerConfig config;
  config.redis.emplace_back();
  config.redis.back().host = "127.0.0.1";
  config.redis.back().port = stalled_port;
  std::string redis_host;
  int redis_port = 0;
  if (!redis_address.empty()) {
    const size_t colon = redis_address.rfind(':');
    if (colon == std::string::npos ||
        std::from_chars(redis_address.data() + colon + 1,
                        redis_address.data() + redis_address.size(), redis_port)
                .ec != std::errc()) {
      std::cerr << "--redis " << redis_address << ": not HOST:PORT\n";
      return kExitUsage;
    }
    redis_host = redis_address.substr(0, colon);
    config.redis.emplace_back();
    config.redis.back().host = redis_host;
    config.redis.back().port = redis_port;
  }
  // The Redis server's own counters so far: LLEN calls and client reads (round trips); -1 when
  // unknown.
  struct RedisCounts {
    long llen = -1;
    long reads = -1;
  };
  auto redis_counts = [&]() {
    RedisCounts counts;
    if (redis_address.empty()) return counts;
    redisContext* c = redisConnect(redis_host.c_str(), redis_port);
    auto counter = [&](const char* section, const std::string& tag) -> long {
      auto* reply = static_cast<redisReply*>(redisCommand(c, "INFO %s", section));
      long value = -1;
      if (reply != nullptr && reply->type == REDIS_REPLY_STRING) {
        const std::string info(reply->str, reply->len);
        const size_t at = info.find(tag);
        value = at == std::string::npos ? 0 : std::atol(info.c_str() + at + tag.size());
      }
      if (reply != nullptr) freeReplyObject(reply);
      return value;
    };
    if (c != nullptr && c->err == 0) {
      counts.llen = counter("commandstats", "cmdstat_llen:calls=");
      counts.reads = counter("stats", "total_reads_processed:");
    }
    if (c != nullptr) redisFree(c);
    return counts;
  };
  config.limits.max_scaled_objects = static_cast<size_t>(scaled_objects) + 1000;
  config.limits.max_queues = config.limits.max_scaled_objects;
  config.limits.max_push_queues = config.limits.max_scaled_objects;
  std::unique_ptr<Backends> backends = std::move(Backends::Create(config)).value();
  PushDepthRegistry push{std::chrono::hours(1), config.limits.max_push_queues};
  ScalerCoreOptions core_options;
  core_options.limits = config.limits;
  ScalerCore core(core_options, *backends, push);
  ActivityHub hub(core, push, std::chrono::milliseconds(1000));
  ExternalScalerService service(core, hub);
  QueueDepthPushService push_service(push);
  RunningServer server;
  pid_t child = -1;
  if (!server_binary.empty()) {
    // The same backends in the separate process's scaler config.
    char dir_template[] = "/tmp/scaler_load.XXXXXX";
    const char* dir = ::mkdtemp(dir_template);
    if (dir == nullptr) {
      std::perror("mkdtemp");
      return kExitFailure;
    }
    const std::string config_path = std::string(dir) + "/scaler.yaml";
    {
      std::ofstream yaml(config_path);
      yaml << "redis:\n";
      for (const RedisBackendConfig& r : config.redis)
        yaml << "  - address: " << r.Address() << "\n";
      yaml << "limits:\n  max_scaled_objects: " << config.limits.max_scaled_objects
           << "\n  max_queues: " << config.limits.max_queues
           << "\n  max_push_queues: " << config.limits.max_push_queues << "\n";
    }
    int out[2];
    if (::pipe(out) != 0) return kExitFailure;
    child = ::fork();
    if (child == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::execl(server_binary.c_str(), server_binary.c_str(), "serve", "--listen", "127.0.0.1:0",
              "--metrics-listen", "", "--scaler-config", config_path.c_str(), "--log-level", "warn",
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::close(out[1]);
    // "gpuvpa-scaler: listening on port N"
    std::string line;
    for (char ch; ::read(out[0], &ch, 1) == 1 && ch != '\n';) line.push_back(ch);
    const size_t at = line.rfind(' ');
    if (line.find("listening on port") == std::string::npos || at == std::string::npos) {
      std::cerr << server_binary << " serve did not start: " << line << "\n";
      return kExitFailure;
    }
    target = "127.0.0.1:" + line.substr(at + 1);
    std::filesystem::remove_all(dir);  // read at start
  }
  if (target.empty()) {
    Result<RunningServer> started = StartServer(ServerOptions{}, {&service, &push_service});
    if (!started.ok()) {
      std::cerr << started.status().message() << "\n";
      return kExitFailure;
    }
    server = std::move(started).value();
    target = "127.0.0.1:" + std::to_string(server.port);
  }
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto pusher = v1::QueueDepthPush::NewStub(channel);
  std::vector<externalscaler::GetMetricsRequest> requests(static_cast<size_t>(scaled_objects));
  for (int i = 0; i < scaled_objects && !redis_address.empty(); ++i) {
    externalscaler::GetMetricsRequest& r = requests[static_cast<size_t>(i)];
    externalscaler::ScaledObjectRef* ref = r.mutable_scaledobjectref();
    ref->set_name("so-" + std::to_string(i));
    ref->set_namespace_("load");
    (*ref->mutable_scalermetadata())["address"] = redis_address;
    (*ref->mutable_scalermetadata())["listName"] = "q-" + std::to_string(i);
  }
  for (int i = 0; i < scaled_objects && redis_address.empty(); ++i) {
    const std::string queue = "q-" + std::to_string(i);
    grpc::ClientContext ctx;
    v1::QueueDepthReport report;
    report.set_queue_name(queue);
    report.set_depth(i % 50);
    v1::QueueDepthAck ack;
    if (!pusher->Report(&ctx, report, &ack).ok()) {
      std::cerr << "push failed\n";
      return kExitFailure;
    }
    externalscaler::GetMetricsRequest& r = requests[static_cast<size_t>(i)];
    r.set_metricname("push-" + queue);
    externalscaler::ScaledObjectRef* ref = r.mutable_scaledobjectref();
    ref->set_name("so-" + std::to_string(i));
    ref->set_namespace_("load");
    (*ref->mutable_scalermetadata())["source"] = "push";
    (*ref->mutable_scalermetadata())["queueName"] = queue;
  }

  if (warmup) {
    auto stub = externalscaler::ExternalScaler::NewStub(channel);
    for (const externalscaler::GetMetricsRequest& r : requests) {
      grpc::ClientContext ctx;
      externalscaler::GetMetricsResponse response;
      if (!stub->GetMetrics(&ctx, r, &response).ok()) {
        std::cerr << "warm-up request failed\n";
        return kExitFailure;
      }
    }
  }
  const uint64_t misses_before = server.server ? core.cache().reads() : 0;
  const RedisCounts redis_before = redis_counts();
  const auto interval = std::chrono::duration<double>(threads / rate);
  const auto start = Clock::now() + std::chrono::milliseconds(100);
  const int per_thread = static_cast<int>(rate * seconds / threads);
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto stub = externalscaler::ExternalScaler::NewStub(channel);
      std::vector<double>& mine = latencies[static_cast<size_t>(t)];
      mine.reserve(static_cast<size_t>(per_thread));
      for (int k = 0; k < per_thread; ++k) {
        const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                     interval * k + interval * (static_cast<double>(t) / threads));
        std::this_thread::sleep_until(due);
        const auto& request = requests[static_cast<size_t>((k * threads + t) % scaled_objects)];
        grpc::ClientContext ctx;
        externalscaler::GetMetricsResponse response;
        if (!stub->GetMetrics(&ctx, request, &response).ok()) ++errors;
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - due).count());
      }
    });
  }
  // Requests for the stalled backend, each on its own short-lived thread (open loop).
  std::atomic<int> stalled_sent{0}, stalled_errors{0};
  std::thread stalled_driver([&] {
    if (stalled_rate <= 0) return;
    auto stub = externalscaler::ExternalScaler::NewStub(channel);
    std::vector<std::thread> calls;
    const auto gap = std::chrono::duration<double>(1 / stalled_rate);
    for (int k = 0; Clock::now() < start + std::chrono::seconds(seconds); ++k) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(gap * k));
      calls.emplace_back([&, k] {
        externalscaler::GetMetricsRequest r;
        externalscaler::ScaledObjectRef* ref = r.mutable_scaledobjectref();
        ref->set_name("stalled-" + std::to_string(k % 20));
        ref->set_namespace_("load");
        (*ref->mutable_scalermetadata())["listName"] = "stalled-" + std::to_string(k % 20);
        (*ref->mutable_scalermetadata())["address"] = "127.0.0.1:" + std::to_string(stalled_port);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
        externalscaler::GetMetricsResponse response;
        ++stalled_sent;
        if (!stub->GetMetrics(&ctx, r, &response).ok()) ++stalled_errors;
      });
    }
    for (std::thread& c : calls) c.join();
  });
  for (std::thread& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stalled_driver.join();
  std::vector<double> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all[std::min(all.size() - 1, static_cast<size_t>(p * static_cast<double>(all.size())))];
  };
  std::printf(
      "GetMetrics over %zu requests, %d ScaledObjects, %.0f req/s offered, %.0f req/s achieved, %d "
      "errors\n",
      all.size(), scaled_objects, rate, static_cast<double>(all.size()) / elapsed, errors.load());
  std::printf("latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", pct(0.50),
              pct(0.90), pct(0.99), pct(0.999), all.back());
  const double answered = static_cast<double>(all.size());
  if (const RedisCounts after = redis_counts(); redis_before.llen >= 0 && after.llen >= 0)
    std::printf(
        "redis: %ld LLEN (%.3f per request) in %ld client reads, i.e. round trips (%.3f per "
        "request)\n",
        after.llen - redis_before.llen,
        static_cast<double>(after.llen - redis_before.llen) / answered,
        after.reads - redis_before.reads,
        static_cast<double>(after.reads - redis_before.reads) / answered);
  if (server.server && !redis_address.empty())
    std::printf(
        "scaler: %llu asks waited on a read (cache misses), %llu refresh round trips (all "
        "along) read %llu depths\n",
        static_cast<unsigned long long>(core.cache().reads() - misses_before),
        static_cast<unsigned long long>(core.refresh_round_trips()),
        static_cast<unsigned long long>(core.refreshed_queues()));
  if (stalled_rate > 0)
    std::printf("stalled backend: %d requests, %d answered with an error (UNAVAILABLE expected)\n",
                stalled_sent.load(), stalled_errors.load());
  if (server.server) server.server->Shutdown();
  if (child > 0) {
    ::kill(child, SIGTERM);
    ::waitpid(child, nullptr, 0);
  }
  ::close(stalled_fd);
  return errors.load() == 0 ? 0 : kExitFailure;
}
