// gpuvpa-scaler's services in-process on 127.0.0.1 (ephemeral port), built as `serve` builds
// them: the scaler config's backends, the core, the activity hub (with housekeeping), the
// ExternalScaler and QueueDepthPush services and the gRPC server. Clients reach it over a real
// socket.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/net/grpc_server.h"
#include "scaler/config/scaler_config.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/external_scaler_service.h"
#include "scaler/service/push_service.h"
#include "scaler/service/scaler_core.h"
#include "scaler/sources/backends.h"

namespace gpuvpa::testing {

// A scaler config listing these Redis servers on 127.0.0.1 (no credentials).
scaler::ScalerConfig RedisOnlyConfig(std::initializer_list<int> ports);

struct ScalerHarnessOptions {
  ServerOptions server;
  std::chrono::milliseconds cache_ttl{200};
  std::chrono::milliseconds source_timeout{500};
  // As serve runs it; 0 where a test counts the reads that asks cause.
  std::chrono::milliseconds refresh_window = scaler::ScalerCoreOptions{}.refresh_window;
  size_t refresh_phases = scaler::ScalerCoreOptions{}.refresh_phases;
  scaler::ScalerConfig config;
  scaler::ScalerMetrics* metrics = nullptr;
  scaler::DepthObserver* observer = nullptr;
};

class ScalerHarness {
 public:
  explicit ScalerHarness(ScalerHarnessOptions options);
  ~ScalerHarness();  // ends streams with OK, then shuts the server down
  ScalerHarness(const ScalerHarness&) = delete;
  ScalerHarness& operator=(const ScalerHarness&) = delete;

  std::string target() const { return "127.0.0.1:" + std::to_string(running_.port); }
  scaler::ScalerCore& core() { return *core_; }
  scaler::ActivityHub& hub() { return *hub_; }
  scaler::PushDepthRegistry& push() { return *push_; }
  const scaler::Backends& backends() const { return *backends_; }
  // Ends open streams (OK) and stops the server, as serve does on SIGTERM.
  void Shutdown();

 private:
  std::unique_ptr<scaler::Backends> backends_;
  std::unique_ptr<scaler::PushDepthRegistry> push_;
  std::unique_ptr<scaler::ScalerCore> core_;
  std::unique_ptr<scaler::ActivityHub> hub_;
  std::unique_ptr<scaler::ExternalScalerService> scaler_;
  std::unique_ptr<scaler::QueueDepthPushService> push_service_;
  RunningServer running_;
  bool shut_down_ = false;
};

}  // namespace gpuvpa::testing
