// Durable spool of ledger rows.
#include "core/cost/ledger_spool.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/base/atomic_file.h"
#include "core/base/crc32c.h"

namespace gpuvpa {
namespace {

nlohmann::json ToJson(const LedgerAction& a) {
  return {{"action_id", a.action_id},
          {"time_s", a.time_s},
          {"kind", ActionKindName(a.kind)},
          {"status", ActionStatusName(a.status)},
          {"namespace", a.namespace_name},
          {"workload", a.workload},
          {"cost_center", a.cost_center},
          {"gpu_model", a.gpu_model},
          {"before", a.before},
          {"after", a.after},
          {"monthly_before_micro_usd", a.monthly_before},
          {"monthly_after_micro_usd", a.monthly_after},
          {"period_start_s", a.period_start_s},
          {"period_end_s", a.period_end_s},
          {"allocated_milli_gpu_s", a.allocated_gpu_time},
          {"allocated_micro_usd", a.allocated},
          {"usage_measured", a.usage_measured},
          {"used_vram_micro_usd", a.used_vram},
          {"used_sm_micro_usd", a.used_sm},
          {"metered_milli_gpu_s", a.metered_gpu_time},
          {"metered_micro_usd", a.metered},
          {"reserved_micro_usd", a.reserved},
          {"evidence", a.evidence_json}};
}

Result<LedgerAction> FromJson(const nlohmann::json& j) {
  try {
    LedgerAction a;
    a.action_id = j.at("action_id").get<std::string>();
    a.time_s = j.at("time_s").get<int64_t>();
    Result<ActionKind> kind = ParseActionKind(j.at("kind").get<std::string>());
    Result<ActionStatus> status = ParseActionStatus(j.at("status").get<std::string>());
    if (!kind.ok()) return kind.status();
    if (!status.ok()) return status.status();
    a.kind = *kind;
    a.status = *status;
    a.namespace_name = j.at("namespace").get<std::string>();
    a.workload = j.at("workload").get<std::string>();
    a.cost_center = j.at("cost_center").get<std::string>();
    a.gpu_model = j.at("gpu_model").get<std::string>();
    a.before = j.at("before").get<std::string>();
    a.after = j.at("after").get<std::string>();
    a.monthly_before = j.at("monthly_before_micro_usd").get<int64_t>();
    a.monthly_after = j.at("monthly_after_micro_usd").get<int64_t>();
    a.period_start_s = j.at("period_start_s").get<int64_t>();
    a.period_end_s = j.at("period_end_s").get<int64_t>();
    a.allocated_gpu_time = j.at("allocated_milli_gpu_s").get<int64_t>();
    a.allocated = j.at("allocated_micro_usd").get<int64_t>();
    a.usage_measured = j.at("usage_measured").get<bool>();
    a.used_vram = j.at("used_vram_micro_usd").get<int64_t>();
    a.used_sm = j.at("used_sm_micro_usd").get<int64_t>();
    a.metered_gpu_time = j.at("metered_milli_gpu_s").get<int64_t>();
    a.metered = j.at("metered_micro_usd").get<int64_t>();
    a.reserved = j.at("reserved_micro_usd").get<int64_t>();
    a.evidence_json = j.at("evidence").get<std::string>();
    return a;
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(std::string("spooled row: ") + e.what());
  }
}

std::string Hex8(uint32_t v) {
  char buf[9];
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 7; i >= 0; --i, v >>= 4) buf[i] = kHex[v & 15];
  buf[8] = '\0';
  return buf;
}

}  // namespace

Status LedgerSpool::Append(std::span<const LedgerAction> rows) {
  std::string text;
  for (const LedgerAction& a : rows) {
    const std::string json = ToJson(a).dump();
    text += Hex8(Crc32c(json)) + " " + json + "\n";
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("spool " + path_ + ": open", errno);
  const off_t start = ::lseek(fd, 0, SEEK_END);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      // Leave no partial line behind for the rows that did not fit.
      if (start >= 0) (void)::ftruncate(fd, start);
      ::close(fd);
      return ErrnoError("spool " + path_ + ": write", err);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    if (start >= 0) (void)::ftruncate(fd, start);
    ::close(fd);
    return ErrnoError("spool " + path_ + ": fsync", err);
  }
  ::close(fd);
  return OkStatus();
}

