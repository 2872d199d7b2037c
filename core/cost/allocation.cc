// OpenCost allocation queries over the ledger: parameters, windows, aggregation, the envelope.
#include "core/cost/allocation.h"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/base/names.h"
#include "core/base/time_format.h"
#include "core/cost/money.h"
#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"

namespace gpuvpa {
namespace {

constexpr std::string_view kUnallocated = "__unallocated__";

Status BadParameter(std::string_view parameter, std::string_view value, std::string_view why) {
  return InvalidArgumentError(std::string(parameter) + " " + QuoteForError(value) + ": " +
                              std::string(why));
}

// A positive count followed by a unit, in seconds; nullopt when `text` is not of that form.
std::optional<int64_t> DurationSeconds(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return std::nullopt;
  }
  const std::string_view digits = text.substr(0, text.size() - 1);
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  // At most about 100 years: the product cannot overflow.
  if (ec != std::errc() || end != digits.data() + digits.size() || n <= 0 ||
      n > 3'200'000'000 / unit)
    return std::nullopt;
  return n * unit;
}

int64_t UnixOf(absl::CivilSecond t) {
  return absl::ToUnixSeconds(absl::FromCivil(t, absl::UTCTimeZone()));
}

// One endpoint of a "start,end" window: RFC 3339 or Unix seconds, whole seconds.
Result<int64_t> WindowEnd(std::string_view text, std::string_view window) {
  Result<double> t = ParseTimestamp(text);
  if (!t.ok() || !(*t >= 0 && *t <= static_cast<double>(kMaxLedgerTimeS)))
    return BadParameter("window", window,
                        "\"" + std::string(text) +
                            "\" is not an RFC 3339 time or Unix seconds between 1970 and 2100");
  return static_cast<int64_t>(std::floor(*t));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded: '+' is a space, %XX a byte.
Result<std::string> PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      const int hi = i + 2 < text.size() ? HexDigit(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexDigit(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return InvalidArgumentError("query string: bad percent escape in " + QuoteForError(text));
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  if (!IsValidUtf8(out))
    return InvalidArgumentError("query string: " + QuoteForError(out) + " is not UTF-8");
  return out;
}

Result<bool> ParseBool(std::string_view parameter, std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return BadParameter(parameter, text, "is not true or false");
}

Result<AggregateBy> ParseAggregateBy(std::string_view item, std::string_view whole) {
  static const std::pair<std::string_view, AllocationProperty> kNames[] = {
      {"cluster", AllocationProperty::kCluster},
      {"namespace", AllocationProperty::kNamespace},
      {"controllerKind", AllocationProperty::kControllerKind},
      {"controller", AllocationProperty::kController},
      {"pod", AllocationProperty::kPod},
      {"container", AllocationProperty::kContainer},
      {"costCenter", AllocationProperty::kCostCenter},
      {"gpuModel", AllocationProperty::kGpuModel},
      {"migProfile", AllocationProperty::kMigProfile},
  };
  for (const auto& [name, property] : kNames)
    if (item == name) return AggregateBy{property, ""};
  for (const auto& [prefix, property] :
       {std::pair{std::string_view("label:"), AllocationProperty::kLabel},
        {std::string_view("annotation:"), AllocationProperty::kAnnotation}}) {
    if (item.substr(0, prefix.size()) != prefix) continue;
    const std::string_view key = item.substr(prefix.size());
    if (key.empty() || key.size() > 317)
      return BadParameter("aggregate", whole, "\"" + std::string(item) + "\" names no key");
    return AggregateBy{property, std::string(key)};
  }
  return BadParameter("aggregate", whole,
                      "\"" + std::string(item) +
                          "\" is not one of cluster, namespace, controllerKind, controller, pod, "
                          "container, label:<key>, annotation:<key>, costCenter, gpuModel, "
                          "migProfile");
}

// One allocation as the API shows it: the finest groups it sums, and the properties they agree on.
struct Allocation {
  ShowbackRow sums;
  std::map<std::string, std::string> properties;  // a property whose parts differ is dropped
  std::string resource;                           // likewise
  bool first = true;
};

// The MIG profile of a parsed resource text ("nvidia.com/mig-3g.40gb=1" -> "3g.40gb"), or "".
std::string MigProfileOf(const Result<GpuAllocation>& held) {
  return held.ok() && held->kind == AllocationKind::kMigInstance ? held->mig_profile : "";
}

// The value of `by` for one finest group; kUnallocated where the ledger does not know it.
std::string ValueOf(const AggregateBy& by, const AllocationGroup& g, const AllocationNames& n) {
  auto known = [](std::string_view v) {
    return v.empty() ? std::string(kUnallocated) : std::string(v);
  };
  switch (by.property) {
    case AllocationProperty::kCluster:
      return known(g.cluster);
    case AllocationProperty::kNamespace:
      return known(g.namespace_name);
    case AllocationProperty::kControllerKind:
      return known(n.controller_kind);
    case AllocationProperty::kController:
      return known(n.controller);
    case AllocationProperty::kContainer:
      return known(n.container);
    case AllocationProperty::kCostCenter:
      return known(g.cost_center);
    case AllocationProperty::kGpuModel:
      return known(g.gpu_model);
    case AllocationProperty::kMigProfile:
      return known(MigProfileOf(ParseGpuAllocation(g.resource)));
    case AllocationProperty::kPod:    // the ledger charges workloads, not pods
    case AllocationProperty::kLabel:  // nor does it keep labels or annotations
    case AllocationProperty::kAnnotation:
      break;
  }
  return std::string(kUnallocated);
}

double Rounded(double x) {
  if (!std::isfinite(x)) return 0;
  return std::round(x * 1e5) / 1e5;
}

// a / b, or 0 when b is 0 (never NaN).
double Ratio(double a, double b) { return b == 0 ? 0 : a / b; }

// JSON text written straight into a string: an allocation answer is megabytes, and building
// a document tree of it first cost more than the ledger query.
class JsonText {
 public:
  explicit JsonText(std::string& out) : out_(out) {}
  // '{' or '['; Close with the matching character.
  JsonText& Open(char c) {
    Separate();
    out_ += c;
    first_ = true;
    return *this;
  }
  JsonText& Close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  JsonText& Key(std::string_view key) {
    Str(key);
    out_ += ':';
    first_ = true;  // the value follows without a comma
    return *this;
  }
  JsonText& Str(std::string_view v) {
    Separate();
    out_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        out_ += "\\u00";
        out_ += kHex[(c >> 4) & 0xf];
        out_ += kHex[c & 0xf];
      } else {
        out_ += c;
      }
    }
    out_ += '"';
    return *this;
  }
  // Finite numbers only (Rounded's): the shortest text that reads back the same.
  JsonText& Num(double v) {
    Separate();
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0);
    out_.append(buf, ec == std::errc() ? end : buf);
    return *this;
  }
  JsonText& Int(int64_t v) {
    Separate();
    char buf[24];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, ec == std::errc() ? end : buf);
    return *this;
  }
  JsonText& Bool(bool v) {
    Separate();
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonText& Null() {
    Separate();
    out_ += "null";
    return *this;
  }
  // `text`, or null when it is empty.
  JsonText& StrOrNull(std::string_view text) { return text.empty() ? Null() : Str(text); }

 private:
  void Separate() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

void WriteAllocation(JsonText& j, std::string_view name, const Allocation& a, int64_t from_s,
                     int64_t to_s) {
  const ShowbackRow& r = a.sums;
  const double hours = static_cast<double>(to_s - from_s) / 3600;
  const double gpu_hours = MilliGpuSecondsToGpuHours(r.billed_gpu_time);
  const double allocated_hours = MilliGpuSecondsToGpuHours(r.allocated_gpu_time);
  const bool measured = r.usage_measured && !r.usage_unmeasured;
  // Efficiency on the billable basis (VRAM residency): used / allocated.
  const double efficiency =
      measured
          ? std::clamp(Ratio(static_cast<double>(r.used_vram), static_cast<double>(r.allocated)),
                       0.0, 1.0)
          : 0.0;
  const std::string start = FormatTimestamp(static_cast<double>(from_s));
  const std::string end = FormatTimestamp(static_cast<double>(to_s));
  j.Open('{').Key("name").Str(name).Key("properties").Open('{');
  for (const auto& [key, value] : a.properties) j.Key(key).Str(value);
  j.Key("labels").Open('{').Close('}').Close('}');
  j.Key("window").Open('{').Key("start").Str(start).Key("end").Str(end).Close('}');
  j.Key("start").Str(start).Key("end").Str(end).Key("minutes").Num(Rounded(hours * 60));
  for (const char* zero : {"cpuCores",
                           "cpuCoreRequestAverage",
                           "cpuCoreUsageAverage",
                           "cpuCoreHours",
                           "cpuCost",
                           "cpuCostAdjustment",
                           "cpuEfficiency",
                           "ramBytes",
                           "ramByteRequestAverage",
                           "ramByteUsageAverage",
                           "ramByteHours",
                           "ramCost",
                           "ramCostAdjustment",
                           "ramEfficiency",
                           "pvBytes",
                           "pvByteHours",
                           "pvCost",
                           "pvCostAdjustment",
                           "networkTransferBytes",
                           "networkReceiveBytes",
                           "networkCost",
                           "networkCrossZoneCost",
                           "networkCrossRegionCost",
                           "networkInternetCost",
                           "networkCostAdjustment",
                           "loadBalancerCost",
                           "loadBalancerCostAdjustment",
                           "sharedCost",
                           "externalCost",
                           "gpuCostAdjustment"})
    j.Key(zero).Int(0);
  j.Key("gpuCount").Num(Rounded(Ratio(gpu_hours, hours)));
  j.Key("gpuHours").Num(Rounded(gpu_hours));
  j.Key("gpuCost").Num(Rounded(MicroToUsd(r.billed)));
  j.Key("gpuCostIdle")
      .Num(Rounded(measured ? MicroToUsd(std::max<MicroUsd>(r.idle_tax_vram, 0)) : 0));
  j.Key("gpuEfficiency").Num(Rounded(efficiency));
  const Result<GpuAllocation> held = ParseGpuAllocation(a.resource);
  const std::string mig = MigProfileOf(held);
  const bool shared = held.ok() && (held->kind == AllocationKind::kSharedReplica ||
                                    held->kind == AllocationKind::kMilliGpu);
  const auto model = a.properties.find("gpuModel");
  j.Key("gpuAllocation").Open('{');
  j.Key("gpuDevice").Str("");
  j.Key("gpuModel").Str(model != a.properties.end() ? std::string_view(model->second) : "");
  j.Key("gpuUUID").Str("");
  j.Key("isGPUShared").Bool(shared);
  j.Key("gpuUsageAverage").Num(Rounded(Ratio(allocated_hours, hours) * efficiency));
  j.Key("gpuRequestAverage").Num(Rounded(Ratio(allocated_hours, hours)));
  j.Close('}');
  j.Key("totalCost").Num(Rounded(MicroToUsd(r.billed)));
  j.Key("totalEfficiency").Num(Rounded(efficiency));
  j.Key("rawAllocationOnly").Null();
  // What only gpuvpa knows, exact: integers in micro-dollars and milli-GPU-seconds.
  j.Key("gpuvpa").Open('{');
  j.Key("basis").Str(r.billed_metered == r.billed && r.billed > 0 ? "metered" : "allocation");
  j.Key("usageMeasured").Bool(measured);
  j.Key("resource").StrOrNull(a.resource);
  j.Key("migProfile").StrOrNull(mig);
  j.Key("deviceFraction");
  std::optional<double> fraction;
  if (held.ok() && model != a.properties.end()) {
    Result<const GpuModel*> m = GpuCatalog::BuiltIn().FindModel(model->second);
    if (m.ok())
      if (Result<double> f = DeviceFraction(*held, *m); f.ok()) fraction = Rounded(*f);
  }
  if (fraction)
    j.Num(*fraction);
  else
    j.Null();
  const std::pair<const char*, int64_t> exact[] = {
      {"billedMicroUsd", r.billed},
      {"billedMeteredMicroUsd", r.billed_metered},
      {"allocatedMicroUsd", r.allocated},
      {"allocatedUnbilledMicroUsd", r.allocated_unbilled},
      {"usedVramMicroUsd", r.used_vram},
      {"usedSmMicroUsd", r.used_sm},
      {"meteredMicroUsd", r.metered},
      {"reservedMicroUsd", r.reserved},
      {"savingsProposedMonthlyMicroUsd", r.savings_proposed_monthly},
      {"savingsRealisedMonthlyMicroUsd", r.savings_realised_monthly},
      {"billedMilliGpuSeconds", r.billed_gpu_time},
      {"allocatedMilliGpuSeconds", r.allocated_gpu_time},
      {"meteredMilliGpuSeconds", r.metered_gpu_time}};
  for (const auto& [key, value] : exact) j.Key(key).Int(value);
  // Idle tax is unknown, not $0, where no usage was measured.
  for (const auto& [key, value] :
       {std::pair{"idleTaxVramMicroUsd", r.idle_tax_vram}, {"idleTaxSmMicroUsd", r.idle_tax_sm}}) {
    j.Key(key);
    if (r.usage_measured)
      j.Int(value);
    else
      j.Null();
  }
  j.Close('}').Close('}');
}

Status AddAllocation(Allocation& to, const ShowbackRow& row, const AllocationGroup& g,
                     const AllocationNames& n) {
  const std::pair<const char*, std::string_view> props[] = {{"cluster", g.cluster},
                                                            {"namespace", g.namespace_name},
                                                            {"controllerKind", n.controller_kind},
                                                            {"controller", n.controller},
                                                            {"container", n.container},
                                                            {"costCenter", g.cost_center},
                                                            {"gpuModel", g.gpu_model}};
  if (to.first) {
    for (const auto& [key, value] : props) to.properties[key] = std::string(value);
    to.resource = std::string(g.resource);
    to.first = false;
  } else {
    for (const auto& [key, value] : props)
      if (auto it = to.properties.find(key); it != to.properties.end() && it->second != value)
        to.properties.erase(it);
    if (to.resource != g.resource) to.resource.clear();
  }
  return AddShowbackRow(to.sums, row, "allocation", g.workload);
}

// A finest group as the aggregation sees it: its parts, and the name it is summed under.
struct Finest {
  AllocationGroup group;  // views into the showback's group text
  AllocationNames names;
  std::string name;
};
// By group text: the steps of one answer share their groups.
using FinestCache = std::unordered_map<std::string_view, Finest>;

Result<const Finest*> FinestOf(const std::string& text, const AllocationRequest& request,
                               FinestCache& cache) {
  if (auto it = cache.find(text); it != cache.end()) return &it->second;
  Result<AllocationGroup> g = ParseAllocationGroup(text);
  if (!g.ok()) return g.status();
  Finest f{*g, SplitWorkload(g->workload), ""};
  if (request.aggregate.empty()) {
    // OpenCost's unaggregated name is cluster/node/namespace/pod/container; the ledger's
    // finest is the workload-container.
    for (std::string_view part :
         {f.group.cluster, f.group.namespace_name, std::string_view(f.names.controller_kind),
          std::string_view(f.names.controller), std::string_view(f.names.container)})
      f.name.append(f.name.empty() ? "" : "/").append(part.empty() ? kUnallocated : part);
  } else {
    for (const AggregateBy& by : request.aggregate)
      f.name.append(f.name.empty() ? "" : "/").append(ValueOf(by, f.group, f.names));
  }
  return &cache.emplace(text, std::move(f)).first->second;
}

// One step's map: the finest groups summed into the names the aggregation gives them.
Status WriteStep(JsonText& j, const Showback& step, const AllocationRequest& request,
                 FinestCache& cache) {
  std::map<std::string_view, Allocation> by_name;
  for (const ShowbackRow& row : step.groups) {
    Result<const Finest*> f = FinestOf(row.group, request, cache);
    if (!f.ok()) return f.status();
    GPUVPA_RETURN_IF_ERROR(AddAllocation(by_name[(*f)->name], row, (*f)->group, (*f)->names));
  }
  j.Open('{');
  for (const auto& [key, a] : by_name) {
    j.Key(key);
    WriteAllocation(j, key, a, *step.from_s, *step.to_s);
  }
  j.Close('}');
  return OkStatus();
}

}  // namespace

AllocationNames SplitWorkload(std::string_view workload) {
  AllocationNames n;
  const size_t first = workload.find('/');
  if (first == std::string_view::npos) {
    n.controller = std::string(workload);
    return n;
  }
  n.controller_kind = std::string(workload.substr(0, first));
  const std::string_view rest = workload.substr(first + 1);
  const size_t second = rest.find('/');
  n.controller = std::string(rest.substr(0, second));
  if (second != std::string_view::npos) n.container = std::string(rest.substr(second + 1));
  return n;
}

Result<std::pair<int64_t, int64_t>> ParseAllocationWindow(std::string_view text, int64_t now_s) {
  const absl::CivilDay today = absl::ToCivilDay(absl::FromUnixSeconds(now_s), absl::UTCTimeZone());
  absl::CivilDay sunday = today;
  while (absl::GetWeekday(sunday) != absl::Weekday::sunday) --sunday;
  const absl::CivilMonth month(today);
  if (text == "today") return std::pair{UnixOf(today), now_s};
  if (text == "yesterday") return std::pair{UnixOf(today - 1), UnixOf(today)};
  if (text == "week") return std::pair{UnixOf(sunday), now_s};
  if (text == "lastweek") return std::pair{UnixOf(sunday - 7), UnixOf(sunday)};
  if (text == "month") return std::pair{UnixOf(month), now_s};
  if (text == "lastmonth") return std::pair{UnixOf(month - 1), UnixOf(month)};
  if (std::optional<int64_t> d = DurationSeconds(text)) {
    if (*d > now_s) return BadParameter("window", text, "reaches back before 1970");
    return std::pair{now_s - *d, now_s};
  }
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos)
    return BadParameter("window", text,
                        "is not today, yesterday, week, lastweek, month, lastmonth, a duration "
                        "(30m, 12h, 7d, 2w) or start,end (RFC 3339 or Unix seconds)");
  Result<int64_t> start = WindowEnd(text.substr(0, comma), text);
  if (!start.ok()) return start.status();
  Result<int64_t> end = WindowEnd(text.substr(comma + 1), text);
  if (!end.ok()) return end.status();
  if (*start >= *end) return BadParameter("window", text, "does not start before it ends");
  return std::pair{*start, *end};
}

