// Loopback sockets for tests: listeners on an ephemeral port and waits for a server's port.
#pragma once

#include <chrono>

namespace gpuvpa::testing {

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLocalPort();
// A listening socket on 127.0.0.1 (or ::1) and an ephemeral port, written to `port`; -1 on error.
int ListenOnLoopback(int* port, bool ipv6 = false, int backlog = 64);
// True once something accepts connections on 127.0.0.1:`port`, false after `limit`.
bool WaitForTcpPort(int port, std::chrono::milliseconds limit);

}  // namespace gpuvpa::testing
