// From the recommender's fleet store to what the updater reads: priced recommendations and the
// charts of each workload (its histograms and its week of hourly activity).
#pragma once

#include <string>
#include <vector>

#include "core/cost/price_book.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/logic/recommender.h"
#include "recommender/model/fleet_store.h"
#include "updater/report/report.h"

namespace gpuvpa::updater {

// One priced recommendation per store row, in row order.
std::vector<v1::Recommendation> RecommendationsOf(const recommender::FleetStore& store,
                                                  const recommender::Recommender& recommender,
                                                  const PriceBook& prices,
                                                  const std::string& region);

WorkloadCharts ChartsOf(const recommender::FleetStore& store, uint32_t row);

}  // namespace gpuvpa::updater
