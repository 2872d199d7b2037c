#include "core/cli/ledger_flags.h"

#include "core/base/atomic_file.h"
#include "core/base/names.h"

namespace gpuvpa {

void AddLedgerFlags(CLI::App& app, LedgerFlags& flags, std::string_view ledger_help,
                    LedgerAccess access) {
  app.add_option("--ledger", flags.ledger,
                 std::string(ledger_help) + " (a SQLite file, or sqlite:PATH)");
  app.add_option("--ledger-url-file", flags.url_file,
                 "a file (a mounted Secret) holding the ledger's URL: postgresql://... "
                 "(sslmode=verify-full in production) or sqlite:PATH");
  if (access == LedgerAccess::kRead) return;
  app.add_option("--cluster", flags.cluster,
                 "this installation's cluster name (a DNS-1123 label): stamped on every row it "
                 "writes (default: default)");
}

Result<std::string> LedgerUrlOf(const LedgerFlags& flags) {
  if (!flags.ledger.empty() && !flags.url_file.empty())
    return InvalidArgumentError("--ledger and --ledger-url-file: give the ledger one way");
  if (!flags.url_file.empty()) return ReadLedgerUrlFile(flags.url_file);
  Result<LedgerUrl> parsed = ParseLedgerUrl(flags.ledger);
  if (!parsed.ok()) return Status(parsed.status().code(), "--ledger: " + parsed.status().message());
  if (parsed->backend == LedgerUrl::Backend::kPostgres)
    return InvalidArgumentError("--ledger " + QuoteForError(RedactLedgerUrl(flags.ledger)) +
                                ": a PostgreSQL URL goes in a file (--ledger-url-file): a flag "
                                "value shows in the process list");
  return flags.ledger;
}

Result<std::unique_ptr<Ledger>> OpenLedger(const LedgerFlags& flags, bool must_exist,
                                           bool read_only) {
  Result<std::string> url = LedgerUrlOf(flags);
  if (!url.ok()) return url.status();
  Result<LedgerUrl> parsed = ParseLedgerUrl(*url);
  if (!parsed.ok()) return parsed.status();
  if (must_exist && parsed->backend == LedgerUrl::Backend::kSqlite && !FileExists(parsed->target))
    return NotFoundError("no ledger at " + parsed->target);
  return Ledger::Open(
      *url, {.cluster = flags.cluster.empty() ? std::string(kDefaultCluster) : flags.cluster,
             .read_only = read_only});
}

LedgerFlags WithConfigDefaults(LedgerFlags flags, const GpuvpaConfig& config) {
  if (!flags.given()) {
    flags.ledger = config.ledger_url_file.empty() ? config.ledger_path : "";
    flags.url_file = config.ledger_url_file;
  }
  if (flags.cluster.empty()) flags.cluster = config.cluster;
  return flags;
}

std::string SqlitePathOf(const LedgerFlags& flags) {
  Result<LedgerUrl> parsed = ParseLedgerUrl(flags.ledger);
  return parsed.ok() && parsed->backend == LedgerUrl::Backend::kSqlite ? parsed->target : "";
}

std::string LedgerShownAs(const LedgerFlags& flags) {
  if (!flags.ledger.empty()) return flags.ledger;
  Result<std::string> url = LedgerUrlOf(flags);
  return url.ok() ? RedactLedgerUrl(*url) : flags.url_file;
}

}  // namespace gpuvpa
