// ExternalScaler handlers and stream reactors.
#include "scaler/service/external_scaler_service.h"

#include <cmath>
#include <functional>
#include <mutex>

namespace gpuvpa::scaler {
namespace {

// KEDA's proto marks the integer fields deprecated, yet older KEDA releases read only them:
// both forms are always filled.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void SetIntegerTarget(externalscaler::MetricSpec* spec, double target) {
  spec->set_targetsize(std::max<int64_t>(1, std::llround(target)));
}
void SetIntegerValue(externalscaler::MetricValue* value, double depth) {
  value->set_metricvalue(std::llround(depth));
}
#pragma GCC diagnostic pop

void FillSpec(const ScaledObjectConfig& c, externalscaler::GetMetricSpecResponse* response) {
  externalscaler::MetricSpec* spec = response->add_metricspecs();
  spec->set_metricname(c.metric_name);
  SetIntegerTarget(spec, c.target);
  spec->set_targetsizefloat(c.target);
}

// A server stream registered with the hub: it ends with CANCELLED when the client leaves and
// with OK when the scaler shuts down (after the write in progress, if any), and leaves the hub
// before it is deleted.
template <typename Response>
class HubStream : public grpc::ServerWriteReactor<Response>, public ActivityWatcher {
 public:
  explicit HubStream(ActivityHub& hub) : hub_(hub) {}

  // A clean end: KEDA resets its reconnect backoff only after one.
  void OnShutdown() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (writing_)
      shutting_down_ = true;
    else
      FinishLocked(grpc::Status::OK);
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok)
      FinishLocked(grpc::Status::CANCELLED);
    else if (shutting_down_)
      FinishLocked(grpc::Status::OK);
    else
      AfterWriteLocked();
  }
  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    hub_.Remove(id_);  // after this the hub never calls this stream again
    delete this;
  }

 protected:
  // Called from the derived constructor, once it is ready for OnActivity.
  void Register(const ResolvedScaledObject& so) { id_ = hub_.Add(so, this); }
  virtual void AfterWriteLocked() {}
  void WriteLocked() {
    writing_ = true;
    this->StartWrite(&response_);
  }
  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    this->Finish(status);
  }

  std::mutex mu_;
  Response response_;
  bool writing_ = false;
  bool finished_ = false;

 private:
  ActivityHub& hub_;
  uint64_t id_ = 0;
  bool shutting_down_ = false;
};

// One StreamIsActive stream: writes `true` whenever its ScaledObject turns active.
class ActiveStreamReactor final : public HubStream<externalscaler::IsActiveResponse> {
 public:
  ActiveStreamReactor(ActivityHub& hub, const ResolvedScaledObject& so) : HubStream(hub) {
    response_.set_result(true);
    Register(so);
  }

  void OnActivity(bool active) override {
    std::lock_guard<std::mutex> lock(mu_);
    const bool rising = active && !was_active_;
    was_active_ = active;
    if (!rising || finished_) return;
    if (writing_)
      pending_ = true;
    else
      WriteLocked();
  }

 private:
  void AfterWriteLocked() override {
    if (pending_ && !finished_) {
      pending_ = false;
      WriteLocked();
    }
  }

  bool was_active_ = false;
  bool pending_ = false;
};

// StreamMetricSpec: the spec once, then the stream stays open until the client leaves or the
// scaler shuts down.
class MetricSpecStreamReactor final : public HubStream<externalscaler::GetMetricSpecResponse> {
 public:
  MetricSpecStreamReactor(ActivityHub& hub, const ScaledObjectConfig& config) : HubStream(hub) {
    FillSpec(config, &response_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      WriteLocked();
    }
    Register(ResolvedScaledObject{});
  }
  void OnActivity(bool) override {}
};

template <typename Response>
grpc::ServerWriteReactor<Response>* FailedStream(const grpc::Status& status) {
  class Failed final : public grpc::ServerWriteReactor<Response> {
   public:
    explicit Failed(const grpc::Status& s) { this->Finish(s); }
    void OnDone() override { delete this; }
  };
  return new Failed(status);
}

}  // namespace

