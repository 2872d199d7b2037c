// Activity metering.
#include "scaler/service/activity_meter.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/cost/money.h"

namespace gpuvpa::scaler {

ActivityMeter::Clock ActivityMeter::DefaultClock() {
  return [] { return UnixNowSeconds(); };
}

ActivityMeter::ActivityMeter(ActivityMeterOptions options, Ledger* ledger, const PriceBook& prices,
                             std::ostream& log, Clock clock, ScalerMetrics* metrics)
    : options_(std::move(options)),
      ledger_(ledger),
      prices_(prices),
      log_(log),
      clock_(std::move(clock)),
      metrics_(metrics) {}

void ActivityMeter::AccrueLocked(Meter& m, double now) {
  const double held = std::min(now - m.last_s, static_cast<double>(options_.max_hold.count()));
  if (held > 0) {
    const double replica_seconds = m.replicas * held;
    m.replica_seconds += replica_seconds;
    gpu_seconds_by_cost_center_[m.config.cost_center] += replica_seconds * m.config.gpu_per_replica;
    if (metrics_ != nullptr)
      metrics_->MeteredGpuSeconds(m.config.cost_center, replica_seconds * m.config.gpu_per_replica);
  }
  m.last_s = now;
}

void ActivityMeter::OnDepth(const ScaledObjectConfig& config, double depth) {
  const double now = clock_();
  const int replicas = config.IsActive(depth) ? std::max(1, config.DesiredReplicas(depth)) : 0;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = config.namespace_name + "/" + config.name;
  auto [it, fresh] = meters_.try_emplace(key);
  Meter& m = it->second;
  if (fresh) {
    m.config = config;
    m.row_start_s = m.last_s = now;
  }
  AccrueLocked(m, now);
  const bool scaled_to_zero = m.replicas > 0 && replicas == 0;
  if ((m.replicas > 0) != (replicas > 0)) {
    active_ = replicas > 0 ? active_ + 1 : active_ - 1;
    if (metrics_ != nullptr) metrics_->SetActiveScaledObjects(static_cast<double>(active_));
  }
  m.config = config;
  m.replicas = replicas;
  m.peak_replicas = std::max(m.peak_replicas, replicas);
  if (scaled_to_zero || now - m.row_start_s >= static_cast<double>(options_.flush_interval.count()))
    WriteRowLocked(m, now);
}

void ActivityMeter::WriteRowLocked(Meter& m, double now) {
  const double gpu_seconds = m.replica_seconds * m.config.gpu_per_replica;
  const double reserved_gpu_seconds =
      (now - m.row_start_s) * m.peak_replicas * m.config.gpu_per_replica;
  if (ledger_ != nullptr && now > m.row_start_s) {
    Result<double> price =
        m.config.gpu_model.empty()
            ? Result<double>(InvalidArgumentError("no gpuModel in the trigger metadata"))
            : prices_.GpuHourPrice(m.config.gpu_model, options_.region);
    Result<MilliGpuSeconds> metered_time =
        price.ok() ? GpuSecondsToMilli(gpu_seconds) : Result<MilliGpuSeconds>(price.status());
    Result<MicroUsd> metered = metered_time.ok() ? PriceGpuTime(*metered_time, *price)
                                                 : Result<MicroUsd>(metered_time.status());
    Result<MicroUsd> reserved = metered.ok() ? PriceGpuSeconds(reserved_gpu_seconds, *price)
                                             : Result<MicroUsd>(metered.status());
    if (!reserved.ok()) {
      log_ << "metering: " << m.config.namespace_name << "/" << m.config.name << ": " << gpu_seconds
           << " GPU-seconds not charged: " << reserved.status().message() << "\n";
    } else {
      LedgerAction a;
      a.action_id = "metered/" + EncodeIdParts({m.config.namespace_name, m.config.name}) + "/" +
                    std::to_string(static_cast<int64_t>(std::round(m.row_start_s * 1000))) + "-" +
                    std::to_string(static_cast<int64_t>(std::round(now * 1000)));
      a.time_s = static_cast<int64_t>(now);
      a.kind = ActionKind::kMeteredPeriod;
      a.status = ActionStatus::kApplied;
      a.namespace_name = m.config.namespace_name;
      a.workload = "ScaledObject/" + m.config.name;
      a.cost_center = m.config.cost_center;
      a.gpu_model = m.config.gpu_model;
      a.period_start_s = static_cast<int64_t>(m.row_start_s);
      a.period_end_s = static_cast<int64_t>(now);
      a.metered_gpu_time = *metered_time;
      a.metered = *metered;
      a.reserved = *reserved;
      a.evidence_json = nlohmann::json{
          {"replica_seconds", m.replica_seconds},
          {"peak_replicas", m.peak_replicas},
          {"gpu_per_replica", m.config.gpu_per_replica},
          {"usd_per_gpu_hour",
           *price}}.dump();
      if (Result<size_t> added = ledger_->Append(a); !added.ok()) {
        log_ << "metering: " << added.status().message()
             << " (kept; retried at the next period end)\n";
        return;  // nothing is lost: the period stays open and is written later
      }
    }
  }
  m.row_start_s = now;
  m.replica_seconds = 0;
  m.peak_replicas = m.replicas;
}

void ActivityMeter::FlushAll() {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = clock_();
  for (auto& [key, m] : meters_) {
    AccrueLocked(m, now);
    WriteRowLocked(m, now);
  }
}

double ActivityMeter::metered_gpu_seconds(const std::string& cost_center) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gpu_seconds_by_cost_center_.find(cost_center);
  return it == gpu_seconds_by_cost_center_.end() ? 0 : it->second;
}

size_t ActivityMeter::active_scaled_objects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

}  // namespace gpuvpa::scaler
