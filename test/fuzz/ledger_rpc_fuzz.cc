// libFuzzer: a gpuvpa.v1.LedgerService.Append request as any peer that reaches the port could
// send it. Decoding never crashes, every row accepted round-trips to the same wire fields, its
// evidence is a JSON object, it passes the ledger's bounds, and the scaler's writer is never
// allowed a row that is not a metered period, activation or deactivation under "metered/".
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
    if (!gpuvpa::ValidateLedgerAction(*action).ok()) std::abort();
    const gpuvpa::LedgerWriter* scaler = gpuvpa::LedgerWriterNamed("gpuvpa-scaler");
    const bool scalers = action->action_id.starts_with("metered/") &&
                         (action->kind == gpuvpa::ActionKind::kMeteredPeriod ||
                          action->kind == gpuvpa::ActionKind::kActivation ||
                          action->kind == gpuvpa::ActionKind::kDeactivation);
    if (gpuvpa::AuthorizeLedgerRows(*scaler, std::span(&*action, 1)).ok() != scalers) std::abort();
  }
  return 0;
}
