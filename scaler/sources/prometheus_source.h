// Prometheus queue depth: an instant query through the shared HTTP client. As KEDA's
// Prometheus scaler: an empty result is 0 when ignoreNullValues (default), else an error; a
// result of more than one series is an error (the query must aggregate).
#pragma once

#include <chrono>

#include "scaler/metadata/scaled_object_config.h"
#include "scaler/sources/queue_depth_source.h"

namespace gpuvpa::scaler {

class PrometheusQueueSource final : public QueueDepthSource {
 public:
  PrometheusQueueSource(PrometheusSourceConfig config, std::chrono::milliseconds timeout)
      : config_(std::move(config)), timeout_(timeout) {}
  Result<double> ReadDepth() override;
  std::string Describe() const override {
    return "prometheus " + config_.server_address + " " + config_.query;
  }

 private:
  const PrometheusSourceConfig config_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace gpuvpa::scaler
