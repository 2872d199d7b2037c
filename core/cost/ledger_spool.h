// Ledger rows that could not reach the ledger (its disk full, its volume gone), kept in a local
// append-only file until they can: one line per row, "<crc32c hex> <json>\n", each append
// fsync'd before it is reported done. Drain moves the rows into a ledger (appends are idempotent
// by action id, so a crash between the two never doubles a row) and only then truncates the
// spool. A torn last line (a crash mid-append) is reported and skipped, never half-read.
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"

namespace gpuvpa {

class LedgerSpool;

// A LedgerSink that loses no row it is given: rows the inner sink refuses (a ledger service
// that is down, a full disk) go to the spool, durably, and are moved to the inner sink before
// the next append once it takes rows again. Append then answers OK with 0 new rows; it fails
// only when the rows could be written neither to the inner sink nor to the spool. Marks are
// not spooled: an append with marks fails with the inner sink. Safe from several threads.
class SpoolingLedgerSink final : public LedgerSink {
 public:
  SpoolingLedgerSink(LedgerSink& inner, std::string spool_path);
  Result<size_t> Append(std::span<const LedgerAction> actions,
                        std::span<const ChargeMark> marks = {}) override;
  using LedgerSink::Append;
  // Moves what the spool holds to the inner sink (rows spooled by an earlier run too); 0 at
  // once when nothing is waiting.
  Result<size_t> MoveSpooled();
  uint64_t spooled_rows() const;

 private:
  Result<size_t> MoveSpooledLocked();
  LedgerSink& inner_;
  const std::string spool_path_;
  mutable std::mutex mu_;
  bool pending_ = true;  // the spool may hold rows (an earlier run's): try it first
  uint64_t spooled_rows_ = 0;
  // Ids this run spooled since the last drain: a caller that appends the same rows every cycle
  // (the updater's hourly proposals) spools each once. Bounded; past the bound rows are spooled
  // again (the ledger keeps one of each anyway).
  std::unordered_set<std::string> spooled_ids_;
};

class LedgerSpool {
 public:
  explicit LedgerSpool(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  Status Append(std::span<const LedgerAction> rows);
  // The rows kept (none when the file does not exist); DATA_LOSS for a corrupt line that is not
  // the last one (then nothing is replayed and the file is kept for a person to look at).
  Result<std::vector<LedgerAction>> Read(size_t* torn_lines = nullptr) const;
  // Appends every kept row to `ledger`, then empties the spool. Returns the rows moved. A
  // failure part way leaves the spool whole: the rows already moved are skipped by id when it
  // is drained again.
  Result<size_t> Drain(LedgerSink& ledger);

 private:
  const std::string path_;
};

}  // namespace gpuvpa