Result<int64_t> ParseAllocationStep(std::string_view text) {
  std::optional<int64_t> d = DurationSeconds(text);
  if (!d) {
    int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec == std::errc() && end == text.data() + text.size() && seconds > 0) d = seconds;
  }
  if (!d) return BadParameter("step", text, "is not a duration such as 30m, 6h, 1d or 1w");
  if (*d < 60) return BadParameter("step", text, "is shorter than a minute");
  return *d;
}

Result<AllocationRequest> ParseAllocationRequest(std::string_view query_string, int64_t now_s) {
  std::map<std::string, std::string> params;
  size_t start = 0;
  while (start <= query_string.size()) {
    size_t end = query_string.find('&', start);
    if (end == std::string_view::npos) end = query_string.size();
    const std::string_view pair = query_string.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    Result<std::string> key = PercentDecoded(pair.substr(0, eq));
    if (!key.ok()) return key.status();
    Result<std::string> value =
        PercentDecoded(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!value.ok()) return value.status();
    static const std::string_view kKnown[] = {"window",     "aggregate",   "step",
                                              "accumulate", "includeIdle", "shareIdle"};
    if (std::find(std::begin(kKnown), std::end(kKnown), *key) == std::end(kKnown))
      return BadParameter("parameter", *key,
                          "is not served: window, aggregate, step, accumulate, includeIdle, "
                          "shareIdle");
    if (!params.emplace(*key, *value).second)
      return BadParameter(*key, *value, "is given more than once");
  }
  AllocationRequest request;
  auto it = params.find("window");
  if (it == params.end()) return InvalidArgumentError("window: the parameter is required");
  Result<std::pair<int64_t, int64_t>> window = ParseAllocationWindow(it->second, now_s);
  if (!window.ok()) return window.status();
  request.from_s = window->first;
  request.to_s = window->second;
  if ((it = params.find("step")) != params.end()) {
    Result<int64_t> step = ParseAllocationStep(it->second);
    if (!step.ok()) return step.status();
    if ((request.to_s - request.from_s + *step - 1) / *step >
        static_cast<int64_t>(kMaxShowbackSteps))
      return BadParameter(
          "step", it->second,
          "makes more than " + std::to_string(kMaxShowbackSteps) + " steps of the window");
    request.step_s = *step;
  }
  if ((it = params.find("aggregate")) != params.end() && !it->second.empty()) {
    std::string_view rest = it->second;
    while (true) {
      const size_t comma = rest.find(',');
      Result<AggregateBy> by = ParseAggregateBy(rest.substr(0, comma), it->second);
      if (!by.ok()) return by.status();
      request.aggregate.push_back(*by);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  for (auto [name, target] : {std::pair{"accumulate", &request.accumulate},
                              {"includeIdle", &request.include_idle},
                              {"shareIdle", &request.share_idle}}) {
    if ((it = params.find(name)) == params.end()) continue;
    Result<bool> b = ParseBool(name, it->second);
    if (!b.ok()) return b.status();
    *target = *b;
  }
  return request;
}

ShowbackQuery AllocationShowbackQuery(const AllocationRequest& request) {
  ShowbackQuery query;
  query.group_by = ShowbackGroup::kAllocation;
  query.from_s = request.from_s;
  query.to_s = request.to_s;
  // Accumulated: one showback over the whole window, so that it equals `gpuvpa showback` for
  // that window to the micro-dollar (a sum of prorated steps may differ in rounding).
  if (!request.accumulate) query.step_s = request.step_s;
  return query;
}

Result<std::string> AllocationResponse(const Ledger& ledger, const AllocationRequest& request) {
  Result<std::vector<Showback>> steps = ledger.QueryShowbackSteps(AllocationShowbackQuery(request));
  if (!steps.ok()) return steps.status();
  std::string out;
  JsonText j(out);
  j.Open('{').Key("code").Int(200).Key("status").Str("success").Key("data").Open('[');
  FinestCache cache;
  for (const Showback& step : *steps) GPUVPA_RETURN_IF_ERROR(WriteStep(j, step, request, cache));
  j.Close(']').Close('}');
  return out;
}

std::string AllocationErrorBody(int code, std::string_view message) {
  nlohmann::json doc = {{"code", code}, {"status", "error"}, {"message", std::string(message)}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpuvpa
