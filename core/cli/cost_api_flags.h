// The flags that serve the cost API, for `gpuvpa cost-api` and the ledger's owner
// (gpuvpa-recommender --cost-api-*): one set of names, checks and start-up.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/cost_api.h"

namespace gpuvpa {

struct CostApiFlags {
  CostApiOptions options;
  HttpServerTls tls;
  std::string prefix;  // "" or "cost-api-": what the flags are called
  bool listen_given = false;
};

// --<prefix>listen (only when `prefix` is set: the command has its own --listen default),
// --<prefix>token-file, --<prefix>tls-cert-file, --<prefix>tls-key-file, --<prefix>client-ca-file.
void AddCostApiFlags(CLI::App& app, CostApiFlags& flags, std::string_view prefix);

// After parsing: whether the API is asked for (prefix set: --cost-api-listen given), or
// INVALID_ARGUMENT naming the flags that go together.
Result<bool> CostApiRequested(const CLI::App& app, CostApiFlags& flags);

// The API on its own read-only connection to the ledger the flags name.
struct ServedCosts {
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<CostApi> api;
};
Result<ServedCosts> ServeCosts(const LedgerFlags& ledger, const CostApiFlags& flags);

}  // namespace gpuvpa
