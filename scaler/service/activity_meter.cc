// Activity metering.
#include "scaler/service/activity_meter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/cost/money.h"

namespace gpuvpa::scaler {
namespace {
const std::string kUnallocatedCostCenter = "unallocated";
}  // namespace

ActivityMeter::Clock ActivityMeter::DefaultClock() {
  return [] { return UnixNowSeconds(); };
}

Result<LedgerAction> MeteredPeriodRow(const MeteredPeriod& p, double usd_per_gpu_hour) {
  Result<MilliGpuSeconds> metered_time = GpuSecondsToMilli(p.gpu_seconds);
  if (!metered_time.ok()) return metered_time.status();
  Result<MicroUsd> metered = PriceGpuTime(*metered_time, usd_per_gpu_hour);
  if (!metered.ok()) return metered.status();
  Result<MicroUsd> reserved = PriceGpuSeconds(p.reserved_gpu_seconds, usd_per_gpu_hour);
  if (!reserved.ok()) return reserved.status();
  LedgerAction a;
  a.action_id = "metered/" + EncodeIdParts({p.namespace_name, p.scaled_object}) + "/" +
                std::to_string(static_cast<int64_t>(std::round(p.start_s * 1000))) + "-" +
                std::to_string(static_cast<int64_t>(std::round(p.end_s * 1000)));
  a.time_s = static_cast<int64_t>(p.end_s);
  a.kind = ActionKind::kMeteredPeriod;
  a.status = ActionStatus::kApplied;
  a.namespace_name = p.namespace_name;
  a.workload = "ScaledObject/" + p.scaled_object;
  a.cost_center = p.cost_center;
  a.gpu_model = p.gpu_model;
  a.period_start_s = static_cast<int64_t>(p.start_s);
  a.period_end_s = static_cast<int64_t>(p.end_s);
  a.metered_gpu_time = *metered_time;
  a.metered = *metered;
  a.reserved = *reserved;
  nlohmann::json evidence = p.evidence.is_object() ? p.evidence : nlohmann::json::object();
  evidence["usd_per_gpu_hour"] = usd_per_gpu_hour;
  a.evidence_json = evidence.dump();
  return a;
}

ActivityMeter::ActivityMeter(ActivityMeterOptions options, LedgerSink* ledger,
                             const PriceBook& prices, Clock clock, ScalerMetrics* metrics)
    : options_(std::move(options)),
      ledger_(ledger),
      prices_(prices),
      clock_(std::move(clock)),
      metrics_(metrics) {
  // Rows go through the spooling sink when there is a spool: what the ledger refuses waits
  // there and is moved once it takes rows again.
  if (ledger_ != nullptr && !options_.spool_path.empty()) {
    spooling_.emplace(*ledger_, options_.spool_path);
    ledger_ = &*spooling_;
  }
}

void ActivityMeter::AccrueLocked(Meter& m, double now) {
  const double held = std::min(now - m.last_s, static_cast<double>(options_.max_hold.count()));
  if (held > 0) {
    const double replica_seconds = m.replicas * held;
    m.replica_seconds += replica_seconds;
    // Bounded: past 4,096 distinct cost centers, new ones add up under "unallocated".
    const bool known = gpu_seconds_by_cost_center_.contains(m.config.cost_center);
    const std::string& key = known || gpu_seconds_by_cost_center_.size() < 4096
                                 ? m.config.cost_center
                                 : kUnallocatedCostCenter;
    gpu_seconds_by_cost_center_[key] += replica_seconds * m.config.gpu_per_replica;
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
  if (meters_.size() >= options_.max_meters && !meters_.contains(key)) {
    // Close the period of the meter read longest ago; keep it if its row could not be written.
    auto oldest = std::min_element(
        meters_.begin(), meters_.end(),
        [](const auto& a, const auto& b) { return a.second.last_s < b.second.last_s; });
    AccrueLocked(oldest->second, now);
    if (WriteRowLocked(oldest->second, now)) ForgetLocked(oldest);
  }
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

void ActivityMeter::ForgetLocked(std::map<std::string, Meter, std::less<>>::iterator it) {
  if (it->second.replicas > 0) {
    --active_;
    if (metrics_ != nullptr) metrics_->SetActiveScaledObjects(static_cast<double>(active_));
  }
  meters_.erase(it);
}

bool ActivityMeter::WriteRowLocked(Meter& m, double now) {
  const double gpu_seconds = m.replica_seconds * m.config.gpu_per_replica;
  const double reserved_gpu_seconds =
      (now - m.row_start_s) * m.peak_replicas * m.config.gpu_per_replica;
  if (ledger_ != nullptr && now > m.row_start_s) {
    Result<double> price =
        m.config.gpu_model.empty()
            ? Result<double>(InvalidArgumentError("no gpuModel in the trigger metadata"))
            : prices_.GpuHourPrice(m.config.gpu_model, options_.region);
    MeteredPeriod period;
    period.namespace_name = m.config.namespace_name;
    period.scaled_object = m.config.name;
    period.cost_center = m.config.cost_center;
    period.gpu_model = m.config.gpu_model;
    period.start_s = m.row_start_s;
    period.end_s = now;
    period.gpu_seconds = gpu_seconds;
    period.reserved_gpu_seconds = reserved_gpu_seconds;
    period.evidence = {{"replica_seconds", m.replica_seconds},
                       {"peak_replicas", m.peak_replicas},
                       {"gpu_per_replica", m.config.gpu_per_replica}};
    Result<LedgerAction> row =
        price.ok() ? MeteredPeriodRow(period, *price) : Result<LedgerAction>(price.status());
    if (!row.ok()) {
      spdlog::warn("metering {}/{}: {} GPU-seconds not charged: {}", m.config.namespace_name,
                   m.config.name, gpu_seconds, row.status().message());
    } else {
      // Spooled or written: either way it is kept (the spooling sink logs a spooled row).
      if (Result<size_t> added = ledger_->Append(*row); !added.ok()) {
        spdlog::error(
            "metering {}/{}: the row could be written neither to the ledger nor to a spool ({}); "
            "the period stays open and is retried",
            m.config.namespace_name, m.config.name, added.status().message());
        return false;  // nothing is lost yet: the period stays open and is written later
      }
    }
  }
  m.row_start_s = now;
  m.replica_seconds = 0;
  m.peak_replicas = m.replicas;
  return true;
}

Status ActivityMeter::FlushAll() {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = clock_();
  size_t lost = 0;
  for (auto& [key, m] : meters_) {
    AccrueLocked(m, now);
    if (!WriteRowLocked(m, now)) ++lost;
  }
  if (lost > 0)
    return UnavailableError(std::to_string(lost) +
                            " metered periods could be written neither to the ledger nor to "
                            "the spool");
  return OkStatus();
}

void ActivityMeter::EvictIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = clock_();
  for (auto it = meters_.begin(); it != meters_.end();) {
    auto next = std::next(it);
    if (now - it->second.last_s > static_cast<double>(options_.idle.count())) {
      AccrueLocked(it->second, now);
      if (WriteRowLocked(it->second, now)) ForgetLocked(it);
    }
    it = next;
  }
  if (spooling_) (void)spooling_->MoveSpooled();  // logs what it moves or sets aside
}

Result<size_t> ActivityMeter::MoveSpooled() {
  return spooling_ ? spooling_->MoveSpooled() : Result<size_t>(size_t{0});
}

size_t ActivityMeter::meters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return meters_.size();
}

uint64_t ActivityMeter::spooled_rows() const { return spooling_ ? spooling_->spooled_rows() : 0; }

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
