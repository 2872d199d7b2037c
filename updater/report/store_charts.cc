// Recommendations and charts from a fleet store.
#include "updater/report/store_charts.h"

#include <limits>

#include "recommender/output/recommendation_format.h"

namespace gpuvpa::updater {
namespace {

std::vector<WorkloadCharts::Bar> Bars(const recommender::Bucketing& bucketing,
                                      std::span<const double> weights, double total) {
  std::vector<WorkloadCharts::Bar> bars;
  if (!(total > 0)) return bars;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    const int b = static_cast<int>(i);
    bars.push_back({bucketing.BucketStart(b), bucketing.BucketEnd(b), weights[i] / total});
  }
  return bars;
}

}  // namespace

std::vector<v1::Recommendation> RecommendationsOf(const recommender::FleetStore& store,
                                                  const recommender::Recommender& recommender,
                                                  const PriceBook& prices,
                                                  const std::string& region) {
  std::vector<v1::Recommendation> out;
  out.reserve(store.size());
  for (const recommender::Recommendation& r : recommender.RecommendAll(store))
    out.push_back(recommender::PricedRecommendation(r, store, &prices, region));
  return out;
}

WorkloadCharts ChartsOf(const recommender::FleetStore& store, uint32_t row) {
  WorkloadCharts c;
  c.vram = Bars(store.vram_bucketing(), store.vram_weights(row), store.vram_total_weight(row));
  c.sm = Bars(store.sm_bucketing(), store.sm_weights(row), store.sm_total_weight(row));
  const recommender::HourlyActivity a = store.state(row).Activity();
  c.latest_hour = a.latest_hour;
  if (a.latest_hour < 0) return c;
  c.hourly_active_ratio.resize(recommender::kActivityHours);
  for (int i = 0; i < recommender::kActivityHours; ++i) {
    const int64_t hour = a.latest_hour - (recommender::kActivityHours - 1) + i;
    const size_t slot = static_cast<size_t>(hour % recommender::kActivityHours);
    c.hourly_active_ratio[i] = a.samples[slot] == 0
                                   ? std::numeric_limits<double>::quiet_NaN()
                                   : static_cast<double>(a.active[slot]) / a.samples[slot];
  }
  return c;
}

}  // namespace gpuvpa::updater
