// Helpers shared by the recommender tests.
#include "test/recommender/test_util.h"

#include <gtest/gtest.h>

#include "core/gpu/gpu_allocation.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/logic/recommender.h"

namespace gpuvpa::recommender::testing {

v1::WorkloadIdentity TestIdentity(const std::string& name, const std::string& gpu_model,
                                  const std::string& allocation) {
  v1::WorkloadIdentity id;
  id.set_namespace_name("team-a");
  id.set_owner_kind("Deployment");
  id.set_owner_name(name);
  id.set_container("main");
  id.set_gpu_model(gpu_model);
  id.set_allocation(allocation);
  id.set_cost_center("cc-a");
  return id;
}

uint32_t TrackTestWorkload(FleetStore& store, const std::string& name, const std::string& gpu_model,
                           const std::string& allocation) {
  const GpuModel& model = **GpuCatalog::BuiltIn().FindModel(gpu_model);
  const AllocationUnit unit = *ResolveAllocationUnit(*ParseGpuAllocation(allocation), model);
  return store.Track(TestIdentity(name, gpu_model, allocation), unit);
}

std::string RecommendationFingerprint(const FleetStore& store) {
  std::string out;
  for (const Recommendation& r : Recommender().RecommendAll(store)) {
    std::string bytes;
    ToProto(r, store).SerializeToString(&bytes);
    out += bytes;
  }
  return out;
}

}  // namespace gpuvpa::recommender::testing
