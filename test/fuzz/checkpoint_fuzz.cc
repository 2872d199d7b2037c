// libFuzzer: the checkpoint loader on arbitrary bytes. The frame's CRC would stop most inputs
// at the door, so the fuzzer's bytes are also tried as a payload behind a valid frame. A
// checkpoint that loads must encode again and load again.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/base/crc32c.h"
#include "recommender/checkpoint/checkpoint.h"

namespace {

std::string Framed(std::string_view payload) {
  std::string out = "GPVACKPT";
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  put(gpuvpa::recommender::kCheckpointFormatVersion, 4);
  put(payload.size(), 8);
  put(gpuvpa::Crc32c(payload), 4);
  return out.append(payload);
}

void Check(std::string_view bytes) {
  using namespace gpuvpa::recommender;  // NOLINT: a fuzz harness
  const FleetStoreOptions options;
  gpuvpa::Result<FleetStore> store = DecodeCheckpoint(bytes, options);
  if (!store.ok()) return;
  if (!DecodeCheckpoint(EncodeCheckpoint(*store, 0), options).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  Check(Framed(bytes));
  return 0;
}
