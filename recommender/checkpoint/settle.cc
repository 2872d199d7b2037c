// Forget, recommend, charge, mark, checkpoint: in this order only (settle.h).
#include "recommender/checkpoint/settle.h"

#include "recommender/checkpoint/checkpoint.h"

namespace gpuvpa::recommender {

Settled Settle(FleetStore& store, const Recommender& recommender, const SettleOptions& options) {
  Settled out;
  out.forgotten = store.ForgetStale(store.newest_sample_s());
  out.recommendations = recommender.RecommendAll(store);
  if (options.ledger != nullptr && options.prices != nullptr) {
    Result<LedgerCharge> charged = ChargeToLedger(store, out.recommendations, *options.prices,
                                                  options.region, *options.ledger);
    if (charged.ok())
      out.charged = std::move(charged).value();
    else
      out.ledger = charged.status();
  }
  if (!options.checkpoint_path.empty()) {
    out.checkpoint = SaveCheckpoint(store, options.checkpoint_path, options.now_s);
    out.checkpoint_saved = out.checkpoint.ok();
  }
  return out;
}

}  // namespace gpuvpa::recommender
