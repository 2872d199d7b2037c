// The one HTTP client of gpuvpa (Boost.Beast over Boost.Asio): HTTP/1.1 with keep-alive reuse,
// HTTPS through OpenSSL (CA file, optional client certificate, SNI, peer verification on by
// default), IPv4 and IPv6 literals, a bearer token from a file (re-read when the file changes, as
// Kubernetes rotates service-account tokens), basic auth, a response size limit, and a deadline
// over the whole exchange (resolve, connect, handshake, write, read) enforced by the event loop,
// whatever the peer sends: a hostile or stalled server costs a caller at most its deadline.
//
// All I/O runs on one shared event-loop thread; callers block on their own exchange only.
// Credentials are never part of an error message or a log line.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

struct HttpUrl {
  bool tls = false;
  std::string host;  // without brackets for IPv6 literals
  uint16_t port = 0;
  std::string path;  // the base path, "" or starting with '/', without a trailing '/'

  // "https://[::1]:8443/prefix"; never holds credentials.
  std::string ToString() const;
};

// http(s)://host[:port][/path]; IPv6 literals in brackets. INVALID_ARGUMENT naming the URL
// otherwise (user-info, fragments, other schemes are refused).
Result<HttpUrl> ParseHttpUrl(std::string_view url);

struct HttpClientOptions {
  std::string base_url;  // every request's target is appended to its path
  // TLS (https URLs): PEM CA bundle (empty: the system's default CAs), optional client
  // certificate and key (mTLS), and peer verification (hostname and chain; on by default).
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
  // The same material held in memory (a kubeconfig's *-data fields); a file and its in-memory
  // twin are not both given.
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  bool verify_peer = true;
  // Authorization: a bearer token file, or basic auth (user + password file). Not both.
  std::string bearer_token_file;
  std::string bearer_token;  // a fixed token (a kubeconfig's `token:`), when there is no file
  std::string basic_auth_user;
  std::string basic_auth_password_file;
  size_t max_response_bytes = 16u << 20;
  size_t max_idle_connections = 4;
  std::chrono::seconds idle_timeout{30};  // idle kept-alive connections older than this close
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // the Retry-After header, if any
};

class HttpClient {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Checks the URL, loads the TLS material and the credential files once (so a wrong path is
  // an error at start, naming the option and the file).
  static Result<std::shared_ptr<HttpClient>> Create(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // `target` is the path (and query) below the base URL, e.g. "/api/v1/query?query=up".
  // UNAVAILABLE when the server cannot be reached, answers too slowly, too much, or in a form
  // that is not HTTP; the HTTP status itself is the caller's to judge.
  Result<HttpResponse> Get(std::string_view target, Deadline deadline);
  Result<HttpResponse> Send(std::string_view method, std::string_view target, std::string_view body,
                            std::string_view content_type, Deadline deadline);

  const HttpUrl& url() const;
  // Connections opened so far and those idle in the pool now (for tests and /metrics).
  uint64_t connections_opened() const;
  size_t idle_connections() const;

  struct Impl;

 private:
  explicit HttpClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// One GET of an absolute URL with a fresh client (tests, one-off probes).
Result<HttpResponse> HttpGet(std::string_view url, std::chrono::milliseconds timeout);

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view text);

}  // namespace gpuvpa
