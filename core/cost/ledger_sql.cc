#include "core/cost/ledger_sql.h"

#include <algorithm>
#include <cmath>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/cost/money.h"

namespace gpuvpa::ledger_sql {
namespace {

// amount x part / whole, rounded to nearest, without overflow (part <= whole).
int64_t Prorate(int64_t amount, int64_t part, int64_t whole) {
  if (part >= whole) return amount;
  // Amounts are at least 0; most products fit 64 bits (a 128-bit division costs several times
  // more, and showback prorates every amount of every row that crosses a step's edge).
  if (amount <= (INT64_MAX - whole) / part) return (amount * part + whole / 2) / whole;
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

ShowbackSql ShowbackQueries(int64_t step_origin, int64_t step_s) {
  ShowbackSql q;
  // One pass over the rows, summed by the builder: a database would sort millions of rows for
  // GROUP BY.
  q.scan_select =
      "SELECT kind, status, usage_measured, allocated_milli_gpu_s, allocated_micro_usd, "
      "used_vram_micro_usd, used_sm_micro_usd, monthly_before_micro_usd, "
      "monthly_after_micro_usd, metered_milli_gpu_s, metered_micro_usd, reserved_micro_usd, "
      "period_start_s, period_end_s, action_id, cluster, namespace, workload, time_s, "
      "cost_center, gpu_model, before FROM actions";
  q.scan = q.scan_select + " WHERE " + kInWindow;
  // Rows in the window have time_s >= step_origin: the step number is never negative.
  const std::string step =
      "(time_s - " + std::to_string(step_origin) + ") / " + std::to_string(step_s);
  q.proposed =
      "SELECT cluster, namespace, workload, cost_center, gpu_model, before, "
      "monthly_before_micro_usd, monthly_after_micro_usd, action_id, time_s FROM (SELECT *, "
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
    b.steps_.push_back({b.from_, b.to_});
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
    b.steps_.push_back({start, end});
    start = end;
  }
  return b;
}

namespace {

// The rows ledger_daily sums: instants, and periods that stay within one UTC day.
constexpr const char* kWithinOneDay =
    "(period_end_s <= period_start_s OR period_start_s / 86400 = (period_end_s - 1) / 86400)";
// Of those, the ones on the days of [$4, $5) (seconds): an instant by its time, a period by its
// start.
constexpr const char* kOnDays =
    "((period_end_s > period_start_s AND period_start_s >= $4 AND period_start_s < $5) OR "
    "(period_end_s <= period_start_s AND time_s >= $4 AND time_s < $5))";
// The rows no day sums: periods that cross midnight, overlapping the window (the partial index
// actions_across_days).
constexpr const char* kAcrossDaysWhere =
    " WHERE period_end_s > period_start_s AND period_start_s / 86400 <> (period_end_s - 1) / "
    "86400 AND period_end_s > $1 AND period_start_s < $2 AND ($3 = '' OR cluster = $3)";
// ledger_daily's days [$1, $2) of cluster $3 (or every cluster).
constexpr const char* kDaysWhere =
    " FROM ledger_daily WHERE day >= $1 AND day < $2 AND ($3 = '' OR cluster = $3)";
// More day ranges than this read every row of the window instead (a query per range).
constexpr size_t kMaxDayRanges = 64;
// The end of the last day a ledger time can fall on.
constexpr int64_t kLastLedgerDayEndS = (kMaxLedgerTimeS / kDayS + 1) * kDayS;

}  // namespace

Status DailyTotalOverflow(const std::string& what) {
  return InvalidArgumentError(
      what +
      ": a daily total would pass 2^63 - 1 (micro-dollars or milli-GPU-seconds of one "
      "allocation on one UTC day); nothing of this append was written");
}

std::optional<size_t> ShowbackBuilder::StepOfDay(int64_t day_start_s) const {
  if (day_start_s < from_ || day_start_s + kDayS > to_) return std::nullopt;
  const auto [first, last] = StepsOf(day_start_s, day_start_s + kDayS, day_start_s);
  if (first != last) return std::nullopt;
  return first;
}

ShowbackPlan ShowbackBuilder::Plan() const {
  using Rows = ShowbackPlan::Rows;
  const ShowbackSql sql = ShowbackQueries(query_.step_s ? from_ : 0, step_);
  const std::string cluster = query_.cluster.value_or("");
  ShowbackPlan plan;
  auto add = [&](Rows rows, std::string text, std::vector<std::variant<int64_t, std::string>> p) {
    plan.queries.push_back({rows, std::move(text), std::move(p)});
  };
  // The days of the window (ledger times lie in [0, kMaxLedgerTimeS]): those whole inside one
  // step are read from ledger_daily, runs of the others from the rows.
  const int64_t lo = std::max<int64_t>(from_, 0);
  const int64_t hi = std::min(to_, kLastLedgerDayEndS);
  int64_t first_daily = -1, end_daily = -1;
  std::vector<std::pair<int64_t, int64_t>> row_days;  // [first, end) in days
  if (query_.use_daily_totals && lo < hi) {
    for (int64_t day = lo / kDayS; day * kDayS < hi; ++day) {
      if (StepOfDay(day * kDayS)) {
        if (first_daily < 0) first_daily = day;
        end_daily = day + 1;
      } else if (!row_days.empty() && row_days.back().second == day) {
        row_days.back().second = day + 1;
      } else {
        row_days.push_back({day, day + 1});
      }
    }
  }
  if (first_daily < 0 || row_days.size() > kMaxDayRanges) {
    add(Rows::kScanned, sql.scan, {from_, to_, cluster});
  } else {
    // Days between first_daily and end_daily that are not whole in a step are skipped by
    // AddDaily and read from the rows.
    add(Rows::kDaily, std::string("SELECT ") + kDailyColumns + kDaysWhere,
        {first_daily, end_daily, cluster});
    for (const auto& [first, end] : row_days)
      add(Rows::kScanned, sql.scan + " AND " + kWithinOneDay + " AND " + kOnDays,
          {from_, to_, cluster, first * kDayS, end * kDayS});
    add(Rows::kScanned, sql.scan_select + kAcrossDaysWhere, {from_, to_, cluster});
  }
  add(Rows::kProposed, sql.proposed, {from_, to_, cluster});
  return plan;
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

uint32_t ShowbackBuilder::AllocationId(const AllocationGroup& g) {
  AssignAllocationGroupText(g, group_key_);
  if (auto it = allocation_ids_.find(group_key_); it != allocation_ids_.end()) return it->second;
  workload_key_.assign(g.cluster)
      .append("\x1f")
      .append(g.namespace_name)
      .append("\x1f")
      .append(g.workload);
  auto workload = workload_ids_.find(workload_key_);
  if (workload == workload_ids_.end())
    workload = workload_ids_.emplace(workload_key_, workload_ids_.size()).first;
  const auto id = static_cast<uint32_t>(allocation_texts_.size());
  allocation_texts_.push_back(&allocation_ids_.emplace(group_key_, id).first->first);
  allocation_workload_.push_back(workload->second);
  return id;
}

Status ShowbackBuilder::AddScanned(const ScanRow& in) {
  const int64_t start = in.period_start_s;
  const int64_t end = in.period_end_s;
  const auto [first, last] = StepsOf(start, end, in.time_s);
  const bool applied = in.status == ActionStatusName(ActionStatus::kApplied);
  const bool realised = applied && (in.kind == ActionKindName(ActionKind::kAppliedChange) ||
                                    in.kind == ActionKindName(ActionKind::kRollback));
  const bool metered_period = in.kind == ActionKindName(ActionKind::kMeteredPeriod);
  const uint32_t id = AllocationId(
      {in.cluster, in.namespace_name, in.workload, in.cost_center, in.gpu_model, in.before});
  for (size_t k = first; k <= last; ++k) {
    const Step& step = steps_[k];
    // The share of the row's period inside the step's window; a period that only touches the
    // step's edge is not in it.
    const int64_t whole = end > start ? end - start : 1;
    const int64_t part = end > start ? std::min(end, step.to) - std::max(start, step.from) : 1;
    if (part <= 0) continue;
    if (metered_period) metered_.insert(StepKey(k, allocation_workload_[id]));
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
    ShowbackRow& to = sums_[StepKey(k, id)];
    if (in.usage_measured)
      to.usage_measured = true;
    else
      to.usage_unmeasured = true;
    GPUVPA_RETURN_IF_ERROR(AddRow(to, r, [&] { return "row " + QuoteForError(in.action_id); }));
  }
  return OkStatus();
}

Status ShowbackBuilder::AddDaily(const DailyRow& in) {
  // A day that is not whole in one step is read from its rows instead.
  const std::optional<size_t> step = StepOfDay(in.day * kDayS);
  if (!step) return OkStatus();
  const size_t k = *step;
  const uint32_t id = AllocationId(
      {in.cluster, in.namespace_name, in.workload, in.cost_center, in.gpu_model, in.before});
  if (in.metered_periods > 0) metered_.insert(StepKey(k, allocation_workload_[id]));
  // Whole rows: the sums are the rows' own amounts, unprorated (each at most 2^63 - 1: the
  // differences below cannot overflow).
  ShowbackRow r;
  r.allocated_gpu_time = in.allocated_gpu_time;
  r.allocated = in.allocated;
  r.used_vram = in.used_vram;
  r.used_sm = in.used_sm;
  r.idle_tax_vram = in.measured_allocated - in.measured_used_vram;
  r.idle_tax_sm = in.measured_allocated - in.measured_used_sm;
  r.savings_realised_monthly = in.realised_before - in.realised_after;
  r.metered_gpu_time = in.metered_gpu_time;
  r.metered = in.metered;
  r.reserved = in.reserved;
  ShowbackRow& to = sums_[StepKey(k, id)];
  if (in.measured_rows > 0) to.usage_measured = true;
  if (in.rows > in.measured_rows) to.usage_unmeasured = true;
  return AddRow(to, r, [&] {
    return "the daily total of " +
           QuoteForError(std::string(in.cluster) + "/" + std::string(in.namespace_name) + "/" +
                         std::string(in.workload)) +
           " on " + FormatTimestamp(static_cast<double>(in.day * kDayS)).substr(0, 10);
  });
}

Status ShowbackBuilder::AddProposed(const AllocationGroup& g, int64_t monthly_before,
                                    int64_t monthly_after, std::string_view action_id,
                                    int64_t time_s) {
  // A workload's latest recommendation lies in the step, so its allocation was summed there.
  AssignAllocationGroupText(g, group_key_);
  const auto id = allocation_ids_.find(group_key_);
  if (id == allocation_ids_.end()) return OkStatus();
  const auto it = sums_.find(StepKey(StepsOf(time_s, time_s, time_s).first, id->second));
  if (it == sums_.end()) return OkStatus();
  // Each amount is within [0, kMaxLedgerMicroUsd]: the difference cannot overflow.
  return CheckedAdd(
      it->second.savings_proposed_monthly, monthly_before - monthly_after,
      "showback " + QuoteForError(group_key_) + ", adding row " + QuoteForError(action_id));
}

Result<std::vector<Showback>> ShowbackBuilder::Finish() && {
  // Each step's allocations, in the order of their text.
  std::vector<uint32_t> order(allocation_texts_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return *allocation_texts_[a] < *allocation_texts_[b]; });
  std::vector<uint32_t> rank(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::vector<std::vector<std::pair<uint32_t, ShowbackRow*>>> by_step(steps_.size());
  for (auto& [key, row] : sums_)
    by_step[key >> 32].push_back({static_cast<uint32_t>(key & 0xffffffff), &row});
  std::vector<Showback> out;
  out.reserve(steps_.size());
  const bool stepped = query_.step_s.has_value();
  for (size_t k = 0; k < steps_.size(); ++k) {
    Showback& s = out.emplace_back();
    s.from_s = stepped ? std::optional(steps_[k].from) : query_.from_s;
    s.to_s = stepped ? std::optional(steps_[k].to) : query_.to_s;
    auto& allocations = by_step[k];
    std::sort(allocations.begin(), allocations.end(),
              [&](const auto& a, const auto& b) { return rank[a.first] < rank[b.first]; });
    std::map<std::string_view, ShowbackRow> groups;
    for (auto& [id, row] : allocations) {
      ShowbackRow& a = *row;
      const std::string& text = *allocation_texts_[id];
      // The bill, each GPU-second once: a workload metered in the step is billed its metered
      // time, its allocation estimate left out.
      const bool metered = metered_.contains(StepKey(k, allocation_workload_[id]));
      a.billed_metered = a.metered;
      a.allocated_unbilled = metered ? a.allocated : 0;
      a.billed = a.metered;
      a.billed_gpu_time = a.metered_gpu_time;
      if (!metered &&
          (__builtin_add_overflow(a.billed, a.allocated, &a.billed) ||
           __builtin_add_overflow(a.billed_gpu_time, a.allocated_gpu_time, &a.billed_gpu_time)))
        return InvalidArgumentError("showback " + QuoteForError(text) +
                                    ": billed sum overflows (metered plus allocated)");
      if (query_.group_by == ShowbackGroup::kAllocation) {
        a.group = text;
        s.groups.push_back(std::move(a));
        continue;
      }
      Result<AllocationGroup> g = ParseAllocationGroup(text);
      if (!g.ok()) return g.status();
      const std::string_view group = query_.group_by == ShowbackGroup::kGpuModel  ? g->gpu_model
                                     : query_.group_by == ShowbackGroup::kCluster ? g->cluster
                                                                                  : g->cost_center;
      auto it = groups.find(group);
      if (it == groups.end()) it = groups.emplace(group, ShowbackRow{std::string(group)}).first;
      GPUVPA_RETURN_IF_ERROR(AddShowbackRow(it->second, a, "allocation", g->workload));
    }
    for (auto& [key, row] : groups) s.groups.push_back(std::move(row));
    // Integer sums: the total of the groups is exact, and every row belongs to exactly one
    // group (the grouping columns are NOT NULL).
    s.total.group = "TOTAL";
    for (const ShowbackRow& r : s.groups)
      GPUVPA_RETURN_IF_ERROR(AddShowbackRow(s.total, r, "group", r.group));
  }
  return out;
}

}  // namespace gpuvpa::ledger_sql

namespace gpuvpa {

Status AddShowbackRow(ShowbackRow& to, const ShowbackRow& add, std::string_view what,
                      std::string_view name) {
  GPUVPA_RETURN_IF_ERROR(
      ledger_sql::AddRow(to, add, [&] { return std::string(what) + " " + QuoteForError(name); }));
  to.usage_measured |= add.usage_measured;
  to.usage_unmeasured |= add.usage_unmeasured;
  return OkStatus();
}

}  // namespace gpuvpa

namespace gpuvpa::ledger_sql {

std::string DailyTotalsSelect(std::string_view source) {
  return "SELECT CASE WHEN period_end_s > period_start_s THEN period_start_s ELSE time_s END / "
         "86400 AS day, cluster, namespace, workload, cost_center, gpu_model, before, COUNT(*), "
         "SUM(usage_measured), SUM(CASE WHEN kind = 'metered_period' THEN 1 ELSE 0 END), "
         "SUM(allocated_milli_gpu_s), SUM(allocated_micro_usd), SUM(used_vram_micro_usd), "
         "SUM(used_sm_micro_usd), SUM(usage_measured * allocated_micro_usd), SUM(usage_measured * "
         "used_vram_micro_usd), SUM(usage_measured * used_sm_micro_usd), SUM(CASE WHEN status = "
         "'applied' AND kind IN ('applied_change', 'rollback') THEN monthly_before_micro_usd ELSE "
         "0 END), SUM(CASE WHEN status = 'applied' AND kind IN ('applied_change', 'rollback') THEN "
         "monthly_after_micro_usd ELSE 0 END), SUM(metered_milli_gpu_s), SUM(metered_micro_usd), "
         "SUM(reserved_micro_usd) FROM " +
         std::string(source) + " WHERE " + kWithinOneDay +
         " GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7";
}

std::string DailyTotalsAdd() {
  static constexpr const char* kSums[] = {"row_count",
                                          "measured_rows",
                                          "metered_periods",
                                          "allocated_milli_gpu_s",
                                          "allocated_micro_usd",
                                          "used_vram_micro_usd",
                                          "used_sm_micro_usd",
                                          "measured_allocated_micro_usd",
                                          "measured_used_vram_micro_usd",
                                          "measured_used_sm_micro_usd",
                                          "realised_before_micro_usd",
                                          "realised_after_micro_usd",
                                          "metered_milli_gpu_s",
                                          "metered_micro_usd",
                                          "reserved_micro_usd"};
  std::string out =
      "ON CONFLICT (day, cluster, namespace, workload, cost_center, gpu_model, before) DO UPDATE "
      "SET ";
  for (const char* c : kSums)
    out.append(c == kSums[0] ? "" : ", ")
        .append(c)
        .append(" = ledger_daily.")
        .append(c)
        .append(" + excluded.")
        .append(c);
  return out;
}

std::string MigrationText(std::string_view sql, std::string_view cluster) {
  std::string out(sql);
  auto replace = [&](std::string_view mark, const std::string& with) {
    for (size_t p = out.find(mark); p != std::string::npos; p = out.find(mark, p + with.size()))
      out.replace(p, mark.size(), with);
  };
  replace("{{cluster}}", std::string(cluster));
  for (std::string_view source : {"actions", "new_rows"})
    replace("{{daily totals of " + std::string(source) + "}}", DailyTotalsSelect(source));
  replace("{{add to daily totals}}", DailyTotalsAdd());
  return out;
}

}  // namespace gpuvpa::ledger_sql
