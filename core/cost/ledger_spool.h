// Ledger rows that could not reach the ledger (its disk full, its volume gone), kept in a local
// append-only file until they can: one line per row, "<crc32c hex> <json>\n", each append
// fsync'd before it is reported done. Drain moves the rows into a ledger (appends are idempotent
// by action id, so a crash between the two never doubles a row) and only then truncates the
// spool. A torn last line (a crash mid-append) is reported and skipped, never half-read.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

class LedgerSpool {
 public:
  explicit LedgerSpool(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  Status Append(std::span<const LedgerAction> rows);
  // The rows kept (none when the file does not exist); DATA_LOSS for a corrupt line that is not
  // the last one (then nothing is replayed and the file is kept for a person to look at).
  Result<std::vector<LedgerAction>> Read(size_t* torn_lines = nullptr) const;
  // Appends every kept row to `ledger` (in calls of at most 5,000 rows), then empties the
  // spool. Returns the rows moved. A failure part way leaves the spool whole: the rows already
  // moved are skipped by id when it is drained again.
  Result<size_t> Drain(LedgerSink& ledger);

 private:
  const std::string path_;
};

}  // namespace gpuvpa
