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

// An owner who writes a cost center that cannot be stored (a newline, more than 253 bytes,
// not UTF-8) is charged to "unallocated", never dropped, and the value is reported.
TEST(CostCenterTest, AnInvalidValueChargesUnallocatedAndIsReported) {
  CostCenterRules rules;
  for (const std::string& bad : {std::string("team\nTOTAL"), std::string(254, 'x'),
                                 std::string("\xff\xfe"), std::string("a\x1b[31m")}) {
    std::string rejected;
    EXPECT_EQ(ResolveCostCenter(rules, "ml", {{"cost-center", "platform"}},
                                {{"gpuvpa.io/cost-center", bad}}, &rejected),
              "unallocated");
    EXPECT_FALSE(rejected.empty());
    EXPECT_EQ(rejected.find('\n'), std::string::npos) << "quoted for a message: " << rejected;
    EXPECT_EQ(ResolveCostCenter(rules, "ml", {{"cost-center", bad}}, {}, &rejected), "unallocated");
    EXPECT_FALSE(rejected.empty());
  }
  std::string rejected = "stale";
  EXPECT_EQ(ResolveCostCenter(rules, "ml", {{"cost-center", "platform"}}, {}, &rejected),
            "platform");
  EXPECT_TRUE(rejected.empty());
}

}  // namespace
}  // namespace gpuvpa
