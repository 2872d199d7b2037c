// Cost API flags: names, pairing checks, start-up on a read-only ledger connection.
#include "core/cli/cost_api_flags.h"

namespace gpuvpa {

void AddCostApiFlags(CLI::App& app, CostApiFlags& flags, std::string_view prefix) {
  flags.prefix = std::string(prefix);
  const std::string p = "--" + flags.prefix;
  if (!flags.prefix.empty())
    app.add_option(p + "listen", flags.options.listen_address,
                   "serve the ledger's cost API here (host:port): OpenCost's /allocation, FOCUS "
                   "/focus (README, The cost API), on a read-only connection of its own");
  app.add_option(p + "token-file", flags.options.token_file,
                 "file whose first line is the bearer token the cost API requires (a mounted "
                 "Secret)")
      ->check(CLI::ExistingFile);
  app.add_option(p + "tls-cert-file", flags.tls.cert_file, "PEM certificate: the API over HTTPS")
      ->check(CLI::ExistingFile);
  app.add_option(p + "tls-key-file", flags.tls.key_file, "PEM key of the certificate")
      ->check(CLI::ExistingFile);
  app.add_option(p + "client-ca-file", flags.tls.client_ca_file,
                 "PEM CA: require client certificates it signed (mTLS)")
      ->check(CLI::ExistingFile);
}

Result<bool> CostApiRequested(const CLI::App& app, CostApiFlags& flags) {
  const std::string p = "--" + flags.prefix;
  const bool requested = flags.prefix.empty() || app.count(p + "listen") > 0;
  if (requested != !flags.options.token_file.empty())
    return InvalidArgumentError(flags.prefix.empty()
                                    ? p + "token-file is required"
                                    : p + "listen and " + p + "token-file go together");
  if (flags.tls.cert_file.empty() != flags.tls.key_file.empty() ||
      (!flags.tls.client_ca_file.empty() && flags.tls.cert_file.empty()))
    return InvalidArgumentError(p + "tls-cert-file and " + p + "tls-key-file go together, and " +
                                p + "client-ca-file needs them");
  if (!flags.tls.cert_file.empty()) flags.options.tls = flags.tls;
  return requested;
}

Result<ServedCosts> ServeCosts(const LedgerFlags& ledger, const CostApiFlags& flags) {
  ServedCosts served;
  Result<std::unique_ptr<Ledger>> reader =
      OpenLedger(ledger, /*must_exist=*/true, /*read_only=*/true);
  if (!reader.ok()) return reader.status();
  served.ledger = std::move(*reader);
  Result<std::unique_ptr<CostApi>> api = CostApi::Start(*served.ledger, flags.options);
  if (!api.ok()) return api.status();
  served.api = std::move(*api);
  return served;
}

}  // namespace gpuvpa
