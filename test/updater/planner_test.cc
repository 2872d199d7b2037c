// The planner's picks, derived from DESIGN.md's GPU catalog table (not from the code): memory
// and compute slices per MIG profile, the binding slice fraction as the price.
#include "updater/plan/planner.h"

#include <gtest/gtest.h>

#include <random>

#include "updater/plan/container_decision.h"

namespace gpuvpa::updater {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

v1::Recommendation Workload(const std::string& ns, const std::string& model,
                            const std::string& allocation, double target_gib, double sm_p90) {
  v1::Recommendation r;
  v1::WorkloadIdentity* id = r.mutable_identity();
  id->set_namespace_name(ns);
  id->set_owner_kind("Deployment");
  id->set_owner_name("server");
  id->set_container("main");
  id->set_gpu_model(model);
  id->set_allocation(allocation);
  id->set_cost_center("team");
  r.set_has_target(true);
  r.set_vram_target_bytes(target_gib * kGiB);
  r.set_vram_lower_bytes(0.8 * target_gib * kGiB);
  r.set_vram_upper_bytes(1.1 * target_gib * kGiB);
  r.set_vram_history_peak_bytes(0.85 * target_gib * kGiB);
  r.set_sm_p90_ratio(sm_p90);
  r.set_active_duty_ratio(0.9);  // busy: no scale-to-zero unless a test says so
  r.set_confidence(7);
  r.set_history_s(7 * 86400);
  r.set_busy_devices(1);
  r.set_average_pods(1);
  return r;
}

PriceBook Prices() {
  PriceBook prices = PriceBook::BuiltInDefaults();
  EXPECT_TRUE(prices.SetPrice("H200-141GB", "", 10.0, "test").ok());
  return prices;
}

class PlannerTest : public ::testing::Test {
 protected:
  PriceBook prices_ = Prices();
  Planner planner_{GpuCatalog::BuiltIn(), prices_, "", UpdaterPolicy{}};
};

TEST_F(PlannerTest, H100TwelveGibTenPercentGetsMig1g20gb) {
  // 1g.10gb holds 9856 MB < 12 GiB; 1g.20gb holds 19968 MB with 1 compute slice >= 0.1 x 7,
  // and costs max(2/8, 1/7) = 0.25 of the GPU, less than 2g.20gb's max(2/8, 2/7).
  const PlannedAction a = planner_.Plan(Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10));
  EXPECT_EQ(a.kind, PlanKind::kMigProfile) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-1g.20gb=1");
  EXPECT_EQ(a.sm_slices_needed, 1);
  EXPECT_EQ(a.monthly_before, 6'880'000LL * 730);  // $6.88/h x 730 h
  EXPECT_EQ(a.monthly_after, 6'880'000LL * 730 / 4);
  EXPECT_EQ(a.risk, Risk::kLow);
}

TEST_F(PlannerTest, H200ThirtyGibTwentyPercentGetsMig2g35gbNotTheOneSliceProfile) {
  // 0.2 x 7 = 1.4 -> 2 compute slices: 1g.35gb (32.25 GiB, 1 slice) fits the memory only.
  const PlannedAction a = planner_.Plan(Workload("ml", "H200-141GB", "nvidia.com/gpu=1", 30, 0.20));
  EXPECT_EQ(a.kind, PlanKind::kMigProfile) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-2g.35gb=1");
  EXPECT_EQ(a.sm_slices_needed, 2);
  EXPECT_NEAR(a.to_vram_capacity_bytes, 32.25 * kGiB, 1);
}

TEST_F(PlannerTest, PodWithThreeGpusAndTwoIdleGetsOne) {
  v1::Recommendation r = Workload("ml", "H100-80GB", "nvidia.com/gpu=3", 20, 0.5);
  r.set_busy_devices(1);
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kFewerGpus) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/gpu=1");
  EXPECT_EQ(a.monthly_after * 3, a.monthly_before);
}

