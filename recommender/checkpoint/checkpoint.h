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

#include <string>
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
