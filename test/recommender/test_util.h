// Helpers shared by the recommender tests.
#pragma once

#include <string>

#include "proto/gpuvpa.pb.h"
#include "recommender/model/fleet_store.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::recommender::testing {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;
inline constexpr double kHour = 3600;
inline constexpr double kDay = 86400;

v1::WorkloadIdentity TestIdentity(const std::string& name,
                                  const std::string& gpu_model = "A100-80GB",
                                  const std::string& allocation = "nvidia.com/gpu=1");

// Tracks a workload in `store` with its allocation resolved against the built-in catalog.
uint32_t TrackTestWorkload(FleetStore& store, const std::string& name,
                           const std::string& gpu_model = "A100-80GB",
                           const std::string& allocation = "nvidia.com/gpu=1");

using gpuvpa::testing::ScopedTempDir;

// Serialised recommendations of every workload in the store, for exact comparison.
std::string RecommendationFingerprint(const FleetStore& store);

}  // namespace gpuvpa::recommender::testing
