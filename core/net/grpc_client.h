// Client channels to gpuvpa's own gRPC servers: plaintext, TLS (a CA file) or mTLS (plus a client
// certificate and key), all from files.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "core/base/status.h"

namespace gpuvpa {

struct ClientChannelOptions {
  std::string address;           // host:port
  std::string ca_file;           // PEM; empty: plaintext
  std::string client_cert_file;  // PEM; with client_key_file: mTLS
  std::string client_key_file;
  int max_receive_bytes = 0;  // the largest answer taken; 0: gRPC's default (4 MiB)
};

// INVALID_ARGUMENT naming the option for an empty address or a lone certificate or key; the
// file's own error for one that cannot be read.
Result<std::shared_ptr<grpc::Channel>> MakeClientChannel(const ClientChannelOptions& options);

}  // namespace gpuvpa
