// gpuvpa's QueueDepthPush gRPC service: producers report depth; the registry does the rest.
#pragma once

#include <grpcpp/grpcpp.h>

#include "proto/gpuvpa.grpc.pb.h"
#include "scaler/sources/push_source.h"

namespace gpuvpa::scaler {

class QueueDepthPushService final : public v1::QueueDepthPush::CallbackService {
 public:
  explicit QueueDepthPushService(PushDepthRegistry& registry) : registry_(registry) {}
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const v1::QueueDepthReport* request,
                                   v1::QueueDepthAck* response) override;

 private:
  PushDepthRegistry& registry_;
};

}  // namespace gpuvpa::scaler
