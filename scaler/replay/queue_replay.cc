// Queue replay simulation.
#include "scaler/replay/queue_replay.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>

#include "core/base/text_lines.h"
#include "core/base/time_format.h"

namespace gpuvpa::scaler {
namespace {

struct Replica {
  double created_s;
  double ready_s;
  double free_s;  // when its current request finishes
  bool draining = false;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto k =
      static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - (p > 0 ? 1 : 0);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// The p99 queueing delay of `n` replicas that are always ready, first come first served.
double FixedReplicasWaitP99(const std::vector<Arrival>& requests, int n) {
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int i = 0; i < n; ++i) free_at.push(-std::numeric_limits<double>::infinity());
  std::vector<double> waits;
  waits.reserve(requests.size());
  for (const Arrival& a : requests) {
    const double begin = std::max(a.time_s, free_at.top());
    free_at.pop();
    waits.push_back(begin - a.time_s);
    free_at.push(begin + a.service_s);
  }
  return Percentile(waits, 0.99);
}

}  // namespace

Result<std::vector<Arrival>> ReadArrivalRequests(std::string_view csv,
                                                 std::string_view service_column,
                                                 double service_unit_s, double default_service_s) {
  std::vector<Arrival> out;
  if (csv.find('\n') == std::string_view::npos)
    return InvalidArgumentError("arrivals: no header line");
  size_t pos = 0;
  const std::string_view header = NextLine(csv, pos);
  // The service column's index among the comma-separated fields.
  size_t column = 0;
  if (!service_column.empty()) {
    bool found = false;
    for (size_t start = 0, i = 0; start <= header.size(); ++i) {
      const size_t comma = std::min(header.find(',', start), header.size());
      if (header.substr(start, comma - start) == service_column) {
        column = i;
        found = true;
        break;
      }
      start = comma + 1;
    }
    if (!found)
      return InvalidArgumentError("--service-column \"" + std::string(service_column) +
                                  "\" is not a column of the arrivals header \"" +
                                  std::string(header.substr(0, 200)) + "\"");
  }
  for (size_t line_no = 2; pos < csv.size(); ++line_no) {
    const std::string_view line = NextLine(csv, pos);
    if (line.empty()) continue;
    Result<double> t = ParseTimestamp(line.substr(0, line.find(',')));
    if (!t.ok())
      return InvalidArgumentError("arrivals line " + std::to_string(line_no) + ": " +
                                  t.status().message());
    Arrival a{*t, default_service_s};
    if (!service_column.empty()) {
      std::string_view field = line;
      for (size_t i = 0; i < column; ++i) {
        const size_t comma = field.find(',');
        field = comma == std::string_view::npos ? std::string_view() : field.substr(comma + 1);
      }
      field = field.substr(0, field.find(','));
      double v = 0;
      auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || p != field.data() + field.size() || !std::isfinite(v) || v <= 0 ||
          v * service_unit_s > 86400)
        return InvalidArgumentError("arrivals line " + std::to_string(line_no) + ": " +
                                    std::string(service_column) + " \"" + std::string(field) +
                                    "\" is not a service time (positive, at most a day)");
      a.service_s = v * service_unit_s;
    }
    out.push_back(a);
  }
  if (out.empty()) return InvalidArgumentError("arrivals: no requests");
  return out;
}

