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
  nlohmann::json j = {{"action_id", a.action_id},
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
  // A row that names its cluster keeps it (one that does not takes the ledger's when moved);
  // lines of rows without one are as older builds wrote them.
  if (!a.cluster.empty()) j["cluster"] = a.cluster;
  return j;
}

Result<LedgerAction> FromJson(const nlohmann::json& j) {
  try {
    LedgerAction a;
    if (j.contains("cluster")) a.cluster = j.at("cluster").get<std::string>();
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

// Appends `text` to the file at `path` durably (fsync'd), all of it or none: a partial write is
// cut off again. A file whose last line was torn (no final newline) gets one first, so the new
// lines start on lines of their own.
Status AppendDurably(const std::string& path, std::string text) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("spool " + path + ": open", errno);
  const off_t start = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (start > 0 && ::pread(fd, &last, 1, start - 1) == 1 && last != '\n') {
    std::string ended = "\n";
    ended += text;
    text.swap(ended);
  }
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      // Leave no partial line behind for the rows that did not fit.
      if (start >= 0) (void)::ftruncate(fd, start);
      ::close(fd);
      return ErrnoError("spool " + path + ": write", err);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    if (start >= 0) (void)::ftruncate(fd, start);
    ::close(fd);
    return ErrnoError("spool " + path + ": fsync", err);
  }
  ::close(fd);
  return OkStatus();
}

std::string Line(const nlohmann::json& j) {
  const std::string json = j.dump();
  return Hex8(Crc32c(json)) + " " + json + "\n";
}

// The row a line holds when its checksum and JSON are good.
Result<LedgerAction> ParseLine(std::string_view line) {
  uint32_t crc = 0;
  if (line.size() <= 9 || line[8] != ' ' ||
      std::from_chars(line.data(), line.data() + 8, crc, 16).ptr != line.data() + 8 ||
      Crc32c(line.substr(9)) != crc)
    return DataLossError("bad checksum");
  const nlohmann::json j = nlohmann::json::parse(line.substr(9), nullptr, false);
  if (j.is_discarded()) return DataLossError("not JSON");
  return FromJson(j);
}

// Appends `rows` to `sink`; when the sink refuses them as invalid, row by row, each refused row
// to the dead-letter file. Stops at the first other error: `done` rows were handled (stored,
// already there, or dead-lettered).
struct IsolatedAppend {
  size_t added = 0;
  size_t dead_lettered = 0;
  size_t done = 0;
  Status error;
};
IsolatedAppend AppendOrDeadLetter(LedgerSink& sink, std::span<const LedgerAction> rows,
                                  LedgerSpool& spool) {
  IsolatedAppend out;
  // Rows that can never be stored as they are: invalid, or an id recorded with other content.
  auto poison = [](const Status& s) {
    return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kAlreadyExists;
  };
  Result<size_t> all = sink.Append(rows);
  if (all.ok()) {
    out.added = *all;
    out.done = rows.size();
    return out;
  }
  if (!poison(all.status())) {
    out.error = all.status();
    return out;
  }
  for (const LedgerAction& row : rows) {
    Result<size_t> one = sink.Append(row);
    if (one.ok()) {
      out.added += *one;
    } else if (poison(one.status())) {
      if (Status s = spool.DeadLetter(row, one.status().message()); !s.ok()) {
        out.error = s;
        return out;
      }
      ++out.dead_lettered;
      spdlog::error("ledger row {} refused ({}); set aside in {}", row.action_id,
                    one.status().message(), spool.dead_letter_path());
    } else {
      out.error = one.status();
      return out;
    }
    ++out.done;
  }
  return out;
}

}  // namespace

Status LedgerSpool::Append(std::span<const LedgerAction> rows) {
  std::string text;
  for (const LedgerAction& a : rows) text += Line(ToJson(a));
  return AppendDurably(path_, std::move(text));
}

Status LedgerSpool::DeadLetter(const LedgerAction& row, std::string_view reason) {
  nlohmann::json j = ToJson(row);
  j["dead_letter_reason"] = std::string(reason);
  return AppendDurably(dead_letter_path(), Line(j));
}

