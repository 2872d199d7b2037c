#include "core/cost/ledger_sql.h"

#include <algorithm>
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

// Adds `add` (a row, or a group for the total) to `to`; an overflow names `what()` (built only
// then: this runs for every row of a showback).
template <class What>
Status AddRow(ShowbackRow& to, const ShowbackRow& add, What&& what) {
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
      {&to.allocated_unbilled, add.allocated_unbilled},
      {&to.billed_gpu_time, add.billed_gpu_time}};
  int64_t out[std::size(sums)];
  for (size_t i = 0; i < std::size(sums); ++i)
    if (__builtin_add_overflow(*sums[i].first, sums[i].second, &out[i]))
      return CheckedAdd(*sums[i].first, sums[i].second,
                        "showback " + to.group + ", adding " + what());
  for (size_t i = 0; i < std::size(sums); ++i) *sums[i].first = out[i];
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

std::string LatestProposalsSql() {
  return std::string("SELECT ") + kRowColumns +
         " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY namespace, workload ORDER BY time_s "
         "DESC, seq DESC) AS latest FROM actions WHERE kind = 'recommendation' AND cluster = $1 "
         "AND time_s >= $2 AND time_s < $3) AS r WHERE latest = 1 AND status = 'proposed' ORDER "
         "BY namespace, workload";
}

const char* const kInsertDeliverySql =
    "INSERT INTO deliveries (cluster, delivery_id, time_s, target, cost_center, period_start_s, "
    "period_end_s, outcome, http_status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT "
    "(cluster, delivery_id) DO NOTHING";

Status ValidateDelivery(const DeliveryRecord& d) {
  for (const auto& [field, value] : {std::pair{"delivery_id", &d.delivery_id},
                                     {"target", &d.target},
                                     {"cost_center", &d.cost_center}})
    if (value->empty() || value->size() > kMaxLedgerTextBytes || !IsValidUtf8(*value))
      return InvalidArgumentError("delivery " + QuoteForError(d.delivery_id) + ": " + field + " " +
                                  QuoteForError(*value) + " is not valid");
  if (d.outcome != "delivered" && d.outcome != "refused")
    return InvalidArgumentError("delivery " + QuoteForError(d.delivery_id) + ": outcome " +
                                QuoteForError(d.outcome) + " is not delivered or refused");
  return OkStatus();
}

std::string GroupColumn(ShowbackGroup g) {
  switch (g) {
    case ShowbackGroup::kGpuModel:
      return "gpu_model";
    case ShowbackGroup::kCluster:
      return "cluster";
    case ShowbackGroup::kAllocation:
      // The separator is written into the literal: both dialects keep it as it is.
      return "cluster || '\x1f' || namespace || '\x1f' || workload || '\x1f' || cost_center || "
             "'\x1f' || gpu_model || '\x1f' || before";
    case ShowbackGroup::kCostCenter:
      break;
  }
  return "cost_center";
}

ShowbackSql ShowbackQueries(ShowbackGroup group_by, int64_t step_origin, int64_t step_s) {
  const std::string group = GroupColumn(group_by);
  ShowbackSql q;
  q.metered = std::string(
                  "SELECT cluster, namespace, workload, period_start_s, period_end_s, time_s "
                  "FROM actions WHERE kind = '") +
              std::string(ActionKindName(ActionKind::kMeteredPeriod)) + "' AND " + kInWindow;
  // One pass over the rows, summed by the builder: a database would sort millions of rows for
  // GROUP BY.
  // kAllocation's group text is put together by the builder from the columns: concatenating
  // in SQL cost an allocation per row.
  q.scan = "SELECT " + (group_by == ShowbackGroup::kAllocation ? std::string("''") : group) +
           ", kind, status, usage_measured, allocated_milli_gpu_s, allocated_micro_usd, "
           "used_vram_micro_usd, used_sm_micro_usd, monthly_before_micro_usd, "
           "monthly_after_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, "
           "period_start_s, period_end_s, action_id, cluster, namespace, workload, time_s, "
           "cost_center, gpu_model, before FROM actions WHERE " +
           kInWindow;
  // Rows in the window have time_s >= step_origin: the step number is never negative.
  const std::string step =
      "(time_s - " + std::to_string(step_origin) + ") / " + std::to_string(step_s);
  q.proposed =
      "SELECT showback_group, monthly_before_micro_usd, monthly_after_micro_usd, action_id, "
      "time_s FROM (SELECT " +
      group +
      " AS showback_group, status, monthly_before_micro_usd, monthly_after_micro_usd, action_id, "
      "time_s, "
      "ROW_NUMBER() OVER (PARTITION BY cluster, namespace, workload, " +
      step +
      " ORDER BY time_s DESC, seq DESC) AS latest FROM actions WHERE kind = 'recommendation' AND "
      "time_s >= $1 AND time_s < $2 AND ($3 = '' OR cluster = $3)) AS recommendations WHERE "
      "latest = 1 AND status = 'proposed'";
  return q;
}