std::string GenerateDemoArrivals(const DemoArrivalsOptions& o) {
  uint64_t state = o.seed;
  auto uniform = [&state] {  // splitmix64 -> [0, 1)
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  std::string csv = "timestamp,service_seconds\n";
  for (int day = 0; day < o.days; ++day) {
    const double from = o.start_time_s + day * 86400.0 + o.window_start_h * 3600;
    const double to = from + o.window_hours * 3600;
    for (double t = from - o.mean_interarrival_s * std::log(1 - uniform()); t < to;
         t -= o.mean_interarrival_s * std::log(1 - uniform())) {
      const int service = 40 + static_cast<int>(uniform() * 41);
      csv += FormatTimestamp(std::floor(t)) + "," + std::to_string(service) + "\n";
    }
  }
  return csv;
}

Result<std::vector<double>> ReadArrivals(std::string_view csv) {
  Result<std::vector<Arrival>> requests = ReadArrivalRequests(csv, {}, 1, 1);
  if (!requests.ok()) return requests.status();
  std::vector<double> out;
  out.reserve(requests->size());
  for (const Arrival& a : *requests) out.push_back(a.time_s);
  return out;
}

Result<QueueReplayResult> ReplayQueue(std::vector<double> arrivals, const QueueReplayOptions& o) {
  std::vector<Arrival> requests;
  requests.reserve(arrivals.size());
  for (double t : arrivals) requests.push_back({t, o.service_s});
  return ReplayQueue(std::move(requests), o);
}

namespace {

// The poll loop's state: replicas, the requests they serve, KEDA's and the HPA's decisions.
class Simulation {
 public:
  Simulation(const std::vector<Arrival>& requests, const std::vector<double>& arrivals,
             const QueueReplayOptions& o, QueueReplayResult& r)
      : requests_(requests), arrivals_(arrivals), o_(o), r_(r) {
    waits_.reserve(arrivals.size());
    zero_since_ = end_ = arrivals.front();
  }

  // Serves everything that can start before `tick` with the replicas of the last interval.
  void Serve(double tick) {
    while (next_ < arrivals_.size()) {
      Replica* best = nullptr;
      for (Replica& rep : replicas_) {
        if (rep.draining) continue;
        if (best == nullptr ||
            std::max(rep.ready_s, rep.free_s) < std::max(best->ready_s, best->free_s))
          best = &rep;
      }
      if (best == nullptr) break;
      const double begin = std::max({best->ready_s, best->free_s, arrivals_[next_]});
      if (begin >= tick) break;
      waits_.push_back(begin - arrivals_[next_]);
      best->free_s = begin + requests_[next_].service_s;
      finish_times_.push_back(best->free_s);
      ++next_;
    }
  }
  bool Done() const { return next_ == arrivals_.size() && replicas_.empty(); }

  // Draining replicas that finished by `tick` go, charged until `retired_at` (their finish, or
  // the tick).
  void RetireDrained(double tick, bool at_finish) {
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      if (it->draining && it->free_s <= tick) {
        r_.metered_gpu_s += ((at_finish ? it->free_s : tick) - it->created_s) * o_.gpu_per_replica;
        end_ = std::max(end_, at_finish ? it->free_s : tick);
        it = replicas_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // The queue depth KEDA reads at `tick`: arrived and not started, plus in service.
  double Depth(double tick) const {
    const auto arrived = static_cast<size_t>(
        std::upper_bound(arrivals_.begin(), arrivals_.end(), tick) - arrivals_.begin());
    const auto in_service = static_cast<size_t>(std::count_if(
        finish_times_.begin(), finish_times_.end(), [&](double f) { return f > tick; }));
    return static_cast<double>(arrived - std::min(arrived, next_) + in_service);
  }

  // The replica count after KEDA's activation and cooldown and the HPA's stabilization window.
  int Effective(double tick, double depth) {
    const bool active = depth > o_.activation_threshold;
    if (active) last_active_ = tick;
    int desired = std::min(o_.max_replicas, static_cast<int>(std::ceil(depth / o_.target)));
    if (tick - last_active_ < o_.cooldown_s || active)
      desired = std::max(desired, 1);
    else
      desired = 0;
    desired_history_.emplace_back(tick, desired);
    while (!desired_history_.empty() && desired_history_.front().first <= tick - o_.stabilization_s)
      desired_history_.pop_front();
    int effective = desired;
    for (const auto& [t, d] : desired_history_) effective = std::max(effective, d);
    if (desired == 0 && tick - last_active_ >= o_.cooldown_s) effective = 0;  // KEDA: 1 -> 0
    return effective;
  }

  void ScaleTo(int effective, double tick) {
    int serving = static_cast<int>(std::count_if(replicas_.begin(), replicas_.end(),
                                                 [](const Replica& rep) { return !rep.draining; }));
    if (effective > serving) {
      if (serving == 0) ++r_.cold_starts;
      if (at_zero_) {
        r_.idle_at_zero_s += tick - zero_since_;
        at_zero_ = false;
      }
      for (int i = serving; i < effective; ++i)
        replicas_.push_back({tick, tick + o_.cold_start_s, tick + o_.cold_start_s});
      r_.replica_starts += effective - serving;
    } else if (effective < serving) {
      // Idle replicas go first; busy ones finish their request.
      std::stable_sort(replicas_.begin(), replicas_.end(),
                       [](const Replica& a, const Replica& b) { return a.free_s < b.free_s; });
      for (Replica& rep : replicas_) {
        if (serving == effective) break;
        if (rep.draining) continue;
        rep.draining = true;
        --serving;
      }
      RetireDrained(tick, false);
      if (replicas_.empty() && !at_zero_) {
        at_zero_ = true;
        zero_since_ = tick;
      }
    }
    r_.peak_replicas = std::max(r_.peak_replicas, static_cast<int>(replicas_.size()));
    end_ = std::max(end_, tick);
  }

  // Requests that will never be served: every one has arrived, none is in service and nothing
  // will scale up (their depth never exceeds the activation threshold).
  size_t Stranded(int effective, double tick) const {
    return replicas_.empty() && effective == 0 && tick >= arrivals_.back() &&
                   next_ < arrivals_.size()
               ? arrivals_.size() - next_
               : 0;
  }

  // Duration and waits, once done.
  void Finish() {
    if (!finish_times_.empty())
      end_ = std::max(end_, *std::max_element(finish_times_.begin(), finish_times_.end()));
    r_.duration_s = end_ - arrivals_.front();
    r_.reserved_gpu_s = r_.peak_replicas * o_.gpu_per_replica * r_.duration_s;
    r_.wait_p50_s = Percentile(waits_, 0.50);
    r_.wait_p99_s = Percentile(waits_, 0.99);
    r_.wait_max_s = waits_.empty() ? 0 : *std::max_element(waits_.begin(), waits_.end());
  }

 private:
  const std::vector<Arrival>& requests_;
  const std::vector<double>& arrivals_;
  const QueueReplayOptions& o_;
  QueueReplayResult& r_;
  std::vector<Replica> replicas_;
  std::vector<double> waits_;
  std::deque<std::pair<double, int>> desired_history_;  // (tick, desired) in the window
  size_t next_ = 0;                                     // first request not yet started
  std::vector<double> finish_times_;  // of started requests, to count those in service
  double last_active_ = -std::numeric_limits<double>::infinity();
  double zero_since_ = 0;
  bool at_zero_ = true;
  double end_ = 0;
};

// Baseline (a): the fewest always-on replicas that do as well on p99 (more never does worse, so
// the search is a bisection between one replica and the peak).
void FixedReplicasBaseline(const std::vector<Arrival>& requests, const QueueReplayOptions& o,
                           QueueReplayResult& r) {
  int lo = 1, hi = std::max(1, r.peak_replicas);
  double hi_p99 = FixedReplicasWaitP99(requests, hi);
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    const double p99 = FixedReplicasWaitP99(requests, mid);
    if (p99 <= r.wait_p99_s) {
      hi = mid;
      hi_p99 = p99;
    } else {
      lo = mid + 1;
    }
  }
  r.fixed_replicas = hi;
  r.fixed_wait_p99_s = hi_p99;
  r.fixed_gpu_s = hi * o.gpu_per_replica * r.duration_s;
}

}  // namespace

Result<QueueReplayResult> ReplayQueue(std::vector<Arrival> requests, const QueueReplayOptions& o) {
  if (requests.empty()) return InvalidArgumentError("replay: no arrivals");
  if (!(o.service_s > 0) || !(o.target > 0) || o.max_replicas < 1 || !(o.poll_interval_s > 0) ||
      o.activation_threshold < 0 || o.cold_start_s < 0 || o.cooldown_s < 0 || o.stabilization_s < 0)
    return InvalidArgumentError(
        "replay: service, target, max replicas and poll interval must be positive");
  std::stable_sort(requests.begin(), requests.end(),
                   [](const Arrival& a, const Arrival& b) { return a.time_s < b.time_s; });
  std::vector<double> arrivals;
  arrivals.reserve(requests.size());
  double total_service_s = 0;
  for (const Arrival& a : requests) {
    arrivals.push_back(a.time_s);
    total_service_s += a.service_s;
  }
  QueueReplayResult r;
  r.requests = arrivals.size();
  r.start_s = arrivals.front();
  Simulation sim(requests, arrivals, o, r);
  // Everything is served and scaled back down well before this, even by a single replica.
  const double horizon = arrivals.back() + total_service_s + o.cold_start_s + o.cooldown_s +
                         o.stabilization_s + 10 * o.poll_interval_s;
  for (double tick = r.start_s;; tick += o.poll_interval_s) {
    if (tick > horizon) return InternalError("replay: simulation did not settle by its horizon");
    sim.Serve(tick);
    if (sim.Done()) break;
    sim.RetireDrained(tick, true);
    const double depth = sim.Depth(tick);
    const int effective = sim.Effective(tick, depth);
    sim.ScaleTo(effective, tick);
    if (const size_t stranded = sim.Stranded(effective, tick); stranded > 0)
      return FailedPreconditionError(
          "replay: " + std::to_string(stranded) + " requests are never served: a queue depth of " +
          std::to_string(static_cast<int>(depth)) + " does not exceed the activation threshold");
  }
  sim.Finish();
  FixedReplicasBaseline(requests, o, r);
  return r;
}

}  // namespace gpuvpa::scaler
