// Ledger rows that could not reach the ledger (its disk full, its volume gone), kept in a local
// append-only file until they can: one line per row, "<crc32c hex> <json>\n", each append
// fsync'd before it is reported done. Drain moves the rows into a ledger (appends are idempotent
// by action id, so a crash between the two never doubles a row) and only then removes the
// spool.
//
// Nothing is dropped to keep going, and nothing blocks:
//   - recovery is per line: a torn or corrupt line loses only itself (a record that a torn line
//     ran into is found inside it and kept), and the count is reported; an append after a torn
//     tail starts on a line of its own;
//   - a row the ledger refuses as invalid (INVALID_ARGUMENT: a bound; ALREADY_EXISTS: its id
//     recorded with other content)
//     goes to the dead-letter file `<spool>.dead`, in the spool's own format with its reason
//     added (`dead_letter_reason`), and the rows around it flow on. A person can fix it and move
//     it back. A crash while dead-lettering may write a row there twice (never to the ledger).
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
  uint64_t dead_lettered_rows() const;  // rows the ledger refused as invalid, in <spool>.dead
  uint64_t dropped_lines() const;       // torn or corrupt spool lines, each losing only itself

 private:
  Result<size_t> MoveSpooledLocked();
  LedgerSink& inner_;
  const std::string spool_path_;
  mutable std::mutex mu_;
  bool pending_ = true;  // the spool may hold rows (an earlier run's): try it first
  uint64_t spooled_rows_ = 0;
  uint64_t dead_lettered_rows_ = 0;
  uint64_t dropped_lines_ = 0;
  // Ids this run spooled since the last drain: a caller that appends the same rows every cycle
  // (the updater's hourly proposals) spools each once. Bounded; past the bound rows are spooled
  // again (the ledger keeps one of each anyway).
  std::unordered_set<std::string> spooled_ids_;
};

struct SpoolDrain {
  size_t moved = 0;          // rows the ledger took (or had already)
  size_t dead_lettered = 0;  // rows it refused as invalid, now in the dead-letter file
  size_t dropped_lines = 0;  // torn or corrupt lines
};

class LedgerSpool {
 public:
  explicit LedgerSpool(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  std::string dead_letter_path() const { return path_ + ".dead"; }

  Status Append(std::span<const LedgerAction> rows);
  // The rows kept (none when the file does not exist); each torn or corrupt line is skipped
  // and counted in `dropped_lines`.
  Result<std::vector<LedgerAction>> Read(size_t* dropped_lines = nullptr) const;
  // Appends every kept row to `ledger` (rows it refuses as invalid to the dead-letter file),
  // then removes the spool. A failure part way (the ledger unavailable) leaves the spool whole:
  // the rows already moved are skipped by id when it is drained again.
  Result<SpoolDrain> Drain(LedgerSink& ledger);
  // Appends `row` with `reason` to the dead-letter file, fsync'd.
  Status DeadLetter(const LedgerAction& row, std::string_view reason);

 private:
  const std::string path_;
};

}  // namespace gpuvpa
