// The HTTP endpoint fields every gpuvpa config spells the same way (a Prometheus of the
// scaler's allow-list, the recommender's Prometheus): address, TLS and credential files.
#pragma once

#include <string_view>
#include <vector>

#include "core/base/yaml_fields.h"
#include "core/net/http_client.h"

namespace gpuvpa {

// server_address, ca_file, client_cert_file, client_key_file, insecure_skip_verify,
// bearer_token_file, basic_auth_user, basic_auth_password_file.
const std::vector<std::string_view>& HttpEndpointKeys();

// Reads those keys of `map` into `http` (server_address required, trailing '/' dropped), then
// creates a client once so a wrong URL or an unreadable file is an error now, naming the field.
Status ReadHttpEndpoint(const YAML::Node& map, const YamlField& f, HttpClientOptions& http);

// `known` plus HttpEndpointKeys(), for CheckKeys.
std::vector<std::string_view> WithHttpEndpointKeys(std::vector<std::string_view> known);

}  // namespace gpuvpa
