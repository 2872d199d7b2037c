// Rolling back a change that went wrong (workload_change.h has the whole story): within a window
// after a change, a new pod of the workload with a CUDA OOM (the container's termination
// message, an OOMKilled container), CrashLoopBackOff, or a CUDA OOM the recommender counted
// since the change restores what was replaced, records a `rollback` row (before and after
// reversed: showback's realised savings are net of it) and an Event, and returns the VRAM
// floor for the status (the CUDA OOM bump rule over the failed capacity).
#pragma once

#include <functional>
#include <string>

#include "updater/kube/workload_change.h"

namespace gpuvpa::updater {

struct RollbackOutcome {
  bool rolled_back = false;
  std::string reason;
  std::string withheld;  // a rollback was due but not written (mode, production, opt-out): why
  double vram_floor_bytes = 0;
  AppliedChange change;
};

// The recommendation of a container of the workload now, or null.
using CurrentRecommendation = std::function<const v1::Recommendation*(const std::string&)>;

// Checks the workload's last applied change (if any, and younger than `window_s`) against its
// new pods and the changed container's recommendation now, and rolls it back when it failed.
// A rollback is a write like any other: only in mode Auto, only past the production guard, and
// only from an annotation whose signature verifies under ctx.change_key (else an error).
// `listed`: the workload as a list of its namespace returned it this cycle, or null to read it.
Result<RollbackOutcome> CheckRollback(ChangeContext& ctx, UpdateMode mode, const std::string& ns,
                                      const std::string& kind, const std::string& name,
                                      const CurrentRecommendation& current, double window_s,
                                      double now_s, const nlohmann::json* listed = nullptr);

}  // namespace gpuvpa::updater
