// The ledger's interface and what its backends share: row checks, names, URLs.
#include "core/cost/ledger.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <tuple>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/cost/ledger_sql.h"

namespace gpuvpa {
namespace {

constexpr std::array<std::string_view, 7> kKindNames = {
    "recommendation", "applied_change", "rollback",       "activation",
    "deactivation",   "metered_period", "allocated_usage"};
constexpr std::array<std::string_view, 4> kStatusNames = {"proposed", "applied", "rolled_back",
                                                          "failed"};
}  // namespace

Status ValidateLedgerAction(const LedgerAction& a) {
  if (a.action_id.empty()) return InvalidArgumentError("ledger action: action_id is empty");
  const std::string who = "ledger action " + QuoteForError(a.action_id);
  if (!a.cluster.empty()) GPUVPA_RETURN_IF_ERROR(ValidateClusterName(who + ": cluster", a.cluster));
  const std::tuple<const char*, const std::string*, size_t, bool> texts[] = {
      {"action_id", &a.action_id, kMaxLedgerIdBytes, true},
      {"namespace", &a.namespace_name, kMaxLedgerTextBytes, true},
      {"workload", &a.workload, kMaxLedgerTextBytes, true},
      {"cost_center", &a.cost_center, kMaxLedgerTextBytes, true},
      {"gpu_model", &a.gpu_model, kMaxLedgerTextBytes, false},
      {"before", &a.before, kMaxLedgerTextBytes, false},
      {"after", &a.after, kMaxLedgerTextBytes, false}};
  for (const auto& [field, value, max_bytes, required] : texts) {
    if (required && value->empty())
      return InvalidArgumentError(
          who + ": " + field + " is empty" +
          (std::string_view(field) == "cost_center" ? " (use \"unallocated\")" : ""));
    if (value->size() > max_bytes)
      return InvalidArgumentError(who + ": " + field + " is " + std::to_string(value->size()) +
                                  " bytes, more than " + std::to_string(max_bytes));
    if (!IsDisplayableText(*value))
      return InvalidArgumentError(who + ": " + field + " " + QuoteForError(*value) +
                                  " is not UTF-8 text without control characters");
  }
  if (a.evidence_json.size() > kMaxLedgerEvidenceBytes)
    return InvalidArgumentError(who + ": evidence is " + std::to_string(a.evidence_json.size()) +
                                " bytes, more than " + std::to_string(kMaxLedgerEvidenceBytes));
  if (!IsValidUtf8(a.evidence_json)) return InvalidArgumentError(who + ": evidence is not UTF-8");
  // No money or GPU time in the ledger is negative or beyond what sums can hold, and no period
  // runs backwards: a value that is would be a bug upstream or a hostile writer, and showback
  // must never print it.
  const std::tuple<const char*, int64_t, int64_t> amounts[] = {
      {"time_s", a.time_s, kMaxLedgerTimeS},
      {"monthly_before", a.monthly_before, kMaxLedgerMicroUsd},
      {"monthly_after", a.monthly_after, kMaxLedgerMicroUsd},
      {"period_start_s", a.period_start_s, kMaxLedgerTimeS},
      {"period_end_s", a.period_end_s, kMaxLedgerTimeS},
      {"allocated_gpu_time", a.allocated_gpu_time, kMaxLedgerMilliGpuSeconds},
      {"allocated", a.allocated, kMaxLedgerMicroUsd},
      {"used_vram", a.used_vram, kMaxLedgerMicroUsd},
      {"used_sm", a.used_sm, kMaxLedgerMicroUsd},
      {"metered_gpu_time", a.metered_gpu_time, kMaxLedgerMilliGpuSeconds},
      {"metered", a.metered, kMaxLedgerMicroUsd},
      {"reserved", a.reserved, kMaxLedgerMicroUsd}};
  for (const auto& [field, value, max] : amounts) {
    if (value < 0)
      return InvalidArgumentError(who + ": " + field + " " + std::to_string(value) +
                                  " is negative");
    if (value > max)
      return InvalidArgumentError(who + ": " + field + " " + std::to_string(value) +
                                  " is above its bound " + std::to_string(max));
  }
  if (a.period_end_s < a.period_start_s)
    return InvalidArgumentError(who + ": period ends (" + std::to_string(a.period_end_s) +
                                ") before it starts (" + std::to_string(a.period_start_s) + ")");
  return OkStatus();
}

std::string_view ActionKindName(ActionKind kind) { return kKindNames[static_cast<size_t>(kind)]; }
std::string_view ActionStatusName(ActionStatus status) {
  return kStatusNames[static_cast<size_t>(status)];
}

Result<ActionKind> ParseActionKind(std::string_view text) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == text) return static_cast<ActionKind>(i);
  return InvalidArgumentError("unknown ledger action kind \"" + std::string(text) + "\"");
}

Result<ActionStatus> ParseActionStatus(std::string_view text) {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == text) return static_cast<ActionStatus>(i);
  return InvalidArgumentError("unknown ledger action status \"" + std::string(text) + "\"");
}

Result<LedgerUrl> ParseLedgerUrl(std::string_view url) {
  LedgerUrl out;
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    out.backend = LedgerUrl::Backend::kPostgres;
    out.target = std::string(url);
    return out;
  }
  if (url.starts_with("sqlite:")) url.remove_prefix(7);
  if (url.empty())
    return InvalidArgumentError(
        "ledger URL is empty (a file path, sqlite:PATH or postgresql://...)");
  if (const size_t colon = url.find("://"); colon != std::string_view::npos)
    return InvalidArgumentError("ledger URL scheme " + QuoteForError(url.substr(0, colon)) +
                                " is not supported (sqlite:PATH or postgresql://...)");
  out.target = std::string(url);
  return out;
}

std::string RedactLedgerUrl(std::string_view url) {
  std::string out(url);
  // scheme://user:password@host...: the password is between the first ':' after "//" and '@'.
  const size_t authority = out.find("://");
  if (authority != std::string::npos) {
    const size_t at = out.find('@', authority + 3);
    const size_t colon = out.find(':', authority + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at)
      out.replace(colon + 1, at - colon - 1, "***");
  }
  // A password given as a parameter: ...?password=... or &password=...
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const size_t value = p + 9;
    const size_t end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

Result<std::string> ReadLedgerUrlFile(const std::string& path) {
  return ReadFirstLine(path, "ledger URL file");
}

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& url, const LedgerOptions& options) {
  GPUVPA_RETURN_IF_ERROR(ValidateClusterName("cluster", options.cluster));
  Result<LedgerUrl> parsed = ParseLedgerUrl(url);
  if (!parsed.ok()) return parsed.status();
  if (parsed->backend == LedgerUrl::Backend::kPostgres)
    return ledger_sql::OpenPostgresLedger(parsed->target, options);
  return ledger_sql::OpenSqliteLedger(parsed->target, options);
}

Status ReadOnlyLedgerError(std::string_view shown_as) {
  return FailedPreconditionError("ledger " + std::string(shown_as) +
                                 " is open read-only: nothing is appended");
}

Result<Showback> Ledger::QueryShowback(const ShowbackQuery& query) const {
  ShowbackQuery whole = query;
  whole.step_s.reset();
  Result<std::vector<Showback>> steps = QueryShowbackSteps(whole);
  if (!steps.ok()) return steps.status();
  return std::move(steps->front());
}

std::string AllocationGroupText(const AllocationGroup& g) {
  std::string out;
  AssignAllocationGroupText(g, out);
  return out;
}

void AssignAllocationGroupText(const AllocationGroup& g, std::string& out) {
  out.assign(g.cluster);
  for (std::string_view f : {g.namespace_name, g.workload, g.cost_center, g.gpu_model, g.resource})
    out.append(1, '\x1f').append(f);
}

