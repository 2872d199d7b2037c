// GPUVPA_TEST_ADDRESS_MAP, read once.
#include "core/net/address_map.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <map>
#include <string_view>

#include "absl/strings/str_split.h"

namespace gpuvpa {
namespace {

const std::map<std::string, std::string>& Map() {
  static const std::map<std::string, std::string> map = [] {
    std::map<std::string, std::string> m;
    const char* text = std::getenv("GPUVPA_TEST_ADDRESS_MAP");
    if (text == nullptr || *text == '\0') return m;
    for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
      const size_t eq = pair.find('=');
      if (eq == std::string_view::npos || eq == 0 || eq + 1 == pair.size()) {
        spdlog::error("GPUVPA_TEST_ADDRESS_MAP: \"{}\" is not from=to (ignored)",
                      std::string(pair));
        continue;
      }
      m.emplace(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
    }
    spdlog::warn("GPUVPA_TEST_ADDRESS_MAP is set: {} addresses are redirected (a test only)",
                 m.size());
    return m;
  }();
  return map;
}

}  // namespace

std::optional<std::string> MappedAddress(const std::string& host_port) {
  const auto& map = Map();
  if (map.empty()) return std::nullopt;
  auto it = map.find(host_port);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

std::string SocketAddress(const std::string& host_port) {
  std::optional<std::string> mapped = MappedAddress(host_port);
  return mapped ? *mapped : host_port;
}

SocketTarget SplitHostPort(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  std::string host = host_port.substr(0, colon == std::string::npos ? host_port.size() : colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {host, colon == std::string::npos ? std::string() : host_port.substr(colon + 1)};
}

SocketTarget SocketAddress(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string written = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  std::optional<std::string> mapped = MappedAddress(written);
  if (!mapped) return {host, std::to_string(port)};
  SocketTarget target = SplitHostPort(*mapped);
  if (target.port.empty()) target.port = std::to_string(port);
  return target;
}

}  // namespace gpuvpa
