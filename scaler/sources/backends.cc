// Backend registry.
#include "scaler/sources/backends.h"

namespace gpuvpa::scaler {

Result<std::unique_ptr<Backends>> Backends::Create(const ScalerConfig& config) {
  auto b = std::make_unique<Backends>();
  for (const RedisBackendConfig& r : config.redis)
    b->redis_.push_back(std::make_unique<RedisBackend>(r, config.limits.max_pending_reads));
  for (const PrometheusBackendConfig& p : config.prometheus) {
    Result<std::unique_ptr<PrometheusBackend>> backend =
        PrometheusBackend::Create(p, config.limits.max_pending_reads);
    if (!backend.ok()) return backend.status();
    b->prometheus_.push_back(std::move(backend).value());
  }
  return b;
}

RedisBackend* Backends::FindRedis(const std::string& host, int port) const {
  for (const auto& r : redis_)
    if (r->config().host == host && r->config().port == port) return r.get();
  return nullptr;
}

PrometheusBackend* Backends::FindPrometheus(const std::string& server_address) const {
  const std::string wanted = NormalizeServerAddress(server_address);
  for (const auto& p : prometheus_)
    if (p->address() == wanted) return p.get();
  return nullptr;
}

std::string Backends::RedisAddresses() const {
  std::string out;
  for (const auto& r : redis_) out += (out.empty() ? "" : ", ") + r->config().Address();
  return out.empty() ? "none" : out;
}

std::string Backends::PrometheusAddresses() const {
  std::string out;
  for (const auto& p : prometheus_) out += (out.empty() ? "" : ", ") + p->address();
  return out.empty() ? "none" : out;
}

int Backends::open_redis_connections() const {
  int n = 0;
  for (const auto& r : redis_) n += r->open_connections();
  return n;
}

}  // namespace gpuvpa::scaler