TEST_F(PlannerTest, MultiGpuTrainingWithAllGpusBusyNeverGoesToMigOrShare) {
  v1::Recommendation r = Workload("ml", "H100-80GB", "nvidia.com/gpu=4", 10, 0.05);
  r.mutable_identity()->set_owner_kind("Job");
  r.set_busy_devices(4);
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_NE(a.reason.find("NCCL"), std::string::npos) << a.reason;
  r.set_busy_devices(2);
  const PlannedAction b = planner_.Plan(r);
  EXPECT_EQ(b.kind, PlanKind::kFewerGpus);
  EXPECT_EQ(b.to_allocation, "nvidia.com/gpu=2");
}

TEST_F(PlannerTest, PoolAllocatorGetsNoVramActionAndSaysWhy) {
  v1::Recommendation r = Workload("chat", "H100-80GB", "nvidia.com/gpu=1", 74, 0.1);
  r.set_vram_set_by_allocator(true);
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_EQ(a.to_allocation, a.from_allocation);
  EXPECT_EQ(a.monthly_after, a.monthly_before);
  EXPECT_NE(a.reason.find("allocator"), std::string::npos) << a.reason;
}

TEST_F(PlannerTest, ModelWithoutMigGetsATimeSlicedShareThatHoldsTheTarget) {
  // T4: 16 GiB, no MIG. 3 GiB and 10 % fit a quarter (4 GiB, 25 % of the time).
  const PlannedAction a = planner_.Plan(Workload("ml", "T4-16GB", "nvidia.com/gpu=1", 3, 0.10));
  EXPECT_EQ(a.kind, PlanKind::kSharedGpu) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/gpu.shared=1/4");
  // 5 GiB does not fit a quarter: half.
  const PlannedAction b = planner_.Plan(Workload("ml", "T4-16GB", "nvidia.com/gpu=1", 5, 0.10));
  EXPECT_EQ(b.to_allocation, "nvidia.com/gpu.shared=1/2");
}

TEST_F(PlannerTest, NothingBelowTheMinimumHistoryOrConfidence) {
  v1::Recommendation r = Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.1);
  r.set_confidence(0.4);
  EXPECT_EQ(planner_.Plan(r).kind, PlanKind::kNoChange);
  r.set_confidence(7);
  r.set_has_target(false);
  r.set_withheld_reason("history 2 h is below the minimum 24 h");
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_EQ(a.reason, "history 2 h is below the minimum 24 h");
}

TEST_F(PlannerTest, MostlyIdleServiceScalesToZeroAndPaysForItsActiveHours) {
  v1::Recommendation r = Workload("ml", "A100-80GB", "nvidia.com/gpu=1", 70, 0.6);
  r.set_active_duty_ratio(0.05);
  r.set_idle_hours_ratio(0.75);
  r.set_longest_idle_gap_s(20 * 3600);
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kScaleToZero) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/gpu=1");  // 70 GiB fits no smaller profile
  EXPECT_NEAR(static_cast<double>(a.monthly_after), 0.25 * a.monthly_before, 1);
  r.mutable_identity()->set_owner_kind("Job");  // nothing to scale
  EXPECT_NE(planner_.Plan(r).kind, PlanKind::kScaleToZero);
}

TEST_F(PlannerTest, MigInstanceThatOutgrewItMovesUpAProfile) {
  v1::Recommendation r = Workload("ml", "A100-80GB", "nvidia.com/mig-1g.10gb=1", 15, 0.5);
  r.set_needs_larger_gpu(true);
  const PlannedAction a = planner_.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kMigProfile) << a.reason;
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-1g.20gb=1");  // 1 slice: 0.5 x 1/7 of the GPU
  EXPECT_GT(a.monthly_after, a.monthly_before);
}

