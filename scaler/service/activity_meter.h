// Per-second metering of scaler-driven workloads: every depth the scaler reads for a
// ScaledObject gives KEDA's replica estimate (ceil(depth / target) capped at maxReplicas while
// active, 0 when not), held until the next read. Replica-seconds x GPUs per replica are written
// to the ledger as priced metered_period rows under the ScaledObject's cost center, one row per
// period that ends when the workload scales to zero or when the flush interval passes, next to
// what the reservation it replaces (its peak replica count, always on) would have cost.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/cost/ledger.h"
#include "core/cost/ledger_spool.h"
#include "core/cost/price_book.h"
#include "scaler/service/external_scaler_service.h"

namespace gpuvpa::scaler {

struct ActivityMeterOptions {
  std::chrono::seconds flush_interval{3600};
  // A silence longer than this (KEDA stopped polling, the scaler restarted) is not charged past
  // this much: the estimate is held only while reads keep coming.
  std::chrono::seconds max_hold{300};
  std::string region;
  // Rows the ledger refuses (disk full, volume gone, the ledger service down) go here, durably
  // (SpoolingLedgerSink), and are moved to the ledger once it takes rows again. Empty: no spool
  // (a refused row keeps its period open).
  std::string spool_path;
  size_t max_meters = 20000;       // ScaledObjects metered at once; the oldest is closed beyond
  std::chrono::seconds idle{900};  // a meter not read this long is closed and forgotten
  // The open periods are saved here (atomically) at most this often, from the housekeeping, so
  // a SIGKILL loses at most this much metered time per ScaledObject (times its replicas): the
  // next start writes the saved periods as rows (RecoverOpenPeriods). Empty: not saved.
  std::string open_periods_path;
  std::chrono::seconds open_periods_interval{10};
};

// A metered period of a ScaledObject, before pricing.
struct MeteredPeriod {
  std::string namespace_name;
  std::string scaled_object;
  std::string cost_center;
  std::string gpu_model;
  double start_s = 0;  // Unix seconds
  double end_s = 0;
  double gpu_seconds = 0;           // active replica-seconds x GPUs per replica
  double reserved_gpu_seconds = 0;  // what the reservation it replaces would have held
  nlohmann::json evidence = nlohmann::json::object();  // usd_per_gpu_hour is added
};
// Its priced metered_period row; an error for GPU time or money out of range. The id holds the
// namespace, the ScaledObject and the period's start in ms: a ScaledObject's periods never
// share a start, so a repeat of a period is one row, and a period recovered after a crash whose
// row the crashed run had written after all (with a later end) is refused as ALREADY_EXISTS,
// never charged twice.
Result<LedgerAction> MeteredPeriodRow(const MeteredPeriod& period, double usd_per_gpu_hour);

class ActivityMeter final : public DepthObserver {
 public:
  using Clock = std::function<double()>;  // Unix seconds
  // `ledger` may be null: GPU time is then only counted (see metered_gpu_seconds()).
  // `metrics` may be null.
  ActivityMeter(ActivityMeterOptions options, LedgerSink* ledger, const PriceBook& prices,
                Clock clock = DefaultClock(), ScalerMetrics* metrics = nullptr);

  void OnDepth(const ScaledObjectConfig& config, double depth) override;
  // Closes every open period (on shutdown). UNAVAILABLE when a row could be written neither to
  // the ledger nor to the spool: the caller must then exit non-zero.
  Status FlushAll();
  // Closes and forgets meters not read for `idle`; moves spooled rows to the ledger once it
  // takes rows again.
  void EvictIdle();
  // Moves what the spool holds (an earlier run's rows too) to the ledger now.
  Result<size_t> MoveSpooled();
  // At start: the periods an earlier run saved (open_periods_path) and could not close (it was
  // killed) become rows, ending when they were saved; then the file is removed. Returns the
  // rows written. A period whose row the earlier run wrote after saving it is already in the
  // ledger (same id): not written again. A file that cannot be read is moved aside
  // (<path>.corrupt) and said so; rows that reach neither the ledger nor the spool keep the
  // file for the next start.
  Result<size_t> RecoverOpenPeriods();
  // Saves the open periods now (the housekeeping calls it every open_periods_interval).
  Status SaveOpenPeriods();
  size_t meters() const;
  uint64_t spooled_rows() const;
  uint64_t dead_lettered_rows() const;
  double metered_gpu_seconds(const std::string& cost_center) const;
  size_t active_scaled_objects() const;

  static Clock DefaultClock();

 private:
  struct Meter {
    ScaledObjectConfig config;
    double row_start_s = 0;
    double last_s = 0;
    int replicas = 0;
    int peak_replicas = 0;
    double replica_seconds = 0;
  };
  void AccrueLocked(Meter& m, double now);
  // False when the row could be persisted nowhere (the period then stays open).
  bool WriteRowLocked(Meter& m, double now);
  void ForgetLocked(std::map<std::string, Meter, std::less<>>::iterator it);
  Status SaveOpenPeriodsLocked(double now);
  MeteredPeriod PeriodOf(const Meter& m, double end_s) const;
  // The priced row of `period`, or an error naming why it cannot be charged.
  Result<LedgerAction> PricedRow(const MeteredPeriod& period) const;

  const ActivityMeterOptions options_;
  LedgerSink* ledger_;        // what rows are appended to: the spooling sink when there is one
  LedgerSink* inner_ledger_;  // the ledger (or service) itself
  const PriceBook& prices_;
  const Clock clock_;
  ScalerMetrics* metrics_;
  mutable std::mutex mu_;
  std::map<std::string, Meter, std::less<>> meters_;  // by namespace/name
  std::map<std::string, double, std::less<>> gpu_seconds_by_cost_center_;
  size_t active_ = 0;  // meters with replicas > 0
  double open_periods_saved_s_ = 0;
  std::optional<SpoolingLedgerSink> spooling_;  // ledger_ points here when there is a spool
};

}  // namespace gpuvpa::scaler