Result<std::vector<LedgerAction>> LedgerSpool::Read(size_t* dropped_lines) const {
  std::vector<LedgerAction> rows;
  if (dropped_lines != nullptr) *dropped_lines = 0;
  if (!FileExists(path_)) return rows;
  Result<std::string> text = ReadWholeFile(path_);
  if (!text.ok()) return text.status();
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    Result<LedgerAction> row = ParseLine(line);
    const bool whole = row.ok();
    // A torn line that a later record ran into (written by a build that did not end torn
    // lines first): the record starts at some "<8 hex> {" inside it.
    for (size_t at = line.find(" {", 8); !row.ok() && at != std::string_view::npos;
         at = line.find(" {", at + 1))
      row = ParseLine(line.substr(at - 8));
    if (row.ok()) rows.push_back(std::move(row).value());
    if (!whole && dropped_lines != nullptr) ++*dropped_lines;
  }
  return rows;
}

Result<SpoolDrain> LedgerSpool::Drain(LedgerSink& ledger) {
  SpoolDrain out;
  Result<std::vector<LedgerAction>> rows = Read(&out.dropped_lines);
  if (!rows.ok()) return rows.status();
  if (!rows->empty()) {
    const IsolatedAppend appended = AppendOrDeadLetter(ledger, *rows, *this);
    if (!appended.error.ok()) return appended.error;
    out.moved = appended.done - appended.dead_lettered;
    out.dead_lettered = appended.dead_lettered;
  }
  if (FileExists(path_) && ::unlink(path_.c_str()) != 0)
    return ErrnoError("spool " + path_ + ": remove", errno);
  return out;
}

SpoolingLedgerSink::SpoolingLedgerSink(LedgerSink& inner, std::string spool_path)
    : inner_(inner), spool_path_(std::move(spool_path)) {}

Result<size_t> SpoolingLedgerSink::MoveSpooled() {
  std::lock_guard<std::mutex> lock(mu_);
  return MoveSpooledLocked();
}

Result<size_t> SpoolingLedgerSink::MoveSpooledLocked() {
  if (!pending_) return size_t{0};
  LedgerSpool spool(spool_path_);
  Result<SpoolDrain> drained = spool.Drain(inner_);
  if (!drained.ok()) return drained.status();
  pending_ = false;
  spooled_ids_.clear();
  dead_lettered_rows_ += drained->dead_lettered;
  dropped_lines_ += drained->dropped_lines;
  if (drained->moved > 0)
    spdlog::info("moved {} spooled ledger rows from {}", drained->moved, spool_path_);
  if (drained->dropped_lines > 0)
    spdlog::error("spool {}: {} torn or corrupt lines dropped (each only itself)", spool_path_,
                  drained->dropped_lines);
  return drained->moved;
}

Result<size_t> SpoolingLedgerSink::Append(std::span<const LedgerAction> actions,
                                          std::span<const ChargeMark> marks) {
  std::lock_guard<std::mutex> lock(mu_);
  // Older rows first, so the ledger sees them in the order they happened.
  Status why = MoveSpooledLocked().status();
  size_t added = 0;
  if (!pending_) {
    if (!marks.empty()) return inner_.Append(actions, marks);
    LedgerSpool spool(spool_path_);
    const IsolatedAppend appended = AppendOrDeadLetter(inner_, actions, spool);
    dead_lettered_rows_ += appended.dead_lettered;
    if (appended.error.ok()) return appended.added;
    // The rest waits in the spool.
    added = appended.added;
    actions = actions.subspan(appended.done);
    why = appended.error;
  }
  if (!marks.empty())
    return UnavailableError("ledger charge marks cannot be spooled; the ledger is unavailable");
  constexpr size_t kMaxRememberedIds = 1'000'000;
  std::vector<LedgerAction> fresh;
  for (const LedgerAction& a : actions)
    if (!spooled_ids_.contains(a.action_id)) fresh.push_back(a);
  if (fresh.empty()) return added;
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
  return added;
}

uint64_t SpoolingLedgerSink::dead_lettered_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_lettered_rows_;
}

uint64_t SpoolingLedgerSink::dropped_lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_lines_;
}

uint64_t SpoolingLedgerSink::spooled_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spooled_rows_;
}

}  // namespace gpuvpa
