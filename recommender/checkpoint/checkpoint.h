// Checkpoints of the whole fleet store: restart-safe recommendations.
//
// File layout (little-endian): "GPVACKPT" magic | u32 format version | u64 payload length |
// u32 CRC-32C of the payload | payload (a FleetCheckpoint protobuf). A file that fails any check
// (magic, version, length, checksum, parse, bucket shape, indices, weights) is refused with an
// error saying which and why; nothing of it is loaded.
//
// Saving keeps the previous good checkpoint at PATH.prev, and loading falls back to it when PATH
// is refused or missing, so a corrupt file never costs more than one checkpoint interval.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

// Bump when stored state changes meaning; older files are refused, not reinterpreted.
inline constexpr uint32_t kCheckpointFormatVersion = 2;  // 2: per-series high-water marks

// Serialises the store into the framed format above.
std::string EncodeCheckpoint(const FleetStore& store, double saved_at_s);
// The frame around a serialised FleetCheckpoint (tests and fuzzers build payloads with it).
std::string FrameCheckpointPayload(std::string_view payload);
// Parses and validates a framed checkpoint into a new store built with `options`.
Result<FleetStore> DecodeCheckpoint(std::string_view bytes, const FleetStoreOptions& options);

// Atomically replaces PATH (temp file + fsync + rename), first moving a valid PATH to PATH.prev.
Status SaveCheckpoint(const FleetStore& store, const std::string& path, double saved_at_s);
// The file a save wrote: its path, length and checksum.
struct SavedCheckpointFile {
  std::string path;
  size_t size = 0;
  uint32_t crc = 0;
};
// The same for bytes EncodeCheckpoint wrote: they are decoded (with `options`) before they are
// written, so that a file this build could not load is never written. With `last` (the file
// this caller saved before, updated here), the current PATH is kept as PATH.prev without being
// decoded again while it is that file, byte for byte by its checksum.
Status SaveEncodedCheckpoint(const std::string& bytes, const std::string& path,
                             const FleetStoreOptions& options, SavedCheckpointFile* last = nullptr);

// Saves checkpoints on a thread of its own, so that a poll pays only for encoding the store (at
// 100,000 workloads the check decode and the write are two thirds of a save). Saves happen in
// order, and a save still waiting when a newer one comes is dropped for it: the file on disk
// is never older than one already written. A crash before a save lands leaves the previous
// checkpoint, as a crash before a synchronous save would (the ledger's charge marks cover what
// it charged since).
class CheckpointWriter {
 public:
  CheckpointWriter(std::string path, FleetStoreOptions options);
  ~CheckpointWriter();  // finishes the save in progress and the one waiting
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Encodes `store` now and saves it in the background.
  void Submit(const FleetStore& store, double saved_at_s);
  // Waits until every submitted save has finished; the last one's status.
  Status Flush();

  struct Outcome {
    uint64_t saves = 0;     // finished saves, successful or not
    double saved_at_s = 0;  // the newest checkpoint written (its saved_at); 0: none
    Status last;            // the last finished save's status
  };
  Outcome outcome() const;

 private:
  void Loop();

  const std::string path_;
  const FleetStoreOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<std::string, double>> waiting_;  // bytes, saved_at
  bool busy_ = false;
  bool stop_ = false;
  Outcome outcome_;
  SavedCheckpointFile last_saved_;  // the writer thread's
  std::thread thread_;
};

struct CheckpointLoad {
  std::string loaded_from;      // PATH or PATH.prev
  std::vector<Status> refused;  // files that were tried and refused, with the reason
};

// Loads PATH, or PATH.prev if PATH is refused or missing, into `store`. Temporary files a crashed
// save left beside PATH are removed first. `store` is replaced only
// on success; on failure it is left exactly as it was. NOT_FOUND when neither file exists.
Result<CheckpointLoad> LoadCheckpoint(const std::string& path, FleetStore& store);

std::string PreviousCheckpointPath(const std::string& path);

}  // namespace gpuvpa::recommender
