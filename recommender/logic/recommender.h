// From a workload's histograms and evidence to a Recommendation: VRAM target and bounds, SM
// need, duty cycle, idle gaps, idle tax, confidence, and the pool-allocator flag.
#pragma once

#include <memory>
#include <vector>

#include "recommender/logic/estimator.h"
#include "recommender/logic/recommendation.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {

struct RecommenderOptions {
  // VRAM overflows are CUDA OOMs, not throttling: aim high (p98) and bound with p50 / p99.
  double vram_target_percentile = 0.98;
  double vram_lower_percentile = 0.50;
  double vram_upper_percentile = 0.99;
  double safety_margin = 0.15;  // as VPA, on the lower and upper bounds
  // The target's margin follows the variation of the hourly peaks, (p98 - p50) / p98: a flat
  // series gets the minimum, a swinging one up to the maximum (see README, "Choosing the VRAM
  // target", for the backtests these come from).
  double target_margin_min = 0.15;
  double target_margin_gain = 0;
  double target_margin_max = 0.15;
  // Below this no CUDA context fits; never recommend less.
  double min_vram_bytes = 256.0 * 1024 * 1024;
  // No recommendation (evidence only) with less history than this.
  double min_history_s = 24 * 3600.0;
  // VPA's confidence multipliers: wide upper bound, slightly lowered lower bound, while young.
  double upper_confidence_multiplier = 1.0;
  double upper_confidence_exponent = 1.0;
  double lower_confidence_multiplier = 0.001;
  double lower_confidence_exponent = -2.0;
  // Pool allocators (vLLM and friends reserve ~90 % of VRAM at start): residency is flat and
  // high while compute is low. Flat: (p98 - p10) / p98 at or below this.
  double pool_flat_spread_ratio = 0.10;
  // High: median residency at or above this share of the allocation's VRAM.
  double pool_high_vram_ratio = 0.75;
  // Low compute: SM p90 at or below this.
  double pool_low_sm_p90 = 0.50;
  // A device of a multi-GPU pod is busy when active in at least this share of its samples or
  // holding more than this much VRAM (a CUDA context alone is ~0.3-0.5 GiB).
  double busy_device_min_active_share = 0.01;
  double busy_device_min_vram_bytes = 1024.0 * 1024 * 1024;
};

class Recommender {
 public:
  explicit Recommender(RecommenderOptions options = {});

  Recommendation Recommend(const FleetStore& store, uint32_t row) const;
  // One recommendation per tracked workload-container, in store order.
  std::vector<Recommendation> RecommendAll(const FleetStore& store) const;

  const RecommenderOptions& options() const { return options_; }

 private:
  // Running-sum buffers sized for the store's histograms, reused across a fleet pass.
  struct Scratch {
    std::vector<double> vram_cumulative;
    std::vector<double> sm_cumulative;
  };
  Recommendation Recommend(const FleetStore& store, uint32_t row, Scratch& scratch) const;
  // The most series one pod has (the GPUs it holds) and the most of them one pod keeps busy
  // (DeviceCursor::Busy), in one pass over the series.
  struct PodDevices {
    size_t devices = 0;
    uint32_t busy = 0;
  };
  PodDevices MostDevicesPerPod(const WorkloadState& st) const;

  RecommenderOptions options_;
  std::unique_ptr<Estimator> vram_target_;
  std::unique_ptr<Estimator> vram_lower_;
  std::unique_ptr<Estimator> vram_upper_;
  std::unique_ptr<Estimator> vram_p10_;
  std::unique_ptr<Estimator> vram_p50_;
  std::unique_ptr<Estimator> vram_p98_;
  std::unique_ptr<Estimator> sm_p90_;
  std::unique_ptr<Estimator> sm_p99_;
};

}  // namespace gpuvpa::recommender
