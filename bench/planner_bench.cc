// The updater's planner over a fleet, and owner-report generation. Goals (issue notes, never
// asserted): planning 100,000 workload-containers within 1 s on one core; report generation for
// 1,000 workloads measured.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "core/cost/price_book.h"
#include "updater/plan/planner.h"
#include "updater/report/report.h"

namespace gpuvpa::updater {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// A mixed fleet: whole GPUs, MIG instances, shared replicas, multi-GPU pods, pool allocators
// and idle services, on the catalog's models.
std::vector<v1::Recommendation> Fleet(size_t n) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  const char* models[] = {"H100-80GB", "A100-80GB", "A100-40GB", "L4-24GB", "T4-16GB"};
  const char* allocations[] = {"nvidia.com/gpu=1", "nvidia.com/gpu=1", "nvidia.com/gpu=2",
                               "nvidia.com/gpu.shared=1/4"};
  std::vector<v1::Recommendation> fleet(n);
  for (size_t i = 0; i < n; ++i) {
    v1::Recommendation& r = fleet[i];
    v1::WorkloadIdentity* id = r.mutable_identity();
    id->set_namespace_name("team-" + std::to_string(i % 200));
    id->set_owner_kind(i % 5 == 0 ? "StatefulSet" : "Deployment");
    id->set_owner_name("svc-" + std::to_string(i));
    id->set_container("main");
    const char* model = models[i % std::size(models)];
    id->set_gpu_model(model);
    id->set_allocation(allocations[(i / 5) % std::size(allocations)]);
    if (i % 17 == 0 && std::string(model) == "A100-80GB")
      id->set_allocation("nvidia.com/mig-3g.40gb=1");
    id->set_cost_center("cc-" + std::to_string(i % 40));
    const double memory = std::string(model).find("80") != std::string::npos   ? 80
                          : std::string(model).find("40") != std::string::npos ? 40
                          : std::string(model).find("24") != std::string::npos ? 24
                                                                               : 16;
    const double target = (0.05 + 0.6 * unit(rng)) * memory * kGiB;
    r.set_has_target(i % 50 != 0);
    r.set_vram_target_bytes(target);
    r.set_vram_lower_bytes(0.7 * target);
    r.set_vram_upper_bytes(1.2 * target);
    r.set_vram_history_peak_bytes(0.9 * target);
    r.set_vram_limit_bytes(memory * kGiB);
    r.set_sm_p90_ratio(unit(rng));
    r.set_active_duty_ratio(unit(rng));
    r.set_idle_hours_ratio(unit(rng));
    r.set_longest_idle_gap_s(unit(rng) * 86400);
    r.set_confidence(1 + 6 * unit(rng));
    r.set_history_s(7 * 86400);
    r.set_busy_devices(1 + static_cast<uint32_t>(i % 3 == 0));
    r.set_average_pods(1 + std::floor(3 * unit(rng)));
    r.set_vram_set_by_allocator(i % 23 == 0);
    r.set_priced(true);
    r.set_idle_tax_usd_vram(100 * unit(rng));
  }
  return fleet;
}

void BM_PlanFleet(benchmark::State& state) {
  const auto fleet = Fleet(static_cast<size_t>(state.range(0)));
  const PriceBook prices = PriceBook::BuiltInDefaults();
  UpdaterPolicy policy;
  policy.allowed_gpu_models = {"L4-24GB"};
  policy.namespace_modes["team-1"] = UpdateMode::kAuto;
  const Planner planner(GpuCatalog::BuiltIn(), prices, "", policy);
  size_t changes = 0;
  for (auto _ : state) {
    const std::vector<PlannedAction> actions = planner.PlanAll(fleet);
    for (const PlannedAction& a : actions) changes += a.changes();
    benchmark::DoNotOptimize(changes);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["changes_share"] =
      static_cast<double>(changes) / static_cast<double>(state.iterations() * state.range(0));
}
BENCHMARK(BM_PlanFleet)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

ReportInput ReportOf(size_t n) {
  const auto fleet = Fleet(n);
  const PriceBook prices = PriceBook::BuiltInDefaults();
  const Planner planner(GpuCatalog::BuiltIn(), prices, "", UpdaterPolicy{});
  ReportInput input;
  input.actions = planner.PlanAll(fleet);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  for (size_t i = 0; i < input.actions.size(); ++i) {
    WorkloadCharts c;
    double start = 1e9;
    for (int b = 0; b < 40; ++b, start *= 1.05) c.vram.push_back({start, start * 1.05, unit(rng)});
    for (int b = 0; b < 100; ++b) c.sm.push_back({b / 100.0, (b + 1) / 100.0, unit(rng)});
    c.latest_hour = 490000;
    for (int h = 0; h < 168; ++h) c.hourly_active_ratio.push_back(unit(rng));
    input.charts.push_back(std::move(c));
  }
  input.as_of_s = input.generated_at_s = 1764000000;
  input.source = "bench";
  return input;
}

void BM_HtmlReport(benchmark::State& state) {
  const ReportInput input = ReportOf(static_cast<size_t>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    Result<std::string> html = RenderHtmlReport(input);
    bytes = html->size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["mib"] = static_cast<double>(bytes) / (1024 * 1024);
}
BENCHMARK(BM_HtmlReport)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_TextReports(benchmark::State& state) {
  const ReportInput input = ReportOf(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    Result<std::string> md = RenderMarkdownReport(input);
    Result<std::string> json = RenderJsonReport(input);
    std::string csv = RenderCsvReport(input);
    benchmark::DoNotOptimize(md->size() + json->size() + csv.size());
  }
}
BENCHMARK(BM_TextReports)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuvpa::updater

BENCHMARK_MAIN();
