// The ledger's read-only HTTP API: OpenCost's `/allocation` (and `/allocation/compute`, the same
// handler) and `/focus` (FOCUS CSV), behind a bearer token read from a file, over TLS or mTLS
// when configured. `/healthz` answers without the token.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "core/cost/ledger.h"
#include "core/net/http_server.h"

namespace gpuvpa {

struct CostApiOptions {
  std::string listen_address = "127.0.0.1:9003";
  // The bearer token clients must send ("Authorization: Bearer <token>"): the file's first line,
  // trimmed. Required: money is not served anonymously.
  std::string token_file;
  std::optional<HttpServerTls> tls;
  // The clock the relative windows ("today", "7d") end at; the wall clock when unset.
  std::function<int64_t()> now;
};

class CostApi {
 public:
  // INVALID_ARGUMENT naming the token file when it cannot be read or is empty.
  static Result<std::unique_ptr<CostApi>> Start(const Ledger& ledger, CostApiOptions options);
  int port() const { return server_->port(); }
  // What a request is answered (the server calls it; tests may too).
  HttpServerResponse Handle(const HttpServerRequest& request) const;

 private:
  CostApi(const Ledger& ledger, CostApiOptions options, std::string token)
      : ledger_(ledger), options_(std::move(options)), token_(std::move(token)) {}
  const Ledger& ledger_;
  const CostApiOptions options_;
  const std::string token_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace gpuvpa
