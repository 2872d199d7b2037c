// Builds and starts a gpuvpa gRPC server (the scaler, the recommender): plaintext, TLS
// (certificate and key files) or mTLS (plus a client CA: clients without a certificate it signed
// are refused), with the standard gRPC health service (grpc.health.v1.Health) for probes.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "proto/health.grpc.pb.h"

namespace gpuvpa {

struct ServerOptions {
  std::string listen_address = "127.0.0.1:0";
  std::string tls_cert_file;  // PEM; with tls_key_file enables TLS
  std::string tls_key_file;
  std::string client_ca_file;  // PEM; requires and verifies client certificates (mTLS)
  int max_threads = 64;        // bounded: the resource quota caps handler threads
  int max_concurrent_streams = 10000;
  // gRPC's own grpc.health.v1.Health for the registered services. Off for a server whose only
  // service is a HealthOnlyService (gRPC cannot start a server with no service of its own).
  bool default_health_service = true;
};

// grpc.health.v1.Health alone, for a plaintext port that Kubernetes' gRPC probes can reach when
// the main port requires mTLS: SERVING for the server ("") until SetNotServing (shutdown),
// NOT_FOUND for any named service. Watch sends the status, then each change, until the call
// ends or the server shuts down.
class HealthOnlyService final : public grpc::health::v1::Health::Service {
 public:
  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;
  void SetNotServing() { serving_ = false; }

 private:
  std::atomic<bool> serving_{true};
};

struct RunningServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// The gRPC code of a gpuvpa Status (same meaning, same message).
grpc::Status ToGrpcStatus(const Status& status);

// `services` must not be empty (a health-only server registers a HealthOnlyService).
Result<RunningServer> StartServer(const ServerOptions& options,
                                  const std::vector<grpc::Service*>& services);

}  // namespace gpuvpa
