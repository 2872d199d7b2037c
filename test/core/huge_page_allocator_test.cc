// HugePageAllocator: large blocks start on 2 MiB boundaries, growth keeps every value, small
// blocks and moves behave as with std::allocator.
#include "core/base/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace gpuvpa {
namespace {

TEST(HugePageAllocatorTest, LargeBlocksAreAlignedAndGrowthKeepsTheValues) {
  std::vector<double, HugePageAllocator<double>> v;
  v.push_back(1.5);  // small: the default allocator
  for (size_t n = 1; n < (size_t{3} << 20); ++n) v.push_back(static_cast<double>(n));
  ASSERT_GE(v.capacity() * sizeof(double), kHugePageBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(v[0], 1.5);
  for (size_t n = 1; n < v.size(); n += 4099) ASSERT_EQ(v[n], static_cast<double>(n));
  v.resize(v.size() + (size_t{1} << 20), 0.0);  // zero-filled as any vector
  EXPECT_EQ(std::accumulate(v.end() - (1 << 20), v.end(), 0.0), 0.0);
  std::vector<double, HugePageAllocator<double>> moved = std::move(v);
  EXPECT_EQ(moved[12345], 12345.0);
  moved.resize(10);
  moved.shrink_to_fit();  // back to a small block
  EXPECT_EQ(moved.back(), 9.0);
}

}  // namespace
}  // namespace gpuvpa