ShowbackBuilder::ShowbackBuilder(const ShowbackQuery& query)
    : query_(query),
      from_(query.from_s.value_or(INT64_MIN)),
      to_(query.to_s.value_or(INT64_MAX)),
      step_(INT64_MAX) {}

Result<ShowbackBuilder> ShowbackBuilder::Start(const ShowbackQuery& query) {
  ShowbackBuilder b(query);
  if (b.from_ >= b.to_)
    return InvalidArgumentError("showback window is empty: from " + std::to_string(b.from_) +
                                " is not before to " + std::to_string(b.to_));
  if (!query.step_s) {
    b.steps_.push_back({b.from_, b.to_, {}, {}});
    return b;
  }
  if (!query.from_s || !query.to_s)
    return InvalidArgumentError("a showback step needs a window with a start and an end");
  if (*query.step_s <= 0)
    return InvalidArgumentError("showback step " + std::to_string(*query.step_s) +
                                " s is not positive");
  // The window is below 2^63 s wide: (to - from) does not overflow for ledger times, and the
  // count is checked before anything is allocated.
  const __int128 width = static_cast<__int128>(b.to_) - b.from_;
  const __int128 count = (width + *query.step_s - 1) / *query.step_s;
  if (count > static_cast<__int128>(kMaxShowbackSteps))
    return InvalidArgumentError("showback step " + std::to_string(*query.step_s) + " s makes " +
                                std::to_string(static_cast<int64_t>(count)) +
                                " steps of the window, more than " +
                                std::to_string(kMaxShowbackSteps));
  b.step_ = *query.step_s;
  for (int64_t start = b.from_; start < b.to_;) {
    const int64_t end = b.to_ - start > b.step_ ? start + b.step_ : b.to_;
    b.steps_.push_back({start, end, {}, {}});
    start = end;
  }
  return b;
}

ShowbackSql ShowbackBuilder::Queries() const {
  return ShowbackQueries(query_.group_by, query_.step_s ? from_ : 0, step_);
}

std::pair<size_t, size_t> ShowbackBuilder::StepsOf(int64_t start, int64_t end,
                                                   int64_t time_s) const {
  if (steps_.size() == 1) return {0, 0};
  auto step_of = [&](int64_t t) {
    const int64_t k = (std::clamp(t, from_, to_ - 1) - from_) / step_;
    return static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(steps_.size()) - 1));
  };
  if (end <= start) return {step_of(time_s), step_of(time_s)};
  return {step_of(start), step_of(end - 1)};
}

void ShowbackBuilder::AddMeteredPeriod(std::string_view cluster, std::string_view ns,
                                       std::string_view wl, int64_t period_start_s,
                                       int64_t period_end_s, int64_t time_s) {
  key_.assign(cluster).append("\x1f").append(ns).append("\x1f").append(wl);
  const auto [first, last] = StepsOf(period_start_s, period_end_s, time_s);
  for (size_t k = first; k <= last; ++k) {
    const Step& step = steps_[k];
    // A period that only touches the step's edge is not in it.
    if (period_end_s > period_start_s && (period_end_s <= step.from || period_start_s >= step.to))
      continue;
    steps_[k].metered_workloads.insert(key_);
  }
}

