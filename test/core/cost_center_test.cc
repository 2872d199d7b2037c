// Cost-center resolution order.
#include "core/cost/cost_center.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

TEST(CostCenterTest, AnnotationThenLabelThenMappingThenUnallocated) {
  CostCenterRules rules;
  rules.namespace_cost_centers["ml"] = "research";
  const StringMap labels = {{"cost-center", "platform"}};
  const StringMap annotations = {{"gpuvpa.io/cost-center", "search"}};
  EXPECT_EQ(ResolveCostCenter(rules, "ml", labels, annotations), "search");
  EXPECT_EQ(ResolveCostCenter(rules, "ml", labels, {}), "platform");
  EXPECT_EQ(ResolveCostCenter(rules, "ml"), "research");
  EXPECT_EQ(ResolveCostCenter(rules, "other"), "unallocated");
  EXPECT_EQ(ResolveCostCenter(rules, "other", {{"cost-center", ""}}), "unallocated")
      << "empty counts as absent";
}

TEST(CostCenterTest, KeysAreConfigurable) {
  CostCenterRules rules;
  rules.namespace_label_key = "team";
  EXPECT_EQ(ResolveCostCenter(rules, "x", {{"team", "a"}, {"cost-center", "b"}}), "a");
}

}  // namespace
}  // namespace gpuvpa
