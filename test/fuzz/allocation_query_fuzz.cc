// Fuzzes the cost API's query-string parser (ParseAllocationRequest): any bytes either parse to
// a request whose window is non-empty and whose steps are bounded, or are refused with a message
// that the error envelope carries as valid JSON.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/cost/allocation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view query(reinterpret_cast<const char*>(data), size);
  constexpr int64_t kNow = 1'796'428'800;  // 2026-12-05T00:00:00Z
  gpuvpa::Result<gpuvpa::AllocationRequest> r = gpuvpa::ParseAllocationRequest(query, kNow);
  if (!r.ok()) {
    if (r.status().message().empty()) std::abort();
    const std::string body = gpuvpa::AllocationErrorBody(400, r.status().message());
    const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_discarded() || doc["code"] != 400) std::abort();
    return 0;
  }
  if (r->from_s >= r->to_s || r->from_s < 0) std::abort();
  if (r->step_s) {
    if (*r->step_s < 60) std::abort();
    if ((r->to_s - r->from_s) / *r->step_s > static_cast<int64_t>(gpuvpa::kMaxShowbackSteps))
      std::abort();
  }
  for (const gpuvpa::AggregateBy& by : r->aggregate)
    if ((by.property == gpuvpa::AllocationProperty::kLabel ||
         by.property == gpuvpa::AllocationProperty::kAnnotation) &&
        by.key.empty())
      std::abort();
  return 0;
}
