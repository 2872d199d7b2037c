// gpuvpa's configuration file (YAML): prices, cost-center rules, the ledger. One loader for
// every binary. Unknown keys are errors naming the key, so a typo never silently falls back to
// a default.
//
//   region: us-east-1                 # optional: prices for this region win
//   prices:                           # added to / replacing the built-in defaults
//     - gpu_model: H100-80GB
//       usd_per_gpu_hour: 3.10
//       region: eu-west-1             # optional
//       source: "2026 contract"       # optional
//   cost_centers:
//     namespace_label_key: cost-center
//     workload_annotation_key: gpuvpa.io/cost-center
//     namespaces: {ml-team: research}
//   cluster: prod-eu                  # this installation, on every ledger row (default: default)
//   ledger:
//     path: gpuvpa-ledger.db          # SQLite (sqlite:PATH works too), or:
//     url_file: /etc/gpuvpa/ledger/url  # a file holding postgresql://... (a Secret)
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/cost/cost_center.h"
#include "core/cost/ledger.h"
#include "core/cost/price_book.h"

namespace gpuvpa {

inline constexpr std::string_view kDefaultLedgerPath = "gpuvpa-ledger.db";

struct GpuvpaConfig {
  std::string region;
  PriceBook prices = PriceBook::BuiltInDefaults();
  CostCenterRules cost_centers;
  std::string cluster = std::string(kDefaultCluster);
  std::string ledger_path = std::string(kDefaultLedgerPath);
  std::string ledger_url_file;  // when set, the ledger's URL is read from this file
  // The gpuvpa-recommender daemon's section, as YAML text (its own loader reads it).
  std::string recommender_yaml;
  // The `delivery:` section as YAML text (core/cost/delivery.h parses it); "" when absent.
  std::string delivery_yaml;
};

Result<GpuvpaConfig> ParseConfig(std::string_view yaml_text);
// An empty path gives the defaults.
Result<GpuvpaConfig> LoadConfigFile(const std::string& path);

}  // namespace gpuvpa