TEST_F(PlannerTest, AllowedCheaperModelWinsWhenItHoldsTheTarget) {
  UpdaterPolicy policy;
  policy.allowed_gpu_models = {"L4-24GB"};
  const Planner planner(GpuCatalog::BuiltIn(), prices_, "", policy);
  // 18 GiB needs 3g.40gb on an A100-80GB (0.5 x $3.43); an L4 (24 GiB x 0.95) is $0.80.
  const PlannedAction a = planner.Plan(Workload("ml", "A100-80GB", "nvidia.com/gpu=1", 18, 0.2));
  EXPECT_EQ(a.kind, PlanKind::kGpuModel) << a.reason;
  EXPECT_EQ(a.to_model, "L4-24GB");
  EXPECT_EQ(a.monthly_after, 804'800LL * 730);
}

TEST_F(PlannerTest, InsideBoundsAndSmallChangeIsLeftAlone) {
  UpdaterPolicy policy;
  policy.min_change_ratio = 0.9;  // only a 90 % saving is worth a change here
  const Planner planner(GpuCatalog::BuiltIn(), prices_, "", policy);
  // 30 GiB and 30 % fit 3g.40gb (half the price), but the whole GPU's 80 GiB is inside
  // [24, 90]: the 50 % saving is below the 90 % asked for.
  v1::Recommendation r = Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 30, 0.3);
  r.set_vram_upper_bytes(90 * kGiB);
  const PlannedAction a = planner.Plan(r);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_NE(a.reason.find("within [lower, upper]"), std::string::npos) << a.reason;
}

// A production namespace configured Auto is still reported only; a non-production Auto
// namespace with a change applies. Production is decided here by construction (the name or the
// label the generator chose), not by the selector under test.
TEST(PlannerPolicyPropertyTest, ProductionIsNeverAutoOverAThousandRandomCases) {
  std::mt19937_64 rng(20261203);
  const PriceBook prices = Prices();
  const char* kModes[] = {"Off", "Report", "Auto"};
  int auto_applied = 0, production_auto_configured = 0;
  for (int i = 0; i < 1000; ++i) {
    UpdaterPolicy policy;
    policy.default_mode = *ParseUpdateMode(kModes[rng() % 3]);
    const int shape = static_cast<int>(rng() % 4);
    const std::string stem = "team" + std::to_string(rng() % 50);
    std::string ns;
    bool production = true;
    switch (shape) {
      case 0:
        ns = "prod-" + stem;
        break;
      case 1:
        ns = stem + "-prod";
        break;
      case 2:
        ns = stem;
        policy.namespace_labels[ns] = {{"environment", rng() % 2 ? "production" : "prod"}};
        break;
      default:
        ns = stem;
        production = false;
        if (rng() % 2) policy.namespace_labels[ns] = {{"environment", "staging"}};
    }
    if (rng() % 4 != 0) policy.namespace_modes[ns] = *ParseUpdateMode(kModes[rng() % 3]);
    const Planner planner(GpuCatalog::BuiltIn(), prices, "", policy);
    const double target = 1 + static_cast<double>(rng() % 70);
    const double sm = static_cast<double>(rng() % 100) / 100;
    const PlannedAction a = planner.Plan(Workload(ns, "H100-80GB", "nvidia.com/gpu=1", target, sm));
    const auto it = policy.namespace_modes.find(ns);
    const UpdateMode configured =
        it != policy.namespace_modes.end() ? it->second : policy.default_mode;
    SCOPED_TRACE(ns + " configured " + std::string(UpdateModeName(configured)));
    if (production) {
      production_auto_configured += configured == UpdateMode::kAuto;
      EXPECT_NE(a.mode, UpdateMode::kAuto);
      EXPECT_FALSE(a.auto_apply);
      EXPECT_TRUE(a.production);
    } else {
      EXPECT_FALSE(a.production);
      EXPECT_EQ(a.mode, configured);
      EXPECT_EQ(a.auto_apply, configured == UpdateMode::kAuto && a.changes());
      auto_applied += a.auto_apply;
    }
  }
  // Both sides of the property were exercised.
  EXPECT_GT(production_auto_configured, 50);
  EXPECT_GT(auto_applied, 10);
}

