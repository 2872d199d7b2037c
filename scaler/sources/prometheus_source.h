// One Prometheus endpoint from the scaler's config (its own TLS settings and credentials, one
// keep-alive HTTP client, a bulkhead), and queue depth as an instant query through it. As KEDA's
// Prometheus scaler: an empty result is 0 when ignoreNullValues (default), else an error; a
// result of more than one series is an error (the query must aggregate).
#pragma once

#include <memory>

#include "core/net/http_client.h"
#include "scaler/config/scaler_config.h"
#include "scaler/metadata/scaled_object_config.h"
#include "scaler/sources/queue_depth_source.h"

namespace gpuvpa::scaler {

class PrometheusBackend {
 public:
  static Result<std::unique_ptr<PrometheusBackend>> Create(const PrometheusBackendConfig& config,
                                                           size_t max_pending);
  HttpClient& client() { return *client_; }
  Bulkhead& bulkhead() { return *bulkhead_; }
  const std::string& address() const { return address_; }

 private:
  PrometheusBackend(std::string address, std::shared_ptr<HttpClient> client, int workers,
                    size_t max_pending);
  const std::string address_;
  std::shared_ptr<HttpClient> client_;
  std::unique_ptr<Bulkhead> bulkhead_;
};

// The depth in an instant-query response body (`where` names the source in errors): exactly one
// sample, finite and not negative; a failed query or an unexpected shape is an error.
Result<double> ParsePrometheusDepth(std::string_view body, int http_status, bool ignore_null_values,
                                    const std::string& where);

class PrometheusQueueSource final : public QueueDepthSource {
 public:
  PrometheusQueueSource(PrometheusBackend& backend, PrometheusSourceConfig config)
      : backend_(backend), config_(std::move(config)) {}
  Result<double> ReadDepth(int worker, Deadline deadline) override;
  std::string Describe() const override {
    return "prometheus " + backend_.address() + " " + config_.query;
  }
  Bulkhead* bulkhead() override { return &backend_.bulkhead(); }

 private:
  PrometheusBackend& backend_;
  const PrometheusSourceConfig config_;
};

}  // namespace gpuvpa::scaler
