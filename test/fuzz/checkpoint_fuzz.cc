// libFuzzer: the checkpoint loader on arbitrary bytes. The frame's CRC would stop most inputs
// at the door, so the fuzzer's bytes are also tried as a payload behind a valid frame. A
// checkpoint that loads must encode again and load again.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "recommender/checkpoint/checkpoint.h"

namespace {

void Check(std::string_view bytes) {
  using namespace gpuvpa::recommender;  // NOLINT: a fuzz harness
  const FleetStoreOptions options;
  gpuvpa::Result<FleetStore> store = DecodeCheckpoint(bytes, options);
  if (!store.ok()) return;
  if (!DecodeCheckpoint(EncodeCheckpoint(*store, 0), options).ok()) std::abort();
}

}  // namespace

// Protobuf logs every invalid UTF-8 string it parses; the loader refuses those files anyway.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  Check(gpuvpa::recommender::FrameCheckpointPayload(bytes));
  return 0;
}
