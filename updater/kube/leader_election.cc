// Lease-based leader election.
#include "updater/kube/leader_election.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/base/time_format.h"

namespace gpuvpa::updater {

using json = nlohmann::json;

std::string FormatMicroTime(double unix_s) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_s));
  const int micros = static_cast<int>((unix_s - static_cast<double>(whole)) * 1e6);
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                std::min(micros, 999999));
  return buf;
}

Result<double> ParseMicroTime(const std::string& text) {
  // RFC 3339 with an optional fraction: whole seconds through the project's parser.
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return ParseTimestamp(text);
  const size_t z = text.find_first_of("Z+-", dot);
  Result<double> whole =
      ParseTimestamp(text.substr(0, dot) + (z == std::string::npos ? "Z" : text.substr(z)));
  if (!whole.ok()) return whole.status();
  double fraction = 0;
  try {
    // ".123" as "0.123" (an insert, not "0" + ...: GCC 12's -Wrestrict misfires on that).
    std::string digits = text.substr(dot, (z == std::string::npos ? text.size() : z) - dot);
    digits.insert(digits.begin(), '0');
    fraction = std::stod(digits);
  } catch (const std::exception&) {
    return InvalidArgumentError("MicroTime \"" + text + "\" has a bad fraction");
  }
  return *whole + fraction;
}

Result<bool> LeaderElector::TryAcquireOrRenew(double now_s) {
  const std::string now = FormatMicroTime(now_s);
  const int duration = static_cast<int>(std::ceil(options_.duration_s));
  Result<json> lease = client_.Get(kube::kLeases, options_.ns, options_.name);
  if (!lease.ok() && lease.status().code() == StatusCode::kNotFound) {
    const json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", {{"name", options_.name}, {"namespace", options_.ns}}},
                        {"spec",
                         {{"holderIdentity", options_.identity},
                          {"leaseDurationSeconds", duration},
                          {"acquireTime", now},
                          {"renewTime", now},
                          {"leaseTransitions", 0}}}};
    Result<json> created = client_.Create(kube::kLeases, options_.ns, fresh);
    if (!created.ok()) {
      leading_ = false;
      // Another candidate created it first: not an error, just not the leader.
      if (created.status().code() == StatusCode::kAborted) return false;
      return created.status();
    }
    leading_ = true;
    last_renew_s_ = now_s;
    ++transitions_;
    return true;
  }
  if (!lease.ok()) return lease.status();
  json updated = *lease;
  json& spec = updated["spec"];
  if (!spec.is_object()) spec = json::object();
  const std::string holder = spec.value("holderIdentity", "");
  if (holder != options_.identity) {
    const auto held = spec.find("leaseDurationSeconds");
    const double held_for =
        held != spec.end() && held->is_number() && std::isfinite(held->get<double>())
            ? held->get<double>()
            : duration;
    Result<double> renewed = ParseMicroTime(spec.value("renewTime", ""));
    const bool expired = holder.empty() || !renewed.ok() || now_s > *renewed + held_for;
    if (!expired) {
      leading_ = false;
      return false;
    }
    spec["holderIdentity"] = options_.identity;
    spec["acquireTime"] = now;
    const auto transitions = spec.find("leaseTransitions");
    const int64_t before = transitions != spec.end() && transitions->is_number_integer() &&
                                   transitions->get<int64_t>() >= 0 &&
                                   transitions->get<int64_t>() < INT32_MAX
                               ? transitions->get<int64_t>()
                               : 0;
    spec["leaseTransitions"] = before + 1;
  }
  spec["renewTime"] = now;
  spec["leaseDurationSeconds"] = duration;
  Result<json> written = client_.Update(kube::kLeases, options_.ns, updated);
  if (!written.ok()) {
    leading_ = leading(now_s);  // keep leading only inside the renew deadline
    if (written.status().code() == StatusCode::kAborted) {
      leading_ = false;  // someone else wrote the lease since we read it
      return false;
    }
    return written.status();
  }
  if (holder != options_.identity) ++transitions_;
  leading_ = true;
  last_renew_s_ = now_s;
  return true;
}

Status LeaderElector::Release() {
  if (!leading_) return OkStatus();
  Result<json> lease = client_.Get(kube::kLeases, options_.ns, options_.name);
  if (!lease.ok()) return lease.status();
  if (!(*lease).contains("spec") || !(*lease)["spec"].is_object() ||
      (*lease)["spec"].value("holderIdentity", "") != options_.identity)
    return OkStatus();
  json updated = *lease;
  updated["spec"]["holderIdentity"] = "";
  leading_ = false;
  Result<json> written = client_.Update(kube::kLeases, options_.ns, updated);
  return written.ok() ? OkStatus() : written.status();
}

}  // namespace gpuvpa::updater