TEST(UpdaterPolicyTest, ParsesAndRefusesNamingTheField) {
  Result<UpdaterPolicy> p = ParseUpdaterPolicy(
      "default_mode: Off\nnamespaces: {ml-dev: Auto}\nproduction:\n  namespace_label: {key: "
      "tier, values: [prod]}\n  namespace_patterns: ['live-*']\nmin_change_ratio: 0.2\n"
      "workload_annotations: {\"ml-dev/Deployment/x\": {gpuvpa.io/opt-out: \"true\"}}\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->default_mode, UpdateMode::kOff);
  EXPECT_EQ(p->namespace_modes.at("ml-dev"), UpdateMode::kAuto);
  EXPECT_TRUE(p->production.Matches("live-eu", {}));
  EXPECT_TRUE(p->production.Matches("prod-eu", {}));  // added to the built-in selector
  EXPECT_TRUE(p->production.Matches("x", {{"tier", "prod"}}));
  EXPECT_EQ(DecidePolicy(*p, "ml-dev", "Deployment", "x").mode, UpdateMode::kOff);
  EXPECT_TRUE(DecidePolicy(*p, "ml-dev", "Deployment", "x").opted_out);
  EXPECT_EQ(DecidePolicy(*p, "ml-dev", "Deployment", "y").mode, UpdateMode::kAuto);

  Result<UpdaterPolicy> typo = ParseUpdaterPolicy("namespaces: {ml-dev: Automatic}\n");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("namespaces.ml-dev"), std::string::npos);
  EXPECT_NE(typo.status().message().find("Automatic"), std::string::npos);
  Result<UpdaterPolicy> unknown = ParseUpdaterPolicy("min_chnage_ratio: 0.1\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("min_chnage_ratio"), std::string::npos);
  EXPECT_FALSE(ParseUpdaterPolicy("min_change_ratio: 2\n").ok());
  // A key that is not a string (found by plan_fuzz: it threw out of the parser).
  Result<UpdaterPolicy> odd = ParseUpdaterPolicy("? [a, b]\n: c\n");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("a key is not a string"), std::string::npos);
  EXPECT_FALSE(ParseUpdaterPolicy("namespaces: {? [x]: Auto}\n").ok());
}

// Configuration widens the production selector and never narrows it; an empty selector, an
// empty list or an entry that matches nothing usable is refused at start, naming the field.
TEST(UpdaterPolicyTest, AnEmptyOrInvalidProductionSelectorIsAConfigurationError) {
  for (const char* text :
       {"production:\n", "production: {}\n", "production: {label_values: []}\n",
        "production: {name_words: ['']}\n", "production: {name_patterns: ['*']}\n",
        "production: {namespace_label: {key: '', values: [prod]}}\n",
        "production: {namespace_label: {key: env, values: []}}\n",
        "production: {label_keys: stage}\n", "production: {labels: [x]}\n"}) {
    Result<UpdaterPolicy> p = ParseUpdaterPolicy(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find("production"), std::string::npos)
        << text << " -> " << p.status().message();
  }
  Result<UpdaterPolicy> wider = ParseUpdaterPolicy(
      "production: {label_keys: [stage], label_values: [live], name_words: [live], "
      "name_patterns: ['pay-*']}\n");
  ASSERT_TRUE(wider.ok()) << wider.status().message();
  EXPECT_TRUE(wider->production.Matches("x", {{"stage", "LIVE"}}));
  EXPECT_TRUE(wider->production.Matches("x", {{"environment", "prod"}}));  // built in stays
  EXPECT_TRUE(wider->production.Matches("eu-live", {}));
  EXPECT_TRUE(wider->production.Matches("pay-eu", {}));
  EXPECT_TRUE(wider->production.Matches("prd-pay", {}));
  EXPECT_FALSE(wider->production.Matches("payments", {}));
  // A selector emptied in code (not through a file) is refused where it is used.
  ProductionSelector empty;
  empty.label_values.clear();
  EXPECT_FALSE(empty.Validate().ok());
  EXPECT_TRUE(ProductionSelector().Validate().ok());
}

TEST(UpdaterPolicyTest, ProductionWordsValuesAndOptOutSpellings) {
  const ProductionSelector p;
  for (const char* name : {"prod", "prd-pay", "production-eu", "eu-prod2", "a.prod.b", "x_prd"})
    EXPECT_TRUE(p.Matches(name, {})) << name;
  for (const char* name : {"prodigy", "nonprod", "reproduce", "products", "prdx", "ml-dev"})
    EXPECT_FALSE(p.Matches(name, {})) << name;
  EXPECT_TRUE(p.Matches("x", {{"Env", "pRoD"}}));
  EXPECT_TRUE(p.Matches("x", {{"tier", std::string(kNonStringLabelValue)}}));
  EXPECT_FALSE(p.Matches("x", {{"owner", std::string(kNonStringLabelValue)}}));
  EXPECT_EQ(p.Why("x", {{"environment", "Production"}}), "label environment=Production");
  for (const char* yes : {"true", "True", "TRUE", "yes", "Y", "on", "1", "maybe"})
    EXPECT_TRUE(OptOutValue(yes)) << yes;
  for (const char* no : {"false", "False", "NO", "off", "0", "", " false "})
    EXPECT_FALSE(OptOutValue(no)) << no;
  // The offline policy reads the same spellings.
  UpdaterPolicy policy;
  policy.workload_annotations["ml/Deployment/x"] = {{"gpuvpa.io/opt-out", "Yes"}};
  EXPECT_TRUE(DecidePolicy(policy, "ml", "Deployment", "x").opted_out);
}