Result<ResolvedScaledObject> ExternalScalerService::Resolve(
    const externalscaler::ScaledObjectRef& ref) {
  const TriggerMetadata metadata(ref.scalermetadata().begin(), ref.scalermetadata().end());
  return core_.Resolve(ref.name(), ref.namespace_(), metadata);
}

grpc::Status ExternalScalerService::Done(const char* method, const Status& status) {
  grpc::Status g = ToGrpcStatus(status);
  if (metrics_ != nullptr) metrics_->Request(method, StatusCodeName(status.code()));
  return g;
}

void ExternalScalerService::Depth(grpc::CallbackServerContext* context,
                                  const ResolvedScaledObject& so,
                                  std::function<void(const Result<double>&)> done) {
  // The RPC's own deadline (KEDA's HPA path: 3 s), capped by the source timeout in the core.
  const auto left = context->deadline() - std::chrono::system_clock::now();
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::min<std::chrono::system_clock::duration>(left, std::chrono::hours(1)));
  core_.ReadDepthAsync(
      so, deadline,
      [this, config = so.config, done = std::move(done)](const Result<double>& depth) {
        if (depth.ok() && observer_ != nullptr) observer_->OnDepth(*config, *depth);
        done(depth);
      });
}

grpc::ServerUnaryReactor* ExternalScalerService::IsActive(
    grpc::CallbackServerContext* context, const externalscaler::ScaledObjectRef* request,
    externalscaler::IsActiveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Result<ResolvedScaledObject> so = Resolve(*request);
  if (!so.ok()) {
    reactor->Finish(Done("IsActive", so.status()));
    return reactor;
  }
  // Finished from the backend's worker (or at once when cached): no gRPC thread waits.
  Depth(context, *so, [this, reactor, response, config = so->config](const Result<double>& depth) {
    if (depth.ok()) response->set_result(config->IsActive(*depth));
    reactor->Finish(Done("IsActive", depth.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ExternalScalerService::GetMetricSpec(
    grpc::CallbackServerContext* context, const externalscaler::ScaledObjectRef* request,
    externalscaler::GetMetricSpecResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Result<ResolvedScaledObject> so = Resolve(*request);  // parsed once, then a map lookup
  if (so.ok()) FillSpec(*so->config, response);
  reactor->Finish(Done("GetMetricSpec", so.status()));
  return reactor;
}

grpc::ServerUnaryReactor* ExternalScalerService::GetMetrics(
    grpc::CallbackServerContext* context, const externalscaler::GetMetricsRequest* request,
    externalscaler::GetMetricsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Result<ResolvedScaledObject> so = Resolve(request->scaledobjectref());
  if (!so.ok()) {
    reactor->Finish(Done("GetMetrics", so.status()));
    return reactor;
  }
  Depth(context, *so,
        [this, reactor, request, response, config = so->config](const Result<double>& depth) {
          if (depth.ok()) {
            externalscaler::MetricValue* value =
                response->add_metricvalues();  // exactly one: the HPA sums them
            value->set_metricname(request->metricname().empty() ? config->metric_name
                                                                : request->metricname());
            SetIntegerValue(value, *depth);
            value->set_metricvaluefloat(*depth);
          }
          reactor->Finish(Done("GetMetrics", depth.status()));
        });
  return reactor;
}

grpc::ServerWriteReactor<externalscaler::IsActiveResponse>* ExternalScalerService::StreamIsActive(
    grpc::CallbackServerContext*, const externalscaler::ScaledObjectRef* request) {
  Result<ResolvedScaledObject> so = Resolve(*request);
  const grpc::Status opened = Done("StreamIsActive", so.status());
  if (!so.ok()) return FailedStream<externalscaler::IsActiveResponse>(opened);
  return new ActiveStreamReactor(hub_, *so);
}

grpc::ServerWriteReactor<externalscaler::GetMetricSpecResponse>*
ExternalScalerService::StreamMetricSpec(grpc::CallbackServerContext*,
                                        const externalscaler::ScaledObjectRef* request) {
  Result<ResolvedScaledObject> so = Resolve(*request);
  const grpc::Status opened = Done("StreamMetricSpec", so.status());
  if (!so.ok()) return FailedStream<externalscaler::GetMetricSpecResponse>(opened);
  return new MetricSpecStreamReactor(hub_, *so->config);
}

}  // namespace gpuvpa::scaler
