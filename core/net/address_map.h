// Where a socket really goes, for the manifest test only. A container's manifest names fixed
// addresses (listen on 0.0.0.0:8080, connect to gpuvpa-recommender:9090); the test that starts
// every container exactly as written runs them side by side on one machine, so it sets
//   GPUVPA_TEST_ADDRESS_MAP="0.0.0.0:8080=127.0.0.1:41807,gpuvpa-recommender:9090=127.0.0.1:41233"
// and the listeners and clients open their sockets there. Only the socket moves: TLS server-name
// checks, Host headers, logs and backend allowlists keep the written address. Unset (every real
// deployment), every address is its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpuvpa {

// The address to open instead of `host_port` ("host:port", "[v6]:port"), or nullopt.
std::optional<std::string> MappedAddress(const std::string& host_port);
// `host_port` mapped, or itself.
std::string SocketAddress(const std::string& host_port);

struct SocketTarget {
  std::string host;  // without brackets
  std::string port;  // "" when there is none
};
// "host:port" or "[v6]:port" taken apart.
SocketTarget SplitHostPort(const std::string& host_port);
// The same for a host and port held apart (a URL's), split again for a resolver.
SocketTarget SocketAddress(const std::string& host, uint16_t port);

}  // namespace gpuvpa
