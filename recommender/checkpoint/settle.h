// Settling a pass over new samples: the one sequence that keeps the ledger exactly once, used by
// `gpuvpa recommend` and by the gpuvpa-recommender daemon alike.
//
//   1. forget workloads that aged out (none with usage still pending charge);
//   2. recommend every workload-container;
//   3. charge the pending usage to the ledger: the rows and their series' charge marks in one
//      transaction; then mark the store charged;
//   4. save the checkpoint.
//
// Ledger first, checkpoint second: a crash between 3 and 4 replays samples whose charge marks
// the ledger holds, so nothing is charged twice and nothing is lost.
//
// The failure policy, the same for both callers: a ledger that refuses the charge leaves the
// usage pending in the store, and the checkpoint is still saved (pending usage is part of it);
// the next pass charges it. A checkpoint that cannot be written leaves the previous file in
// place (atomic replace). Each failure is returned, not hidden: the command exits 1, the daemon
// reports the poll as failed.
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cost/ledger.h"
#include "core/cost/price_book.h"
#include "recommender/checkpoint/checkpoint.h"
#include "recommender/logic/recommender.h"
#include "recommender/logic/usage_charges.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct SettleOptions {
  const PriceBook* prices = nullptr;
  std::string region;
  Ledger* ledger = nullptr;     // null: nothing is charged (the usage stays pending)
  std::string checkpoint_path;  // empty: no checkpoint this pass
  double now_s = 0;             // the checkpoint's save time
  bool charge = true;           // false: not this pass (the usage stays pending)
  // Set: step 4 encodes the store and leaves the save to this writer (checkpoint_path unused).
  CheckpointWriter* checkpoint_writer = nullptr;
};

// Where a pass's time went (wall seconds), for the daemon's log and the cycle bench.
struct SettleTimings {
  double recommend_s = 0;   // steps 1 and 2
  double ledger_s = 0;      // step 3
  double checkpoint_s = 0;  // step 4
};

struct Settled {
  size_t forgotten = 0;  // workload-containers dropped in step 1
  std::vector<Recommendation> recommendations;
  Status ledger;         // step 3: OK, or why the usage stays pending
  LedgerCharge charged;  // what step 3 charged (empty unless ledger is OK)
  Status checkpoint;     // step 4: OK (or not asked for), or why the file was not written
  bool checkpoint_saved = false;
  bool checkpoint_submitted = false;  // handed to the writer (its outcome says how it went)
  SettleTimings timings;
};

Settled Settle(FleetStore& store, const Recommender& recommender, const SettleOptions& options);

}  // namespace gpuvpa::recommender
