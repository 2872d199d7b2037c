// Push service handler.
#include "scaler/service/push_service.h"

#include "scaler/service/external_scaler_service.h"

namespace gpuvpa::scaler {

grpc::ServerUnaryReactor* QueueDepthPushService::Report(grpc::CallbackServerContext* context,
                                                        const v1::QueueDepthReport* request,
                                                        v1::QueueDepthAck*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(registry_.Report(request->queue_name(), request->depth())));
  return reactor;
}

}  // namespace gpuvpa::scaler
