// Client channels from files.
#include "core/net/grpc_client.h"

#include "core/base/atomic_file.h"
#include "core/net/address_map.h"

namespace gpuvpa {
namespace {

// A channel to the options' address, or to where GPUVPA_TEST_ADDRESS_MAP sends it with the TLS
// name check still made against the written host.
std::shared_ptr<grpc::Channel> Channel(const ClientChannelOptions& options,
                                       const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  grpc::ChannelArguments args;
  if (options.max_receive_bytes > 0) args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  std::optional<std::string> mapped = MappedAddress(options.address);
  if (!mapped) return grpc::CreateCustomChannel(options.address, creds, args);
  args.SetSslTargetNameOverride(SplitHostPort(options.address).host);
  return grpc::CreateCustomChannel(*mapped, creds, args);
}

}  // namespace

Result<std::shared_ptr<grpc::Channel>> MakeClientChannel(const ClientChannelOptions& options) {
  if (options.address.empty()) return InvalidArgumentError("the gRPC address is empty");
  if (options.client_cert_file.empty() != options.client_key_file.empty())
    return InvalidArgumentError("a client certificate needs its key and a key its certificate (" +
                                options.address + ")");
  if (options.ca_file.empty()) {
    if (!options.client_cert_file.empty())
      return InvalidArgumentError("a client certificate without a CA file (" + options.address +
                                  "): mTLS needs the server's CA");
    return Channel(options, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions tls;
  Result<std::string> ca = ReadWholeFile(options.ca_file);
  if (!ca.ok()) return ca.status();
  tls.pem_root_certs = *std::move(ca);
  if (!options.client_cert_file.empty()) {
    Result<std::string> cert = ReadWholeFile(options.client_cert_file);
    if (!cert.ok()) return cert.status();
    Result<std::string> key = ReadWholeFile(options.client_key_file);
    if (!key.ok()) return key.status();
    tls.pem_cert_chain = *std::move(cert);
    tls.pem_private_key = *std::move(key);
  }
  return Channel(options, grpc::SslCredentials(tls));
}

}  // namespace gpuvpa
