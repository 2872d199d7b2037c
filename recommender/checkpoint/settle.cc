// Forget, recommend, charge, mark, checkpoint: in this order only (settle.h).
#include "recommender/checkpoint/settle.h"

#include <chrono>

#include "recommender/checkpoint/checkpoint.h"

namespace gpuvpa::recommender {
namespace {

// Seconds since `since`; restarts `since` at now.
double Lap(std::chrono::steady_clock::time_point& since) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - since).count();
  since = now;
  return s;
}

}  // namespace

Settled Settle(FleetStore& store, const Recommender& recommender, const SettleOptions& options) {
  Settled out;
  auto lap = std::chrono::steady_clock::now();
  out.forgotten = store.ForgetStale(store.newest_sample_s());
  out.recommendations = recommender.RecommendAll(store);
  out.timings.recommend_s = Lap(lap);
  if (options.charge && options.ledger != nullptr && options.prices != nullptr) {
    Result<LedgerCharge> charged = ChargeToLedger(store, out.recommendations, *options.prices,
                                                  options.region, *options.ledger);
    if (charged.ok())
      out.charged = std::move(charged).value();
    else
      out.ledger = charged.status();
  }
  out.timings.ledger_s = Lap(lap);
  if (options.checkpoint_writer != nullptr) {
    options.checkpoint_writer->Submit(store, options.now_s);
    out.checkpoint_submitted = true;
  } else if (!options.checkpoint_path.empty()) {
    out.checkpoint = SaveCheckpoint(store, options.checkpoint_path, options.now_s);
    out.checkpoint_saved = out.checkpoint.ok();
  }
  out.timings.checkpoint_s = Lap(lap);
  return out;
}

}  // namespace gpuvpa::recommender
