// libFuzzer: the GPU allocation parser and model lookup; a parsed allocation must print back to
// text that parses to the same allocation.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpuvpa::GpuCatalog::BuiltIn().FindModel(text);
  gpuvpa::Result<gpuvpa::GpuAllocation> a = gpuvpa::ParseGpuAllocation(text);
  if (!a.ok()) return 0;
  gpuvpa::Result<gpuvpa::GpuAllocation> again = gpuvpa::ParseGpuAllocation(a->ToString());
  if (!again.ok() || !(*again == *a)) std::abort();
  for (const gpuvpa::GpuModel& m : gpuvpa::GpuCatalog::BuiltIn().models())
    (void)gpuvpa::ResolveAllocationUnit(*a, m);
  return 0;
}
