// Allocation parsing and per-unit resolution.
#include "core/gpu/gpu_allocation.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

TEST(GpuAllocationTest, ParsesEveryKindAndRoundTrips) {
  for (const char* text : {"nvidia.com/gpu=4", "nvidia.com/mig-3g.40gb=1",
                           "nvidia.com/gpu.shared=1/4", "gpu-milli=460"}) {
    Result<GpuAllocation> a = ParseGpuAllocation(text);
    ASSERT_TRUE(a.ok()) << text << ": " << a.status().message();
    EXPECT_EQ(a->ToString(), text);
  }
  Result<GpuAllocation> a = ParseGpuAllocation("nvidia.com/gpu: 2");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count, 2);
  EXPECT_EQ(ParseGpuAllocation("mig-1g.10gb=3")->mig_profile, "1g.10gb");
}

TEST(GpuAllocationTest, RejectsMalformedAllocationsNamingThem) {
  for (const char* text :
       {"nvidia.com/gpu=0", "nvidia.com/gpu=x", "nvidia.com/gpu", "amd.com/gpu=1",
        "nvidia.com/gpu.shared=1", "gpu-milli=1500", "nvidia.com/mig-=1"}) {
    Result<GpuAllocation> a = ParseGpuAllocation(text);
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_NE(a.status().message().find(text), std::string::npos) << a.status().message();
  }
}

TEST(GpuAllocationTest, ResolvesDeviceFractionAndVramPerUnit) {
  const GpuModel& h100 = **GpuCatalog::BuiltIn().FindModel("H100-80GB");
  const double gib = 1024.0 * 1024 * 1024;
  AllocationUnit whole = *ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/gpu=1"), h100);
  EXPECT_EQ(whole.device_fraction, 1.0);
  EXPECT_EQ(whole.vram_capacity_bytes, 80 * gib);
  AllocationUnit mig =
      *ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/mig-3g.40gb=1"), h100);
  EXPECT_DOUBLE_EQ(mig.device_fraction, 0.5);
  EXPECT_EQ(mig.vram_capacity_bytes, 40192.0 * 1024 * 1024);
  AllocationUnit shared =
      *ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/gpu.shared=1/4"), h100);
  EXPECT_DOUBLE_EQ(shared.device_fraction, 0.25);
  AllocationUnit milli = *ResolveAllocationUnit(*ParseGpuAllocation("gpu-milli=460"), h100);
  EXPECT_DOUBLE_EQ(milli.device_fraction, 0.46);
  EXPECT_FALSE(ResolveAllocationUnit(*ParseGpuAllocation("nvidia.com/mig-1g.5gb=1"), h100).ok());
}

}  // namespace
}  // namespace gpuvpa
