// libFuzzer: the trace CSV replayer (header, rows, units, names, times) into a fresh store,
// then a checkpoint round trip of whatever was accepted: nothing accepted may fail to reload.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/gpu/gpu_catalog.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/input/trace_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuvpa::recommender;  // NOLINT: a fuzz harness
  FleetStore store;
  TraceReplayOptions options;
  options.now_s = 1800000000;
  TraceReplayer replayer(store, gpuvpa::GpuCatalog::BuiltIn(), {}, options);
  (void)replayer.ReplayText(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!DecodeCheckpoint(EncodeCheckpoint(store, 0), store.options()).ok()) std::abort();
  return 0;
}
