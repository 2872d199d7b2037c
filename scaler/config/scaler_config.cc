// Scaler configuration loading.
#include "scaler/config/scaler_config.h"

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/yaml_fields.h"
#include "core/net/http_client_config.h"

namespace gpuvpa::scaler {
namespace {

Result<std::string> ReadSecretFile(const YamlField& f, const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return f.Error("file \"" + path + "\" cannot be read");
  std::string secret = std::move(text).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return f.Error("file \"" + path + "\" is empty");
  return secret;
}

Status ParseRedis(const YAML::Node& list, const YamlField& f, ScalerConfig& c) {
  if (!list.IsSequence()) return f.Error("expected a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& n = list[i];
    const YamlField e = f[i];
    GPUVPA_RETURN_IF_ERROR(
        e.CheckKeys(n, {"address", "username", "password_file", "max_connections", "tls"}));
    if (n["tls"])
      return e["tls"].Error(
          "TLS to Redis is not supported by this build (Debian's hiredis 0.14 has no TLS)");
    RedisBackendConfig r;
    std::string address;
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "address", address, true));
    const size_t colon = address.rfind(':');
    long long port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !e["address"].Integer(YAML::Node(address.substr(colon + 1)), 1, 65535).ok())
      return e["address"].Error("\"" + address + "\" is not host:port");
    port = *e["address"].Integer(YAML::Node(address.substr(colon + 1)), 1, 65535);
    r.host = address.substr(0, colon);
    r.port = static_cast<int>(port);
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "username", r.username));
    std::string password_file;
    GPUVPA_RETURN_IF_ERROR(ReadYamlString(n, e, "password_file", password_file));
    if (!password_file.empty()) {
      Result<std::string> pw = ReadSecretFile(e["password_file"], password_file);
      if (!pw.ok()) return pw.status();
      r.password = std::move(pw).value();
    }
    GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, e, "max_connections", 1, 64, r.max_connections));
    for (const RedisBackendConfig& other : c.redis)
      if (other.Address() == r.Address())
        return e["address"].Error("\"" + address + "\" is listed twice");
    c.redis.push_back(std::move(r));
  }
  return OkStatus();
}

Status ParsePrometheus(const YAML::Node& list, const YamlField& f, ScalerConfig& c) {
  if (!list.IsSequence()) return f.Error("expected a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& n = list[i];
    const YamlField e = f[i];
    GPUVPA_RETURN_IF_ERROR(e.CheckKeys(n, WithHttpEndpointKeys({"max_concurrent_reads"})));
    PrometheusBackendConfig p;
    GPUVPA_RETURN_IF_ERROR(ReadHttpEndpoint(n, e, p.http));
    p.server_address = p.http.base_url;
    GPUVPA_RETURN_IF_ERROR(
        ReadYamlInt(n, e, "max_concurrent_reads", 1, 64, p.max_concurrent_reads));
    for (const PrometheusBackendConfig& other : c.prometheus)
      if (other.server_address == p.server_address)
        return e["server_address"].Error("\"" + p.server_address + "\" is listed twice");
    c.prometheus.push_back(std::move(p));
  }
  return OkStatus();
}

Status ParseLimits(const YAML::Node& n, const YamlField& f, ScalerLimits& l) {
  GPUVPA_RETURN_IF_ERROR(f.CheckKeys(n, {"max_scaled_objects", "max_queues", "max_push_queues",
                                         "idle_seconds", "max_pending_reads"}));
  GPUVPA_RETURN_IF_ERROR(
      ReadYamlInt(n, f, "max_scaled_objects", 1, 10'000'000, l.max_scaled_objects));
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "max_queues", 1, 10'000'000, l.max_queues));
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "max_push_queues", 1, 10'000'000, l.max_push_queues));
  long long idle = l.idle.count();
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "idle_seconds", 1, 30 * 86400, idle));
  l.idle = std::chrono::seconds(idle);
  GPUVPA_RETURN_IF_ERROR(ReadYamlInt(n, f, "max_pending_reads", 1, 1'000'000, l.max_pending_reads));
  return OkStatus();
}

}  // namespace

std::string NormalizeServerAddress(std::string_view address) {
  while (!address.empty() && address.back() == '/') address.remove_suffix(1);
  return std::string(address);
}

Result<ScalerConfig> ParseScalerConfig(std::string_view yaml_text, std::string_view name) {
  const YamlField root{"scaler config", std::string(name)};
  ScalerConfig c;
  try {
    const YAML::Node doc = YAML::Load(std::string(yaml_text));
    if (doc.IsNull()) return c;
    GPUVPA_RETURN_IF_ERROR(root.CheckKeys(doc, {"redis", "prometheus", "cost_centers", "limits"}));
    const YamlField top{"scaler config " + std::string(name) + ":", ""};
    if (doc["redis"]) GPUVPA_RETURN_IF_ERROR(ParseRedis(doc["redis"], top["redis"], c));
    if (doc["prometheus"])
      GPUVPA_RETURN_IF_ERROR(ParsePrometheus(doc["prometheus"], top["prometheus"], c));
    if (const YAML::Node centers = doc["cost_centers"]) {
      if (!centers.IsSequence()) return top["cost_centers"].Error("expected a list");
      for (size_t i = 0; i < centers.size(); ++i) {
        Result<std::string> cc = top["cost_centers"][i].String(centers[i]);
        if (!cc.ok()) return cc.status();
        GPUVPA_RETURN_IF_ERROR(ValidateLabelText(
            std::string(name) + ": cost_centers[" + std::to_string(i) + "]", *cc));
        c.cost_centers.insert(*cc);
      }
    }
    if (doc["limits"]) GPUVPA_RETURN_IF_ERROR(ParseLimits(doc["limits"], top["limits"], c.limits));
  } catch (const YAML::Exception& e) {
    return root.Error(e.what());
  }
  return c;
}

Result<ScalerConfig> LoadScalerConfig(const std::string& path) {
  if (path.empty()) return ScalerConfig{};
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseScalerConfig(*text, path);
}

}  // namespace gpuvpa::scaler
