// The ledger's HTTP API: routing, the token check, errors in OpenCost's envelope.
#include "core/cost/cost_api.h"

#include <cmath>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/time_format.h"
#include "core/cost/allocation.h"
#include "core/cost/focus.h"

namespace gpuvpa {
namespace {

constexpr const char* kJson = "application/json";

// Compares without an early exit: the time taken does not tell how much of a token was right.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i < b.size() ? i : 0]);
  return diff == 0 && !b.empty();
}

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

HttpServerResponse Error(int code, const std::string& message) {
  return {code, kJson, AllocationErrorBody(code, message) + "\n"};
}

// A token file that cannot be read is a start-up usage error, as an empty one is.
Result<std::string> ReadToken(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("the cost API needs a token file");
  Result<std::string> token = ReadFirstLine(path, "token file");
  if (!token.ok()) return InvalidArgumentError(token.status().message());
  return token;
}

}  // namespace

Result<std::unique_ptr<CostApi>> CostApi::Start(const Ledger& ledger, CostApiOptions options) {
  Result<std::string> token = ReadToken(options.token_file);
  if (!token.ok()) return token.status();
  if (!options.now) options.now = [] { return static_cast<int64_t>(std::floor(UnixNowSeconds())); };
  std::unique_ptr<CostApi> api(new CostApi(ledger, options, std::move(*token)));
  const CostApi* raw = api.get();
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      options.listen_address, [raw](const HttpServerRequest& r) { return raw->Handle(r); },
      options.tls);
  if (!server.ok()) return server.status();
  api->server_ = std::move(*server);
  return api;
}

HttpServerResponse CostApi::Handle(const HttpServerRequest& request) const {
  if (request.path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
  const bool allocation = request.path == "/allocation" || request.path == "/allocation/compute";
  if (!allocation && request.path != "/focus")
    return Error(404, "path " + request.path.substr(0, 200) +
                          " is not served: /allocation, /allocation/compute, /focus, /healthz");
  constexpr std::string_view kBearer = "Bearer ";
  if (request.authorization.compare(0, kBearer.size(), kBearer) != 0 ||
      !SameSecret(std::string_view(request.authorization).substr(kBearer.size()), token_))
    return Error(401, "a bearer token is required (Authorization: Bearer <token>)");
  Result<AllocationRequest> parsed = ParseAllocationRequest(request.query, options_.now());
  if (!parsed.ok()) return Error(400, parsed.status().message());
  if (allocation) {
    Result<std::string> body = AllocationResponse(ledger_, *parsed);
    if (!body.ok()) return Error(HttpStatusOf(body.status()), body.status().message());
    return {200, kJson, *body + "\n"};
  }
  Result<std::vector<Showback>> periods =
      ledger_.QueryShowbackSteps(AllocationShowbackQuery(*parsed));
  if (!periods.ok()) return Error(HttpStatusOf(periods.status()), periods.status().message());
  Result<std::string> csv = FocusCsv(*periods);
  if (!csv.ok()) return Error(HttpStatusOf(csv.status()), csv.status().message());
  return {200, "text/csv; charset=utf-8", *csv};
}

}  // namespace gpuvpa
