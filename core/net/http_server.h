// A small HTTP/1.1 server (Boost.Beast) for a daemon's probes and metrics: GET only, one
// request per connection, a deadline on every read and write so a slow client cannot hold it.
// Handlers run on the server's one thread and must be quick (they read prepared state).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/base/status.h"

namespace gpuvpa {

struct HttpServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  // `path` without the query string; unknown paths are the handler's to answer (404).
  using Handler = std::function<HttpServerResponse(const std::string& path)>;

  // Listens on "host:port" (port 0: ephemeral) and serves on its own thread.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen_address,
                                                   Handler handler);
  ~HttpServer();  // stops and joins
  int port() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvpa
