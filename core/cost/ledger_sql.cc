#include "core/cost/ledger_sql.h"

#include <cmath>

#include "core/base/names.h"
#include "core/cost/money.h"

namespace gpuvpa::ledger_sql {
namespace {

// amount x part / whole, rounded to nearest, without overflow (part <= whole).
int64_t Prorate(int64_t amount, int64_t part, int64_t whole) {
  if (part >= whole) return amount;
  const __int128 scaled = static_cast<__int128>(amount) * part;
  return static_cast<int64_t>((scaled + whole / 2) / whole);
}

// Adds `add` (a row, or a group for the total) to `to`; an overflow names `what`.
Status AddRow(ShowbackRow& to, const ShowbackRow& add, const std::string& what) {
  const std::pair<int64_t*, int64_t> sums[] = {
      {&to.allocated_gpu_time, add.allocated_gpu_time},
      {&to.allocated, add.allocated},
      {&to.used_vram, add.used_vram},
      {&to.used_sm, add.used_sm},
      {&to.idle_tax_vram, add.idle_tax_vram},
      {&to.idle_tax_sm, add.idle_tax_sm},
      {&to.savings_realised_monthly, add.savings_realised_monthly},
      {&to.savings_proposed_monthly, add.savings_proposed_monthly},
      {&to.metered_gpu_time, add.metered_gpu_time},
      {&to.metered, add.metered},
      {&to.reserved, add.reserved},
      {&to.billed, add.billed},
      {&to.billed_metered, add.billed_metered},
      {&to.allocated_unbilled, add.allocated_unbilled}};
  for (const auto& [sum, value] : sums)
    GPUVPA_RETURN_IF_ERROR(CheckedAdd(*sum, value, "showback " + to.group + ", adding " + what));
  return OkStatus();
}

// A row is in the window when its period overlaps it, or (an instant) when its time is inside;
// and in the cluster asked for, if any.
constexpr const char* kInWindow =
    "((period_end_s > period_start_s AND period_end_s > $1 AND period_start_s < $2) OR "
    "(period_end_s <= period_start_s AND time_s >= $1 AND time_s < $2)) AND "
    "($3 = '' OR cluster = $3)";

}  // namespace

std::string InsertSql() {
  std::string values;
  for (int i = 1; i <= kRowColumnCount; ++i) values += (i > 1 ? ", $" : "$") + std::to_string(i);
  return std::string("INSERT INTO actions (") + kRowColumns + ") VALUES (" + values + ")";
}

Status ContentConflict(const LedgerAction& a, const std::vector<std::string>& stored) {
  const std::pair<const char*, std::string> now[] = {
      {"kind", std::string(ActionKindName(a.kind))},
      {"status", std::string(ActionStatusName(a.status))},
      {"namespace", a.namespace_name},
      {"workload", a.workload},
      {"cost_center", a.cost_center},
      {"gpu_model", a.gpu_model},
      {"before", a.before},
      {"after", a.after},
      {"monthly_before", std::to_string(a.monthly_before)},
      {"monthly_after", std::to_string(a.monthly_after)},
      {"period_start_s", std::to_string(a.period_start_s)},
      {"period_end_s", std::to_string(a.period_end_s)},
      {"allocated_gpu_time", std::to_string(a.allocated_gpu_time)},
      {"allocated", std::to_string(a.allocated)},
      {"usage_measured", a.usage_measured ? "1" : "0"},
      {"used_vram", std::to_string(a.used_vram)},
      {"used_sm", std::to_string(a.used_sm)},
      {"metered_gpu_time", std::to_string(a.metered_gpu_time)},
      {"metered", std::to_string(a.metered)},
      {"reserved", std::to_string(a.reserved)}};
  for (size_t i = 0; i < std::size(now); ++i) {
    const std::string& was = i < stored.size() ? stored[i] : std::string();
    if (was != now[i].second)
      return Status(StatusCode::kAlreadyExists, "ledger action " + QuoteForError(a.action_id) +
                                                    " is recorded with " + now[i].first + " " +
                                                    QuoteForError(was) + "; this one has " +
                                                    QuoteForError(now[i].second) +
                                                    " (an id is never reused for other content)");
  }
  return OkStatus();
}

Status ValidateMark(const ChargeMark& m) {
  if (m.series.empty() || m.series.size() > kMaxLedgerIdBytes || !IsValidUtf8(m.series) ||
      !std::isfinite(m.charged_through_s))
    return InvalidArgumentError("ledger charge mark " + QuoteForError(m.series) + " is invalid");
  return OkStatus();
}

const char* GroupColumn(ShowbackGroup g) {
  switch (g) {
    case ShowbackGroup::kGpuModel:
      return "gpu_model";
    case ShowbackGroup::kCluster:
      return "cluster";
    case ShowbackGroup::kCostCenter:
      break;
  }
  return "cost_center";
}

ShowbackSql ShowbackQueries(ShowbackGroup group_by) {
  const std::string group = GroupColumn(group_by);
  ShowbackSql q;
  q.metered =
      std::string("SELECT DISTINCT cluster, namespace, workload FROM actions WHERE kind = '") +
      std::string(ActionKindName(ActionKind::kMeteredPeriod)) + "' AND " + kInWindow;
  // One pass over the rows, summed by the builder: a database would sort millions of rows for
  // GROUP BY.
  q.scan = "SELECT " + group +
           ", kind, status, usage_measured, allocated_milli_gpu_s, allocated_micro_usd, "
           "used_vram_micro_usd, used_sm_micro_usd, monthly_before_micro_usd, "
           "monthly_after_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, "
           "period_start_s, period_end_s, action_id, cluster, namespace, workload "
           "FROM actions WHERE " +
           kInWindow;
  q.proposed =
      "SELECT " + group +
      ", monthly_before_micro_usd, monthly_after_micro_usd, action_id FROM (SELECT " + group +
      ", status, monthly_before_micro_usd, monthly_after_micro_usd, action_id, ROW_NUMBER() "
      "OVER (PARTITION BY cluster, namespace, workload ORDER BY time_s DESC, seq DESC) AS latest "
      "FROM actions WHERE kind = 'recommendation' AND time_s >= $1 AND time_s < $2 AND "
      "($3 = '' OR cluster = $3)) AS recommendations WHERE latest = 1 AND status = 'proposed'";
  return q;
}

ShowbackBuilder::ShowbackBuilder(const ShowbackQuery& query)
    : query_(query), from_(query.from_s.value_or(INT64_MIN)), to_(query.to_s.value_or(INT64_MAX)) {}

Result<ShowbackBuilder> ShowbackBuilder::Start(const ShowbackQuery& query) {
  ShowbackBuilder b(query);
  if (b.from_ >= b.to_)
    return InvalidArgumentError("showback window is empty: from " + std::to_string(b.from_) +
                                " is not before to " + std::to_string(b.to_));
  return b;
}

void ShowbackBuilder::AddMeteredWorkload(std::string_view cluster, std::string_view ns,
                                         std::string_view wl) {
  metered_workloads_.emplace(std::string(cluster), std::string(ns), std::string(wl));
}

Status ShowbackBuilder::AddScanned(const ScanRow& in) {
  auto it = groups_.find(in.group);
  if (it == groups_.end())
    it = groups_.emplace(std::string(in.group), ShowbackRow{std::string(in.group)}).first;
  // The share of the row's period inside the window.
  const int64_t start = in.period_start_s;
  const int64_t end = in.period_end_s;
  const int64_t whole = end > start ? end - start : 1;
  const int64_t part = end > start ? std::min(end, to_) - std::max(start, from_) : 1;
  auto prorated = [&](int64_t amount) { return Prorate(amount, part, whole); };
  ShowbackRow r{std::string(in.group)};
  const bool applied = in.status == ActionStatusName(ActionStatus::kApplied);
  r.allocated_gpu_time = prorated(in.allocated_gpu_time);
  r.allocated = prorated(in.allocated);
  r.used_vram = prorated(in.used_vram);
  r.used_sm = prorated(in.used_sm);
  if (in.usage_measured) {
    r.idle_tax_vram = r.allocated - r.used_vram;
    r.idle_tax_sm = r.allocated - r.used_sm;
  }
  if (applied && (in.kind == ActionKindName(ActionKind::kAppliedChange) ||
                  in.kind == ActionKindName(ActionKind::kRollback)))
    r.savings_realised_monthly = in.monthly_before - in.monthly_after;
  r.metered_gpu_time = prorated(in.metered_gpu_time);
  r.metered = prorated(in.metered);
  r.reserved = prorated(in.reserved);
  const bool metered_workload =
      metered_workloads_.count(
          {std::string(in.cluster), std::string(in.namespace_name), std::string(in.workload)}) > 0;
  r.billed_metered = r.metered;
  r.allocated_unbilled = metered_workload ? r.allocated : 0;
  r.billed = r.metered + (metered_workload ? 0 : r.allocated);
  if (in.usage_measured)
    it->second.usage_measured = true;
  else
    it->second.usage_unmeasured = true;
  return AddRow(it->second, r, "row " + QuoteForError(in.action_id));
}

Status ShowbackBuilder::AddProposed(std::string_view group, int64_t monthly_before,
                                    int64_t monthly_after, std::string_view action_id) {
  // A workload's latest recommendation lies in the window, so its group was scanned.
  auto it = groups_.find(group);
  if (it == groups_.end()) return OkStatus();
  // Each amount is within [0, kMaxLedgerMicroUsd]: the difference cannot overflow.
  return CheckedAdd(it->second.savings_proposed_monthly, monthly_before - monthly_after,
                    "showback " + it->second.group + ", adding row " + QuoteForError(action_id));
}

Result<Showback> ShowbackBuilder::Finish() && {
  Showback out;
  out.from_s = query_.from_s;
  out.to_s = query_.to_s;
  for (auto& [key, row] : groups_) out.groups.push_back(std::move(row));
  // Integer sums: the total of the groups is exact, and every row belongs to exactly one group
  // (the grouping columns are NOT NULL).
  out.total.group = "TOTAL";
  for (const ShowbackRow& r : out.groups) {
    GPUVPA_RETURN_IF_ERROR(AddRow(out.total, r, "group " + QuoteForError(r.group)));
    out.total.usage_measured |= r.usage_measured;
    out.total.usage_unmeasured |= r.usage_unmeasured;
  }
  return out;
}

}  // namespace gpuvpa::ledger_sql

namespace gpuvpa::ledger_sql {

std::string WithCluster(std::string_view sql, std::string_view cluster) {
  std::string out(sql);
  constexpr std::string_view kMark = "{{cluster}}";
  for (size_t p = out.find(kMark); p != std::string::npos; p = out.find(kMark, p + cluster.size()))
    out.replace(p, kMark.size(), cluster);
  return out;
}

}  // namespace gpuvpa::ledger_sql
