// The flags of every command that reads or writes the ledger: where it is, and which cluster
// (installation) this is. A PostgreSQL URL may carry a password, so it is read from a file
// (--ledger-url-file, a mounted Secret) and never taken as a flag value, which any user of the
// machine can read in the process list.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/cli/cli.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

struct LedgerFlags {
  std::string ledger;    // --ledger: a file path or sqlite:PATH
  std::string url_file;  // --ledger-url-file: a file holding the URL (postgresql://...)
  std::string cluster;   // --cluster; empty: the config's (or "default")
  bool given() const { return !ledger.empty() || !url_file.empty(); }
};

// Adds --ledger (described by `ledger_help`) and --ledger-url-file; for a command that writes
// rows, --cluster too (a reading command may filter by cluster with a flag of its own).
enum class LedgerAccess { kRead, kWrite };
void AddLedgerFlags(CLI::App& app, LedgerFlags& flags, std::string_view ledger_help,
                    LedgerAccess access = LedgerAccess::kWrite);

// The URL the flags name: INVALID_ARGUMENT for both flags at once, or a postgresql:// URL given
// on --ledger (the message says to use --ledger-url-file and never repeats the URL's password).
Result<std::string> LedgerUrlOf(const LedgerFlags& flags);

// Opens the ledger the flags name. `must_exist`: a SQLite file that is not there is NOT_FOUND
// rather than created (commands that only read).
// `read_only`: LedgerOptions::read_only.
Result<std::unique_ptr<Ledger>> OpenLedger(const LedgerFlags& flags, bool must_exist = false,
                                           bool read_only = false);

// The SQLite file --ledger names ("" for none or another backend).
std::string SqlitePathOf(const LedgerFlags& flags);

// The flags, with what they leave out taken from the config: its ledger (path or url_file)
// when neither ledger flag is given, its cluster when --cluster is not.
LedgerFlags WithConfigDefaults(LedgerFlags flags, const GpuvpaConfig& config);

// Where the flags point, fit for a log line (no password).
std::string LedgerShownAs(const LedgerFlags& flags);

}  // namespace gpuvpa
