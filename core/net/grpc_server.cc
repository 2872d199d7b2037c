// Server construction with TLS / mTLS credentials from files.
#include "core/net/grpc_server.h"

#include <grpcpp/ext/health_check_service_server_builder_option.h>

#include <chrono>
#include <thread>

#include "core/base/atomic_file.h"
#include "core/net/address_map.h"

namespace gpuvpa {

grpc::Status ToGrpcStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, status.message()};
    case StatusCode::kNotFound:
      return {grpc::StatusCode::NOT_FOUND, status.message()};
    case StatusCode::kDataLoss:
      return {grpc::StatusCode::DATA_LOSS, status.message()};
    case StatusCode::kFailedPrecondition:
      return {grpc::StatusCode::FAILED_PRECONDITION, status.message()};
    case StatusCode::kUnavailable:
      return {grpc::StatusCode::UNAVAILABLE, status.message()};
    case StatusCode::kUnauthenticated:
      return {grpc::StatusCode::UNAUTHENTICATED, status.message()};
    case StatusCode::kPermissionDenied:
      return {grpc::StatusCode::PERMISSION_DENIED, status.message()};
    case StatusCode::kAborted:
      return {grpc::StatusCode::ABORTED, status.message()};
    case StatusCode::kResourceExhausted:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, status.message()};
    case StatusCode::kOutOfRange:
      return {grpc::StatusCode::OUT_OF_RANGE, status.message()};
    case StatusCode::kAlreadyExists:
      return {grpc::StatusCode::ALREADY_EXISTS, status.message()};
    case StatusCode::kInternal:
      break;
  }
  return {grpc::StatusCode::INTERNAL, status.message()};
}

grpc::Status HealthOnlyService::Check(grpc::ServerContext*,
                                      const grpc::health::v1::HealthCheckRequest* request,
                                      grpc::health::v1::HealthCheckResponse* response) {
  if (!request->service().empty())
    return {grpc::StatusCode::NOT_FOUND, "unknown service " + request->service()};
  response->set_status(serving_ ? grpc::health::v1::HealthCheckResponse::SERVING
                                : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

grpc::Status HealthOnlyService::Watch(
    grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
    grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) {
  grpc::health::v1::HealthCheckResponse response;
  if (!request->service().empty()) {
    response.set_status(grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN);
    writer->Write(response);
    return grpc::Status::OK;
  }
  bool sent_serving = false, first = true;
  // Ends when the client leaves, and once NOT_SERVING is sent (the server is shutting down).
  while (!context->IsCancelled()) {
    const bool serving = serving_;
    if (first || serving != sent_serving) {
      response.set_status(serving ? grpc::health::v1::HealthCheckResponse::SERVING
                                  : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
      if (!writer->Write(response) || !serving) break;
      sent_serving = serving;
      first = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return grpc::Status::OK;
}

Result<RunningServer> StartServer(const ServerOptions& options,
                                  const std::vector<grpc::Service*>& services) {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty())
      return InvalidArgumentError("TLS needs both a certificate file and a key file");
    Result<std::string> cert = ReadWholeFile(options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    Result<std::string> key = ReadWholeFile(options.tls_key_file);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!options.client_ca_file.empty()) {
      Result<std::string> ca = ReadWholeFile(options.client_ca_file);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    credentials = grpc::SslServerCredentials(ssl);
  } else if (!options.client_ca_file.empty()) {
    return InvalidArgumentError("a client CA (mTLS) needs a server certificate and key");
  }
  if (services.empty())
    return InvalidArgumentError(
        "a gRPC server on " + options.listen_address +
        " needs at least one service (for health alone: HealthOnlyService)");
  // grpc.health.v1.Health: "" and every registered service SERVING until shutdown.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  if (!options.default_health_service)
    builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  int port = 0;
  builder.AddListeningPort(SocketAddress(options.listen_address), credentials, &port);
  grpc::ResourceQuota quota("gpuvpa-grpc");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  // A port another process (or this one) already serves is an error, not a second listener
  // that gets half the connections (gRPC sets SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* s : services) builder.RegisterService(s);
  RunningServer running;
  running.server = builder.BuildAndStart();
  if (!running.server || port == 0)
    return UnavailableError("gRPC could not start a server on " + options.listen_address +
                            ": the address is in use or not one to listen on, or the TLS "
                            "material is invalid (gRPC's own log line above says which)");
  running.port = port;
  return running;
}

}  // namespace gpuvpa
