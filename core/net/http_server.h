// A small HTTP/1.1 server (Boost.Beast) for a daemon's probes, metrics and read-only APIs: GET
// only, one request per connection, plaintext or TLS / mTLS, a deadline on every read and write
// so a slow client cannot hold it. Handlers run on the server's one thread, one at a time.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/base/status.h"

namespace gpuvpa {

struct HttpServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// What a handler sees of a request: the path without the query string, the query string (after
// '?', still percent-encoded), and the Authorization header.
struct HttpServerRequest {
  std::string path;
  std::string query;
  std::string authorization;
};

// TLS for a server: certificate and key (PEM); with a client CA, clients must present a
// certificate it signed (mTLS). TLS 1.2 or later.
struct HttpServerTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

class HttpServer {
 public:
  // `path` without the query string; unknown paths are the handler's to answer (404).
  using Handler = std::function<HttpServerResponse(const std::string& path)>;
  using RequestHandler = std::function<HttpServerResponse(const HttpServerRequest& request)>;

  // Listens on "host:port" (port 0: ephemeral) and serves on its own thread.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen_address,
                                                   Handler handler);
  // The same, with the whole request, over TLS when `tls` is given (INVALID_ARGUMENT naming the
  // file when a certificate, key or CA cannot be loaded).
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen_address,
                                                   RequestHandler handler,
                                                   const std::optional<HttpServerTls>& tls);
  ~HttpServer();  // stops and joins
  int port() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvpa
