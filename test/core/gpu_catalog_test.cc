// GPU catalog: model-name matching and MIG slice fractions.
#include "core/gpu/gpu_catalog.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

std::string ModelOf(std::string_view name) {
  Result<const GpuModel*> m = GpuCatalog::BuiltIn().FindModel(name);
  return m.ok() ? (*m)->name : "error: " + m.status().message();
}

TEST(GpuCatalogTest, MatchesCanonicalAndProductNames) {
  EXPECT_EQ(ModelOf("A100-80GB"), "A100-80GB");
  EXPECT_EQ(ModelOf("NVIDIA A100-SXM4-80GB"), "A100-80GB");
  EXPECT_EQ(ModelOf("NVIDIA A100-PCIE-40GB"), "A100-40GB");
  EXPECT_EQ(ModelOf("NVIDIA H100 80GB HBM3"), "H100-80GB");
  EXPECT_EQ(ModelOf("NVIDIA H200"), "H200-141GB");
  EXPECT_EQ(ModelOf("Tesla T4"), "T4-16GB");
  EXPECT_EQ(ModelOf("NVIDIA L4"), "L4-24GB");
  EXPECT_EQ(ModelOf("NVIDIA L40S"), "L40S-48GB");
  EXPECT_EQ(ModelOf("NVIDIA A10"), "A10-24GB");
  EXPECT_EQ(ModelOf("Tesla V100-SXM2-32GB"), "V100-32GB");
  EXPECT_EQ(ModelOf("V100M16"), "V100-16GB");
}

TEST(GpuCatalogTest, UnknownOrAmbiguousModelIsAnErrorNamingIt) {
  Result<const GpuModel*> m = GpuCatalog::BuiltIn().FindModel("NVIDIA B999");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("B999"), std::string::npos);
  EXPECT_FALSE(GpuCatalog::BuiltIn().FindModel("NVIDIA A100").ok())
      << "40 or 80 GB must not be guessed";
}

TEST(GpuCatalogTest, MigSliceFractionIsTheBindingOneOfMemoryAndCompute) {
  const GpuModel* h100 = *GpuCatalog::BuiltIn().FindModel("H100-80GB");
  EXPECT_DOUBLE_EQ((*h100->FindMigProfile("3g.40gb"))->SliceFraction(), 4.0 / 8);
  EXPECT_DOUBLE_EQ((*h100->FindMigProfile("1g.10gb"))->SliceFraction(), 1.0 / 7);
  EXPECT_DOUBLE_EQ((*h100->FindMigProfile("1g.20gb"))->SliceFraction(), 2.0 / 8);
  EXPECT_DOUBLE_EQ((*h100->FindMigProfile("7g.80gb"))->SliceFraction(), 1.0);
  const GpuModel* h200 = *GpuCatalog::BuiltIn().FindModel("H200-141GB");
  EXPECT_DOUBLE_EQ((*h200->FindMigProfile("3g.71gb"))->usable_memory_bytes,
                   69.5 * 1024 * 1024 * 1024);
}

TEST(GpuCatalogTest, UnknownMigProfileNamesTheProfile) {
  const GpuModel* a100 = *GpuCatalog::BuiltIn().FindModel("A100-40GB");
  Result<const MigProfile*> p = a100->FindMigProfile("3g.40gb");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("3g.40gb"), std::string::npos);
  EXPECT_NE(p.status().message().find("3g.20gb"), std::string::npos) << "lists the known ones";
}

}  // namespace
}  // namespace gpuvpa
