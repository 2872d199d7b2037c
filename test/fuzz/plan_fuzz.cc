// libFuzzer: the updater's inputs (recommendations JSON, policy YAML) through the planner and
// every report. The first byte picks the input; what is accepted must plan to possible numbers
// (no negative money, no capacity above a device) and production must never apply. Accepted
// recommendations are written back by ProtoJsonWriter: protobuf's bytes, read back the same.
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/api/proto_json.h"
#include "core/api/recommendation_json.h"
#include "core/cost/price_book.h"
#include "updater/plan/planner.h"
#include "updater/report/report.h"

namespace {

void Check(const gpuvpa::updater::PlannedAction& a) {
  if (a.monthly_before < 0 || a.monthly_after < 0) std::abort();
  if (!(a.to_vram_capacity_bytes >= 0 && a.to_vram_capacity_bytes <= 1e15)) std::abort();
  if (a.auto_apply && (a.production || a.mode != gpuvpa::updater::UpdateMode::kAuto)) std::abort();
  if (!a.changes() && (a.to_allocation != a.from_allocation || a.monthly_after != a.monthly_before))
    std::abort();
}

gpuvpa::v1::Recommendation Fixed(std::string_view ns) {
  gpuvpa::v1::Recommendation r;
  auto* id = r.mutable_identity();
  id->set_namespace_name(std::string(ns));
  id->set_owner_kind("Deployment");
  id->set_owner_name("w");
  id->set_container("c");
  id->set_gpu_model("H100-80GB");
  id->set_allocation("nvidia.com/gpu=1");
  id->set_cost_center("cc");
  r.set_has_target(true);
  r.set_vram_target_bytes(12e9);
  r.set_sm_p90_ratio(0.1);
  r.set_confidence(5);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuvpa::updater;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const gpuvpa::PriceBook prices = gpuvpa::PriceBook::BuiltInDefaults();
  if (data[0] % 2 == 0) {
    gpuvpa::Result<std::vector<gpuvpa::v1::Recommendation>> recs =
        gpuvpa::ParseRecommendationsJson(text);
    if (!recs.ok()) return 0;
    gpuvpa::ProtoJsonWriter writer;
    std::vector<const gpuvpa::v1::Recommendation*> pointers;
    for (const auto& r : *recs) {
      std::string ours, protobufs;
      writer.Append(r, ours);
      (void)google::protobuf::util::MessageToJsonString(
          r, &protobufs, gpuvpa::ProtoJsonWriter::MatchedPrintOptions());
      if (ours != protobufs) std::abort();
      pointers.push_back(&r);
    }
    gpuvpa::Result<std::vector<gpuvpa::v1::Recommendation>> back =
        gpuvpa::ParseRecommendationsJson(gpuvpa::RecommendationsJson(pointers));
    if (!back.ok() || back->size() != recs->size()) std::abort();
    for (size_t i = 0; i < recs->size(); ++i)
      if ((*back)[i].SerializeAsString() != (*recs)[i].SerializeAsString()) std::abort();
    const Planner planner(gpuvpa::GpuCatalog::BuiltIn(), prices, "", UpdaterPolicy{});
    ReportInput input;
    input.actions = planner.PlanAll(*recs);
    input.charts = ChartsOf(input.actions);  // charts as a recommendation may carry them
    for (const PlannedAction& a : input.actions) Check(a);
    (void)RenderHtmlReport(input);
    (void)RenderMarkdownReport(input);
    (void)RenderJsonReport(input);
    (void)RenderCsvReport(input);
  } else {
    gpuvpa::Result<UpdaterPolicy> policy = ParseUpdaterPolicy(text);
    if (!policy.ok()) return 0;
    const Planner planner(gpuvpa::GpuCatalog::BuiltIn(), prices, "", *policy);
    for (std::string_view ns : {"prod", "team-a", "ml-dev", "payments-prod"}) {
      for (const auto& [name, mode] : policy->namespace_modes) {
        const PlannedAction a = planner.Plan(Fixed(name));
        Check(a);
        (void)mode;
      }
      Check(planner.Plan(Fixed(ns)));
    }
  }
  return 0;
}
