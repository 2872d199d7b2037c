// The recommendation contract between the recommender and its readers (the updater, `gpuvpa
// plan`, anything on the gRPC API): which workload identities are valid, how a workload is
// keyed, the largest VRAM figure any reader accepts, and the checks every recommendation passes
// wherever it comes from (a JSON file or the gRPC API).
#pragma once

#include <string>

#include "core/base/status.h"
#include "proto/gpuvpa.pb.h"

namespace gpuvpa {

// Sample times outside [2000-01-01, 2100-01-01) are refused at the store's boundary whatever
// the source checks: they keep every decay factor and every ledger time finite and in range.
// A reader holds the recommendation's times (its charts' hours) to the same range.
inline constexpr double kMinSampleTimeS = 946684800;
inline constexpr double kMaxSampleTimeS = 4102444800;

// No device has a petabyte: a larger value is a unit or data error, not usage.
inline constexpr double kMaxVramBytes = 1e15;

// Kubernetes name rules for namespace, owner kind, owner name and container; the cost center
// as free text (valid UTF-8, no control characters). Errors name the field and the value.
Status ValidateIdentity(const v1::WorkloadIdentity& identity);

// The index key of a workload-container (core/base/workload_key.h).
std::string WorkloadKeyOf(const v1::WorkloadIdentity& identity);

// Every figure of `r` is finite and possible: byte counts in 0..kMaxVramBytes and within the
// GPU model's memory, ratios in 0..1, the target within the allocation's limit, charts (when
// present) with ordered bounds and weights in 0..1. Errors start with `where` (e.g.
// "recommendations[3]") and name the field and the value.
Status ValidateRecommendation(const v1::Recommendation& r, const std::string& where);

}  // namespace gpuvpa