TEST(UpdaterPolicyTest, GlobMatchesStarsOnly) {
  EXPECT_TRUE(GlobMatches("prod-*", "prod-eu"));
  EXPECT_TRUE(GlobMatches("*-prod", "payments-prod"));
  EXPECT_TRUE(GlobMatches("*prod*", "xprody"));
  EXPECT_FALSE(GlobMatches("prod-*", "preprod-eu"));
  EXPECT_FALSE(GlobMatches("prod", "prod2"));
  EXPECT_TRUE(GlobMatches("a*b*c", "aXbYbZc"));
}

}  // namespace
}  // namespace gpuvpa::updater

// The per-container decision the daemon takes, here without any API server.
namespace gpuvpa::updater {
namespace {

class ContainerDecisionTest : public ::testing::Test {
 protected:
  PlannedAction Decide(const v1::Recommendation& r, const ContainerDecision& d) const {
    UpdaterPolicy policy;
    policy.namespace_modes["ml"] = UpdateMode::kAuto;
    return DecideContainer(GpuCatalog::BuiltIn(), prices_, "", policy, r, d);
  }
  PriceBook prices_ = Prices();
};

TEST_F(ContainerDecisionTest, WithoutAPolicyOrRollbackItIsThePlannersPick) {
  const PlannedAction a = Decide(Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10), {});
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-1g.20gb=1");
  EXPECT_TRUE(a.auto_apply);
}

TEST_F(ContainerDecisionTest, ContainerPolicyBoundsTheTargetAndCanWithhold) {
  GvpaContainerPolicy cp;
  cp.container = "main";
  cp.min_vram_bytes = 30 * kGiB;  // 12 GiB measured, 30 GiB asked: 3g.40gb, not 1g.20gb
  ContainerDecision d;
  d.container_policy = &cp;
  PlannedAction a = Decide(Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10), d);
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-3g.40gb=1");
  cp.allowed_mig_profiles = {"7g.80gb"};
  a = Decide(Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10), d);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_EQ(a.reason, "MIG profile 3g.40gb is not in allowedMigProfiles");
  EXPECT_FALSE(a.auto_apply);
  cp.allowed_mig_profiles.clear();
  cp.opted_out = true;
  a = Decide(Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10), d);
  EXPECT_EQ(a.reason, "container policy mode Off");
  EXPECT_EQ(a.to_allocation, a.from_allocation);
}

TEST_F(ContainerDecisionTest, ARollbackRaisesTheFloorAndHoldsUntilNewEvidence) {
  v1::Recommendation r = Workload("ml", "H100-80GB", "nvidia.com/gpu=1", 12, 0.10);
  ContainerDecision d;
  d.rollback = GvpaRollback{"2026-12-01T00:00:00Z", "CUDA OOM", 25 * kGiB, EvidenceMark(r)};
  d.rollback_hold_s = 86400;
  PlannedAction a = Decide(r, d);
  EXPECT_EQ(a.kind, PlanKind::kNoChange);
  EXPECT_EQ(a.reason, "rolled back at 2026-12-01T00:00:00Z; waiting for new evidence");
  r.set_history_s(r.history_s() + 86400);  // a day more history: decided again, above the floor
  a = Decide(r, d);
  EXPECT_EQ(a.to_allocation, "nvidia.com/mig-3g.40gb=1");
  EXPECT_GE(a.vram_target_bytes, 25 * kGiB);
}

}  // namespace
}  // namespace gpuvpa::updater