Result<std::vector<LedgerAction>> LedgerSpool::Read(size_t* torn_lines) const {
  std::vector<LedgerAction> rows;
  if (torn_lines != nullptr) *torn_lines = 0;
  if (!FileExists(path_)) return rows;
  Result<std::string> text = ReadWholeFile(path_);
  if (!text.ok()) return text.status();
  std::string_view rest = *text;
  size_t line_no = 0;
  while (!rest.empty()) {
    ++line_no;
    const size_t nl = rest.find('\n');
    const bool last = nl == std::string_view::npos;
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(last ? rest.size() : nl + 1);
    uint32_t crc = 0;
    bool ok = line.size() > 9 && line[8] == ' ' &&
              std::from_chars(line.data(), line.data() + 8, crc, 16).ptr == line.data() + 8 &&
              Crc32c(line.substr(9)) == crc;
    Result<LedgerAction> row = DataLossError("bad checksum");
    if (ok) {
      nlohmann::json j = nlohmann::json::parse(line.substr(9), nullptr, false);
      row = j.is_discarded() ? Result<LedgerAction>(DataLossError("not JSON")) : FromJson(j);
      ok = row.ok();
    }
    if (!ok) {
      if (last) {  // a crash mid-append: the row was never reported as kept
        if (torn_lines != nullptr) ++*torn_lines;
        break;
      }
      return DataLossError("spool " + path_ + " line " + std::to_string(line_no) + " is corrupt (" +
                           row.status().message() + "); kept as it is");
    }
    rows.push_back(std::move(row).value());
  }
  return rows;
}

Result<size_t> LedgerSpool::Drain(LedgerSink& ledger) {
  Result<std::vector<LedgerAction>> rows = Read();
  if (!rows.ok()) return rows.status();
  if (rows->empty()) {
    if (FileExists(path_) && ::unlink(path_.c_str()) != 0)
      return ErrnoError("spool " + path_ + ": remove", errno);
    return size_t{0};
  }
  if (Result<size_t> added = ledger.Append(*rows); !added.ok()) return added.status();
  if (::unlink(path_.c_str()) != 0) return ErrnoError("spool " + path_ + ": remove", errno);
  return rows->size();
}

SpoolingLedgerSink::SpoolingLedgerSink(LedgerSink& inner, std::string spool_path)
    : inner_(inner), spool_path_(std::move(spool_path)) {}

Result<size_t> SpoolingLedgerSink::MoveSpooled() {
  std::lock_guard<std::mutex> lock(mu_);
  return MoveSpooledLocked();
}

Result<size_t> SpoolingLedgerSink::MoveSpooledLocked() {
  if (!pending_) return size_t{0};
  Result<size_t> moved = LedgerSpool(spool_path_).Drain(inner_);
  if (moved.ok()) {
    pending_ = false;
    spooled_ids_.clear();
    if (*moved > 0) spdlog::info("moved {} spooled ledger rows from {}", *moved, spool_path_);
  } else if (moved.status().code() == StatusCode::kDataLoss) {
    // Kept for a person to look at, out of the way of new rows.
    const std::string aside = spool_path_ + ".corrupt";
    if (::rename(spool_path_.c_str(), aside.c_str()) == 0) pending_ = false;
    spdlog::error("{}; moved aside to {}", moved.status().message(), aside);
  }
  return moved;
}

Result<size_t> SpoolingLedgerSink::Append(std::span<const LedgerAction> actions,
                                          std::span<const ChargeMark> marks) {
  std::lock_guard<std::mutex> lock(mu_);
  // Older rows first, so the ledger sees them in the order they happened.
  Status why = MoveSpooledLocked().status();
  if (!pending_) {
    Result<size_t> added = inner_.Append(actions, marks);
    if (added.ok() || !marks.empty()) return added;
    why = added.status();
  }
  if (!marks.empty())
    return UnavailableError("ledger charge marks cannot be spooled; the ledger is unavailable");
  constexpr size_t kMaxRememberedIds = 1'000'000;
  std::vector<LedgerAction> fresh;
  for (const LedgerAction& a : actions)
    if (!spooled_ids_.contains(a.action_id)) fresh.push_back(a);
  if (fresh.empty()) return size_t{0};
  if (Status s = LedgerSpool(spool_path_).Append(fresh); !s.ok())
    return UnavailableError("the ledger refused " + std::to_string(fresh.size()) + " rows (" +
                            why.message() + ") and the spool " + spool_path_ +
                            " too: " + s.message());
  pending_ = true;
  spooled_rows_ += fresh.size();
  for (const LedgerAction& a : fresh)
    if (spooled_ids_.size() < kMaxRememberedIds) spooled_ids_.insert(a.action_id);
  spdlog::warn("the ledger did not take {} rows ({}); kept in the spool {} (first: {})",
               fresh.size(), why.message(), spool_path_, fresh.front().action_id);
  return size_t{0};
}

uint64_t SpoolingLedgerSink::spooled_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spooled_rows_;
}

}  // namespace gpuvpa
