// HTTP endpoint config fields.
#include "core/net/http_client_config.h"

namespace gpuvpa {

const std::vector<std::string_view>& HttpEndpointKeys() {
  static const std::vector<std::string_view> kKeys = {
      "server_address",       "ca_file",           "client_cert_file", "client_key_file",
      "insecure_skip_verify", "bearer_token_file", "basic_auth_user",  "basic_auth_password_file"};
  return kKeys;
}

std::vector<std::string_view> WithHttpEndpointKeys(std::vector<std::string_view> known) {
  known.insert(known.end(), HttpEndpointKeys().begin(), HttpEndpointKeys().end());
  return known;
}

Status ReadHttpEndpoint(const YAML::Node& n, const YamlField& e, HttpClientOptions& http) {
  std::string address;
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "server_address", address, true));
  while (!address.empty() && address.back() == '/') address.pop_back();
  http.base_url = address;
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "ca_file", http.ca_file));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "client_cert_file", http.client_cert_file));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "client_key_file", http.client_key_file));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "bearer_token_file", http.bearer_token_file));
  GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "basic_auth_user", http.basic_auth_user));
  GPUVPA_RETURN_IF_ERROR(
      ReadYamlString(n, e, "basic_auth_password_file", http.basic_auth_password_file));
  bool skip = !http.verify_peer;
  GPUVPA_RETURN_IF_ERROR(ReadYamlBool(n, e, "insecure_skip_verify", skip));
  http.verify_peer = !skip;
  // The client checks the URL and loads every file now, so a wrong path fails at start.
  if (Result<std::shared_ptr<HttpClient>> probe = HttpClient::Create(http); !probe.ok())
    return e.Error(probe.status().message());
  return OkStatus();
}

}  // namespace gpuvpa
