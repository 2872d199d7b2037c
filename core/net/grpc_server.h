// Builds and starts a gpuvpa gRPC server (the scaler, the recommender): plaintext, TLS
// (certificate and key files) or mTLS (plus a client CA: clients without a certificate it signed
// are refused), with the standard gRPC health service (grpc.health.v1.Health) for probes.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa {

struct ServerOptions {
  std::string listen_address = "127.0.0.1:0";
  std::string tls_cert_file;  // PEM; with tls_key_file enables TLS
  std::string tls_key_file;
  std::string client_ca_file;  // PEM; requires and verifies client certificates (mTLS)
  int max_threads = 64;        // bounded: the resource quota caps handler threads
  int max_concurrent_streams = 10000;
};

struct RunningServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// The gRPC code of a gpuvpa Status (same meaning, same message).
grpc::Status ToGrpcStatus(const Status& status);

Result<RunningServer> StartServer(const ServerOptions& options,
                                  const std::vector<grpc::Service*>& services);

}  // namespace gpuvpa
