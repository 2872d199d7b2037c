// KEDA's ExternalScaler gRPC service (callback API): thin handlers that translate the wire
// messages to ScalerCore calls and map errors to status codes (bad metadata INVALID_ARGUMENT,
// source down UNAVAILABLE). Exceptions never cross a handler.
#pragma once

#include <grpcpp/grpcpp.h>

#include "core/net/grpc_server.h"
#include "proto/externalscaler.grpc.pb.h"
#include "scaler/service/activity_hub.h"
#include "scaler/service/scaler_core.h"
#include "scaler/service/scaler_metrics.h"

namespace gpuvpa::scaler {

// Observes every depth read for a ScaledObject (metering, metrics).
class DepthObserver {
 public:
  virtual ~DepthObserver() = default;
  virtual void OnDepth(const ScaledObjectConfig& config, double depth) = 0;
};

class ExternalScalerService final : public externalscaler::ExternalScaler::CallbackService {
 public:
  // `observer` and `metrics` may be null.
  ExternalScalerService(ScalerCore& core, ActivityHub& hub, DepthObserver* observer = nullptr,
                        ScalerMetrics* metrics = nullptr)
      : core_(core), hub_(hub), observer_(observer), metrics_(metrics) {}

  grpc::ServerUnaryReactor* IsActive(grpc::CallbackServerContext* context,
                                     const externalscaler::ScaledObjectRef* request,
                                     externalscaler::IsActiveResponse* response) override;
  grpc::ServerWriteReactor<externalscaler::IsActiveResponse>* StreamIsActive(
      grpc::CallbackServerContext* context,
      const externalscaler::ScaledObjectRef* request) override;
  grpc::ServerUnaryReactor* GetMetricSpec(grpc::CallbackServerContext* context,
                                          const externalscaler::ScaledObjectRef* request,
                                          externalscaler::GetMetricSpecResponse* response) override;
  grpc::ServerUnaryReactor* GetMetrics(grpc::CallbackServerContext* context,
                                       const externalscaler::GetMetricsRequest* request,
                                       externalscaler::GetMetricsResponse* response) override;
  grpc::ServerWriteReactor<externalscaler::GetMetricSpecResponse>* StreamMetricSpec(
      grpc::CallbackServerContext* context,
      const externalscaler::ScaledObjectRef* request) override;

 private:
  Result<ResolvedScaledObject> Resolve(const externalscaler::ScaledObjectRef& ref);
  void Depth(grpc::CallbackServerContext* context, const ResolvedScaledObject& so,
             std::function<void(const Result<double>&)> done);
  grpc::Status Done(const char* method, const Status& status);

  ScalerCore& core_;
  ActivityHub& hub_;
  DepthObserver* observer_;
  ScalerMetrics* metrics_;
};

}  // namespace gpuvpa::scaler