Status ShowbackBuilder::AddScanned(const ScanRow& in) {
  const int64_t start = in.period_start_s;
  const int64_t end = in.period_end_s;
  const auto [first, last] = StepsOf(start, end, in.time_s);
  const bool applied = in.status == ActionStatusName(ActionStatus::kApplied);
  const bool realised = applied && (in.kind == ActionKindName(ActionKind::kAppliedChange) ||
                                    in.kind == ActionKindName(ActionKind::kRollback));
  key_.assign(in.cluster)
      .append("\x1f")
      .append(in.namespace_name)
      .append("\x1f")
      .append(in.workload);
  std::string_view group = in.group;
  if (query_.group_by == ShowbackGroup::kAllocation) {
    AssignAllocationGroupText(
        {in.cluster, in.namespace_name, in.workload, in.cost_center, in.gpu_model, in.before},
        group_key_);
    group = group_key_;
  }
  for (size_t k = first; k <= last; ++k) {
    Step& step = steps_[k];
    // The share of the row's period inside the step's window.
    const int64_t whole = end > start ? end - start : 1;
    const int64_t part = end > start ? std::min(end, step.to) - std::max(start, step.from) : 1;
    if (part <= 0) continue;
    auto it = step.groups.find(group);
    if (it == step.groups.end())
      it = step.groups.emplace(std::string(group), ShowbackRow{std::string(group)}).first;
    auto prorated = [&](int64_t amount) { return Prorate(amount, part, whole); };
    ShowbackRow r;
    r.allocated_gpu_time = prorated(in.allocated_gpu_time);
    r.allocated = prorated(in.allocated);
    r.used_vram = prorated(in.used_vram);
    r.used_sm = prorated(in.used_sm);
    if (in.usage_measured) {
      r.idle_tax_vram = r.allocated - r.used_vram;
      r.idle_tax_sm = r.allocated - r.used_sm;
    }
    if (realised) r.savings_realised_monthly = in.monthly_before - in.monthly_after;
    r.metered_gpu_time = prorated(in.metered_gpu_time);
    r.metered = prorated(in.metered);
    r.reserved = prorated(in.reserved);
    const bool metered_workload = step.metered_workloads.contains(key_);
    r.billed_metered = r.metered;
    r.allocated_unbilled = metered_workload ? r.allocated : 0;
    r.billed = r.metered + (metered_workload ? 0 : r.allocated);
    r.billed_gpu_time = r.metered_gpu_time + (metered_workload ? 0 : r.allocated_gpu_time);
    if (in.usage_measured)
      it->second.usage_measured = true;
    else
      it->second.usage_unmeasured = true;
    GPUVPA_RETURN_IF_ERROR(
        AddRow(it->second, r, [&] { return "row " + QuoteForError(in.action_id); }));
  }
  return OkStatus();
}

Status ShowbackBuilder::AddProposed(std::string_view group, int64_t monthly_before,
                                    int64_t monthly_after, std::string_view action_id,
                                    int64_t time_s) {
  Step& step = steps_[StepsOf(time_s, time_s, time_s).first];
  // A workload's latest recommendation lies in the step, so its group was scanned there.
  auto it = step.groups.find(group);
  if (it == step.groups.end()) return OkStatus();
  // Each amount is within [0, kMaxLedgerMicroUsd]: the difference cannot overflow.
  return CheckedAdd(it->second.savings_proposed_monthly, monthly_before - monthly_after,
                    "showback " + it->second.group + ", adding row " + QuoteForError(action_id));
}

Result<std::vector<Showback>> ShowbackBuilder::Finish() && {
  std::vector<Showback> out;
  out.reserve(steps_.size());
  const bool stepped = query_.step_s.has_value();
  for (Step& step : steps_) {
    Showback& s = out.emplace_back();
    s.from_s = stepped ? std::optional(step.from) : query_.from_s;
    s.to_s = stepped ? std::optional(step.to) : query_.to_s;
    for (auto& [key, row] : step.groups) s.groups.push_back(std::move(row));
    std::sort(s.groups.begin(), s.groups.end(),
              [](const ShowbackRow& a, const ShowbackRow& b) { return a.group < b.group; });
    // Integer sums: the total of the groups is exact, and every row belongs to exactly one
    // group (the grouping columns are NOT NULL).
    s.total.group = "TOTAL";
    for (const ShowbackRow& r : s.groups)
      GPUVPA_RETURN_IF_ERROR(AddShowbackRow(s.total, r, "group " + QuoteForError(r.group)));
  }
  return out;
}

}  // namespace gpuvpa::ledger_sql

namespace gpuvpa {

Status AddShowbackRow(ShowbackRow& to, const ShowbackRow& add, std::string_view what) {
  GPUVPA_RETURN_IF_ERROR(ledger_sql::AddRow(to, add, [&] { return std::string(what); }));
  to.usage_measured |= add.usage_measured;
  to.usage_unmeasured |= add.usage_unmeasured;
  return OkStatus();
}

}  // namespace gpuvpa

namespace gpuvpa::ledger_sql {

std::string WithCluster(std::string_view sql, std::string_view cluster) {
  std::string out(sql);
  constexpr std::string_view kMark = "{{cluster}}";
  for (size_t p = out.find(kMark); p != std::string::npos; p = out.find(kMark, p + cluster.size()))
    out.replace(p, kMark.size(), cluster);
  return out;
}

}  // namespace gpuvpa::ledger_sql
