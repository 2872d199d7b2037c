// In-process scaler for tests.
#include "test/support/scaler_harness.h"

#include <gtest/gtest.h>

namespace gpuvpa::testing {

scaler::ScalerConfig RedisOnlyConfig(std::initializer_list<int> ports) {
  scaler::ScalerConfig c;
  for (int port : ports) {
    scaler::RedisBackendConfig r;
    r.host = "127.0.0.1";
    r.port = port;
    c.redis.push_back(r);
  }
  return c;
}

ScalerHarness::ScalerHarness(ScalerHarnessOptions o) {
  Result<std::unique_ptr<scaler::Backends>> backends = scaler::Backends::Create(o.config);
  EXPECT_TRUE(backends.ok()) << backends.status().message();
  if (!backends.ok()) return;
  backends_ = std::move(backends).value();
  push_ = std::make_unique<scaler::PushDepthRegistry>(std::chrono::milliseconds(60000),
                                                      o.config.limits.max_push_queues);
  scaler::ScalerCoreOptions core;
  core.cache_ttl = o.cache_ttl;
  core.source_timeout = o.source_timeout;
  core.refresh_window = o.refresh_window;
  core.refresh_phases = o.refresh_phases;
  core.limits = o.config.limits;
  core_ = std::make_unique<scaler::ScalerCore>(core, *backends_, *push_, o.metrics);
  hub_ = std::make_unique<scaler::ActivityHub>(*core_, *push_, std::chrono::milliseconds(50));
  scaler_ = std::make_unique<scaler::ExternalScalerService>(*core_, *hub_, o.observer, o.metrics);
  push_service_ = std::make_unique<scaler::QueueDepthPushService>(*push_);
  Result<RunningServer> s = StartServer(o.server, {scaler_.get(), push_service_.get()});
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) running_ = std::move(s).value();
}

void ScalerHarness::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (hub_) hub_->Shutdown();
  if (running_.server)
    running_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
}

ScalerHarness::~ScalerHarness() { Shutdown(); }

}  // namespace gpuvpa::testing
