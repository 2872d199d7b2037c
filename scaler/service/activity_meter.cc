// Activity metering.
#include "scaler/service/activity_meter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/base/atomic_file.h"
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
                std::to_string(static_cast<int64_t>(std::round(p.start_s * 1000)));
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
      inner_ledger_(ledger),
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

MeteredPeriod ActivityMeter::PeriodOf(const Meter& m, double end_s) const {
  MeteredPeriod period;
  period.namespace_name = m.config.namespace_name;
  period.scaled_object = m.config.name;
  period.cost_center = m.config.cost_center;
  period.gpu_model = m.config.gpu_model;
  period.start_s = m.row_start_s;
  period.end_s = end_s;
  period.gpu_seconds = m.replica_seconds * m.config.gpu_per_replica;
  period.reserved_gpu_seconds =
      (end_s - m.row_start_s) * m.peak_replicas * m.config.gpu_per_replica;
  period.evidence = {{"replica_seconds", m.replica_seconds},
                     {"peak_replicas", m.peak_replicas},
                     {"gpu_per_replica", m.config.gpu_per_replica}};
  return period;
}

Result<LedgerAction> ActivityMeter::PricedRow(const MeteredPeriod& period) const {
  Result<double> price =
      period.gpu_model.empty()
          ? Result<double>(InvalidArgumentError("no gpuModel in the trigger metadata"))
          : prices_.GpuHourPrice(period.gpu_model, options_.region);
  if (!price.ok()) return price.status();
  return MeteredPeriodRow(period, *price);
}

bool ActivityMeter::WriteRowLocked(Meter& m, double now) {
  const double gpu_seconds = m.replica_seconds * m.config.gpu_per_replica;
  if (ledger_ != nullptr && now > m.row_start_s) {
    Result<LedgerAction> row = PricedRow(PeriodOf(m, now));
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
      if (metrics_ != nullptr) metrics_->MeteredUsd(row->cost_center, row->metered);
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
  // Every period is closed: nothing for the next start to recover.
  if (!options_.open_periods_path.empty() && FileExists(options_.open_periods_path) &&
      std::remove(options_.open_periods_path.c_str()) != 0)
    return ErrnoError("remove " + options_.open_periods_path, errno);
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
  if (!options_.open_periods_path.empty() &&
      now - open_periods_saved_s_ >= static_cast<double>(options_.open_periods_interval.count()))
    if (Status s = SaveOpenPeriodsLocked(now); !s.ok())
      spdlog::error("open metering periods not saved: {}", s.message());
}

Status ActivityMeter::SaveOpenPeriods() {
  std::lock_guard<std::mutex> lock(mu_);
  return SaveOpenPeriodsLocked(clock_());
}

Status ActivityMeter::SaveOpenPeriodsLocked(double now) {
  if (options_.open_periods_path.empty()) return OkStatus();
  nlohmann::json periods = nlohmann::json::array();
  for (auto& [key, m] : meters_) {
    AccrueLocked(m, now);
    if (m.replica_seconds <= 0 || now <= m.row_start_s) continue;
    const MeteredPeriod p = PeriodOf(m, now);
    periods.push_back({{"namespace", p.namespace_name},
                       {"scaled_object", p.scaled_object},
                       {"cost_center", p.cost_center},
                       {"gpu_model", p.gpu_model},
                       {"start_s", p.start_s},
                       {"end_s", p.end_s},
                       {"gpu_seconds", p.gpu_seconds},
                       {"reserved_gpu_seconds", p.reserved_gpu_seconds},
                       {"evidence", p.evidence}});
  }
  const nlohmann::json doc = {{"version", 1}, {"saved_at_s", now}, {"periods", periods}};
  GPUVPA_RETURN_IF_ERROR(WriteFileAtomically(options_.open_periods_path, doc.dump()));
  open_periods_saved_s_ = now;
  return OkStatus();
}

Result<size_t> ActivityMeter::RecoverOpenPeriods() {
  const std::string& path = options_.open_periods_path;
  if (path.empty() || !FileExists(path)) return size_t{0};
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  std::vector<MeteredPeriod> periods;
  try {
    const nlohmann::json doc = nlohmann::json::parse(*text);
    if (doc.at("version").get<int>() != 1)
      throw std::runtime_error("version " + doc.at("version").dump() + " is not 1");
    for (const nlohmann::json& j : doc.at("periods")) {
      MeteredPeriod p;
      p.namespace_name = j.at("namespace").get<std::string>();
      p.scaled_object = j.at("scaled_object").get<std::string>();
      p.cost_center = j.at("cost_center").get<std::string>();
      p.gpu_model = j.at("gpu_model").get<std::string>();
      p.start_s = j.at("start_s").get<double>();
      p.end_s = j.at("end_s").get<double>();
      p.gpu_seconds = j.at("gpu_seconds").get<double>();
      p.reserved_gpu_seconds = j.at("reserved_gpu_seconds").get<double>();
      p.evidence = j.at("evidence");
      p.evidence["recovered"] = "saved open period of a run that ended without closing it";
      periods.push_back(std::move(p));
    }
  } catch (const std::exception& e) {
    const std::string aside = path + ".corrupt";
    std::rename(path.c_str(), aside.c_str());
    spdlog::error("open metering periods {} not readable ({}); moved aside to {}", path, e.what(),
                  aside);
    return DataLossError("open metering periods " + path + ": " + e.what());
  }
  size_t written = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const MeteredPeriod& p : periods) {
    Result<LedgerAction> row = PricedRow(p);
    if (!row.ok()) {
      spdlog::warn("recovered period of {}/{}: {} GPU-seconds not charged: {}", p.namespace_name,
                   p.scaled_object, p.gpu_seconds, row.status().message());
      continue;
    }
    if (ledger_ == nullptr) continue;
    // The ledger itself first: a period whose row the earlier run wrote after saving it has
    // that row's id (ALREADY_EXISTS) and is not charged twice. The spool takes it otherwise.
    Result<size_t> added = inner_ledger_->Append(*row);
    if (!added.ok() && added.status().code() == StatusCode::kAlreadyExists) {
      spdlog::info("recovered period {} was closed by the earlier run already", row->action_id);
      continue;
    }
    if (!added.ok()) added = ledger_->Append(*row);
    if (added.ok()) {
      written += *added;
    } else {
      return Status(added.status().code(), "recovered period " + row->action_id +
                                               " reached neither the ledger nor the spool (kept "
                                               "for the next start): " +
                                               added.status().message());
    }
  }
  if (std::remove(path.c_str()) != 0) return ErrnoError("remove " + path, errno);
  return written;
}

Result<size_t> ActivityMeter::MoveSpooled() {
  return spooling_ ? spooling_->MoveSpooled() : Result<size_t>(size_t{0});
}

size_t ActivityMeter::meters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return meters_.size();
}

uint64_t ActivityMeter::spooled_rows() const { return spooling_ ? spooling_->spooled_rows() : 0; }
uint64_t ActivityMeter::dead_lettered_rows() const {
  return spooling_ ? spooling_->dead_lettered_rows() : 0;
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
