// A real TCP server on 127.0.0.1 or ::1 (ephemeral port) that answers HTTP requests with a
// scripted behaviour, well-formed or hostile: for testing clients against peers that lie about
// chunk sizes, never stop sending, trickle bytes, or never answer. Records every request head.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuvpa::testing {

enum class HttpBehaviour {
  kOk,               // 200, Content-Length body, keep-alive
  kOkThenClose,      // 200 with the body, then closes the connection (keep-alive announced)
  kWrappedChunk,     // chunked body whose chunk size wraps a 64-bit counter, then silence
  kEndlessBody,      // a huge Content-Length, bytes streamed until the client leaves
  kSlowloris,        // the status line one byte every 50 ms, forever
  kSilent,           // accepts, reads the request, never answers
  kTooManyRequests,  // 429 with Retry-After: 0 and the body, keep-alive
  kStatus,           // set_status()'s code with the body, keep-alive (a webhook receiver)
};

class ScriptedHttpServer {
 public:
  // `ipv6`: listen on [::1] instead of 127.0.0.1.
  explicit ScriptedHttpServer(HttpBehaviour behaviour, std::string body = "{}", bool ipv6 = false);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://127.0.0.1:PORT or http://[::1]:PORT
  void set_behaviour(HttpBehaviour b) { behaviour_ = b; }
  void set_status(int code) { status_ = code; }
  // Request bodies (read by Content-Length), in arrival order.
  std::vector<std::string> bodies() const;
  // kOk answers a request whose target starts with `target_prefix` (e.g. "/api/v1/query_range")
  // with `body` instead of the default one; the longest matching prefix wins.
  void SetBodyFor(const std::string& target_prefix, std::string body);
  std::vector<std::string> requests() const;  // request heads, in arrival order
  int connections() const { return connections_; }

 private:
  void Serve(int fd);

  std::atomic<HttpBehaviour> behaviour_;
  std::atomic<int> status_{200};
  std::vector<std::string> received_bodies_;  // under mu_
  const std::string body_;
  std::vector<std::pair<std::string, std::string>> bodies_;  // target prefix -> body, under mu_
  const bool ipv6_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace gpuvpa::testing