Result<AllocationGroup> ParseAllocationGroup(std::string_view text) {
  std::string_view f[6];
  size_t n = 0;
  for (size_t start = 0;; ++n) {
    const size_t end = text.find('\x1f', start);
    if (n < 6) f[n] = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (n + 1 != 6)
    return InvalidArgumentError("allocation group " + QuoteForError(text) + " has " +
                                std::to_string(n + 1) + " fields, not 6");
  return AllocationGroup{f[0], f[1], f[2], f[3], f[4], f[5]};
}

Result<std::vector<LedgerTotal>> Ledger::Totals() const {
  Result<std::vector<std::vector<std::string>>> rows = QueryText(
      "SELECT cluster, cost_center, kind, COUNT(*), CAST(SUM(allocated_micro_usd) AS BIGINT), "
      "CAST(SUM(used_vram_micro_usd) AS BIGINT), CAST(SUM(used_sm_micro_usd) AS BIGINT), "
      "CAST(SUM(metered_micro_usd) AS BIGINT), CAST(SUM(reserved_micro_usd) AS BIGINT), "
      "CAST(SUM(monthly_before_micro_usd) AS BIGINT), CAST(SUM(monthly_after_micro_usd) AS "
      "BIGINT), CAST(SUM(allocated_milli_gpu_s) AS BIGINT), CAST(SUM(metered_milli_gpu_s) AS "
      "BIGINT) FROM actions GROUP BY cluster, cost_center, kind");
  if (!rows.ok()) return rows.status();
  std::vector<LedgerTotal> out;
  for (const std::vector<std::string>& r : *rows) {
    LedgerTotal t{r.at(0), r.at(1), r.at(2)};
    auto number = [&](size_t i) -> Result<int64_t> {
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(r.at(i).data(), r.at(i).data() + r.at(i).size(), v);
      if (ec != std::errc() || end != r.at(i).data() + r.at(i).size())
        return DataLossError("ledger totals: " + QuoteForError(r.at(i)) + " is not a 64-bit sum");
      return v;
    };
    Result<int64_t> count = number(3);
    if (!count.ok()) return count.status();
    t.rows = *count;
    for (size_t i = 0; i < t.sums.size(); ++i) {
      Result<int64_t> sum = number(4 + i);
      if (!sum.ok()) return sum.status();
      t.sums[i] = *sum;
    }
    out.push_back(std::move(t));
  }
  // Sorted here: the two databases may collate text differently.
  std::sort(out.begin(), out.end(), [](const LedgerTotal& a, const LedgerTotal& b) {
    return std::tie(a.cluster, a.cost_center, a.kind) < std::tie(b.cluster, b.cost_center, b.kind);
  });
  return out;
}

Result<std::string> Ledger::IntegrityCheck() const {
  Result<std::string> storage = StorageCheck();
  if (!storage.ok() || *storage != "ok") return storage;
  // Keys whose totals differ, either way: what a bug or a hand edit would leave.
  const std::string sums = "SELECT * FROM (" + ledger_sql::DailyTotalsSelect("actions") + ") AS r";
  const std::string key =
      "SELECT day, cluster, namespace, workload, cost_center, gpu_model, before";
  Result<std::vector<std::vector<std::string>>> rows =
      QueryText("SELECT COUNT(*) FROM (" + key + " FROM (" + sums +
                " EXCEPT SELECT * FROM ledger_daily) AS missing UNION " + key +
                " FROM (SELECT * FROM ledger_daily EXCEPT " + sums + ") AS extra) AS differing");
  if (!rows.ok()) return rows.status();
  const std::string differing = rows->empty() || rows->front().empty() ? "?" : rows->at(0).at(0);
  if (differing != "0")
    return "ledger_daily differs from the rows it sums in " + differing +
           " (day, allocation) totals: showback over whole days would not match the rows";
  return std::string("ok");
}

Result<std::vector<ClusterChargeMark>> Ledger::AllChargeMarks() const {
  Result<std::vector<std::vector<std::string>>> rows = QueryText(
      "SELECT cluster, series, MAX(charged_through_s) FROM charge_marks GROUP BY cluster, series");
  if (!rows.ok()) return rows.status();
  std::vector<ClusterChargeMark> out;
  for (const std::vector<std::string>& r : *rows) {
    ClusterChargeMark m{r.at(0), {r.at(1), 0}};
    const std::string& t = r.at(2);
    if (std::from_chars(t.data(), t.data() + t.size(), m.mark.charged_through_s).ec != std::errc())
      return DataLossError("ledger charge mark " + QuoteForError(r.at(1)) + ": " +
                           QuoteForError(t) + " is not a time");
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const ClusterChargeMark& a, const ClusterChargeMark& b) {
    return std::tie(a.cluster, a.mark.series) < std::tie(b.cluster, b.mark.series);
  });
  return out;
}

}  // namespace gpuvpa
