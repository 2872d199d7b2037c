// libFuzzer: a gpuvpa.v1.LedgerService.Append request as any peer that reaches the port could
// send it. Decoding never crashes, every row accepted round-trips to the same wire fields, and
// its evidence is a JSON object.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/cost/ledger_rpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuvpa::v1::LedgerAppendRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (const gpuvpa::v1::LedgerRow& row : request.rows()) {
    gpuvpa::Result<gpuvpa::LedgerAction> action = gpuvpa::LedgerRowFromProto(row);
    if (!action.ok()) continue;
    gpuvpa::v1::LedgerRow known = row;
    known.DiscardUnknownFields();
    if (gpuvpa::LedgerRowToProto(*action).SerializeAsString() != known.SerializeAsString())
      std::abort();
    if (!nlohmann::json::parse(action->evidence_json, nullptr, false).is_object()) std::abort();
  }
  return 0;
}
