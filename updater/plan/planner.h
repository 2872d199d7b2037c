// The planner: for each workload-container, the cheapest action that fits both its VRAM target
// and its SM need, priced with the price book, under the namespace's policy. Candidates, all
// priced per month for the pods the workload runs on average:
//   - a MIG profile of the node's GPU model: usable memory >= the VRAM target and compute
//     slices >= ceil(SM need x 7); priced by its binding slice fraction;
//   - a time-sliced share (1/N of a GPU), only on a model without MIG (no memory isolation, so
//     the target must fit in 1/N of the device and the SM need in 1/N of its time);
//   - another GPU model the policy allows (smaller and cheaper, or larger when the workload
//     needs more memory than its GPU has);
//   - fewer whole GPUs for a pod whose extra devices never work;
//   - scale to zero (a KEDA ScaledObject on gpuvpa's scaler) when the workload is busy a small
//     share of its time and idle for whole hours at a stretch.
// Never MIG or a share for a pod that keeps two or more GPUs busy (NCCL does not cross MIG
// instances), never a VRAM action for a pool allocator (its residency is its configuration),
// nothing below the minimum history or confidence.
#pragma once

#include <string>
#include <vector>

#include "core/cost/money.h"
#include "core/cost/price_book.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "proto/gpuvpa.pb.h"
#include "updater/plan/policy.h"

namespace gpuvpa::updater {

enum class PlanKind {
  kNoChange,     // withheld or nothing cheaper fits: `reason` says which
  kMigProfile,   // a MIG instance of the node's GPU model
  kSharedGpu,    // a time-sliced share of a GPU
  kGpuModel,     // another GPU model the policy allows
  kFewerGpus,    // fewer whole GPUs per pod
  kScaleToZero,  // 0 replicas while the queue is empty (KEDA), at `to_allocation` when active
};
std::string_view PlanKindName(PlanKind kind);

// The workload annotation (in the policy's workload_annotations) naming the Redis list a
// workload consumes: the queue a proposed ScaledObject scales it by.
inline constexpr std::string_view kQueueListAnnotation = "gpuvpa.io/queue-list";

enum class Risk { kLow, kMedium, kHigh };
std::string_view RiskName(Risk risk);

struct PlannedAction {
  v1::Recommendation evidence;  // the recommendation (identity, percentiles, peaks, history)
  PlanKind kind = PlanKind::kNoChange;
  // Under a scale-to-zero, the resize that comes with it (kNoChange: the size stays).
  PlanKind resize_kind = PlanKind::kNoChange;
  std::string reason;
  UpdateMode mode = UpdateMode::kReport;
  bool production = false;
  bool auto_apply = false;      // mode Auto, not production, and a change to make
  std::string from_allocation;  // canonical (core/gpu/gpu_allocation.h)
  std::string to_allocation;    // == from_allocation when the size stays
  std::string from_model;
  std::string to_model;
  double vram_target_bytes = 0;
  double sm_need_gpu_fraction = 0;  // SM p90 as a share of one whole GPU, per GPU of the pod
  int gpus_per_pod = 1;             // whole GPUs the pod holds today (1 for a part of one)
  // The share of physical GPUs one pod of `to_allocation` holds (what metering charges per
  // replica): 0.25 for a 1/4 share, the slice fraction of a MIG instance, N for N whole GPUs.
  double to_gpu_per_pod = 1;
  // The Redis list a scale-to-zero is driven by (policy workload annotation
  // gpuvpa.io/queue-list); "" when no queue is known: then the proposal is an idle-timeout
  // scale-down, and no ScaledObject is generated.
  std::string queue_list;
  int sm_slices_needed = 0;           // of 7
  double to_vram_capacity_bytes = 0;  // what one unit of to_allocation holds
  // (capacity - target) / capacity: how much room the target leaves inside the pick.
  double headroom_ratio = 0;
  Risk risk = Risk::kLow;
  std::string risk_reason;
  bool priced = false;
  MicroUsd monthly_before = 0;
  MicroUsd monthly_after = 0;
  double pods = 1;  // pods priced (average over the history, at least one)

  bool changes() const { return kind != PlanKind::kNoChange; }
  double sm_need_gpus_total() const { return sm_need_gpu_fraction * gpus_per_pod; }
  MicroUsd monthly_savings() const { return monthly_before - monthly_after; }
};

class Planner {
 public:
  Planner(const GpuCatalog& catalog, const PriceBook& prices, std::string region,
          UpdaterPolicy policy);

  PlannedAction Plan(const v1::Recommendation& recommendation) const;
  // Every workload whose mode is not Off, in input order.
  std::vector<PlannedAction> PlanAll(const std::vector<v1::Recommendation>& recommendations) const;

  const UpdaterPolicy& policy() const { return policy_; }

 private:
  struct Candidate;
  void AddMigCandidates(const PlannedAction& a, const GpuModel& model, const GpuAllocation& from,
                        std::vector<Candidate>& out) const;
  void AddShareCandidates(const PlannedAction& a, const GpuModel& model, double from_fraction,
                          std::vector<Candidate>& out) const;
  void AddModelCandidates(const PlannedAction& a, const GpuModel& model, bool needs_larger,
                          std::vector<Candidate>& out) const;
  Result<MicroUsd> MonthlyCost(const GpuAllocation& allocation, const std::string& model,
                               double pods) const;
  bool QualifiesForScaleToZero(const v1::Recommendation& r) const;
  // The steps of Plan: what could replace the allocation (why_none: why nothing), the cheapest
  // of them worth the change, the risk of the change chosen.
  std::vector<Candidate> CandidatesFor(const PlannedAction& a, const v1::Recommendation& r,
                                       const GpuModel& model, const GpuAllocation& from,
                                       const AllocationUnit& unit, std::string& why_none) const;
  const Candidate* Cheapest(const PlannedAction& a, const v1::Recommendation& r,
                            const std::vector<Candidate>& candidates, MicroUsd& best_cost) const;
  static void AssessRisk(PlannedAction& a, const v1::Recommendation& r);

  const GpuCatalog& catalog_;
  const PriceBook& prices_;
  std::string region_;
  UpdaterPolicy policy_;
};

}  // namespace gpuvpa::updater
