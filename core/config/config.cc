// YAML configuration loading.
#include "core/config/config.h"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <map>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/yaml_fields.h"

namespace gpuvpa {
namespace {

const YamlField kConfig{"config", ""};

Status ParsePrices(const YAML::Node& list, GpuvpaConfig& config) {
  if (!list.IsSequence()) return InvalidArgumentError("config prices: expected a list");
  // (model, region) -> the entry that priced it: a second price for the same pair is a typo or
  // a merge gone wrong, never "the last one wins".
  std::map<std::pair<std::string, std::string>, std::string> priced;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& p = list[i];
    const std::string where =
        "prices[" + std::to_string(i) + "] (line " + std::to_string(p.Mark().line + 1) + ")";
    if (Status s = kConfig[where].CheckKeys(
            p, {"gpu_model", "usd_per_gpu_hour", "region", "source", "in_house"});
        !s.ok())
      return s;
    if (!p["gpu_model"] || !p["usd_per_gpu_hour"])
      return InvalidArgumentError("config " + where +
                                  ": gpu_model and usd_per_gpu_hour are required");
    Result<std::string> model = kConfig[where]["gpu_model"].String(p["gpu_model"]);
    if (!model.ok()) return model.status();
    double price = 0;
    const std::string price_text = p["usd_per_gpu_hour"].Scalar();
    if (!YAML::convert<double>::decode(p["usd_per_gpu_hour"], price))
      return InvalidArgumentError("config " + where + ".usd_per_gpu_hour: \"" + price_text +
                                  "\" is not a number");
    bool in_house = false;
    if (Status s = ReadYamlBool(p, kConfig[where], "in_house", in_house); !s.ok()) return s;
    if (!in_house && !config.prices.KnowsModel(*model))
      return InvalidArgumentError(
          "config " + where + ".gpu_model: " + QuoteForError(*model) +
          " is not a GPU model of the catalog (a misspelling?); a model of your own needs "
          "in_house: true");
    const std::string region = p["region"] ? p["region"].as<std::string>() : "";
    const std::string source = p["source"] ? p["source"].as<std::string>() : "configuration";
    const auto [first, fresh] =
        priced.emplace(std::pair(config.prices.CanonicalModel(*model), region), where);
    if (!fresh)
      return InvalidArgumentError("config " + where + ": gpu_model " + QuoteForError(*model) +
                                  (region.empty() ? "" : " in region " + QuoteForError(region)) +
                                  " is already priced by " + first->second);
    if (Status s = config.prices.SetPrice(*model, region, price, source); !s.ok())
      return InvalidArgumentError("config " + where + ": " + s.message());
  }
  return OkStatus();
}

Status ParseCostCenters(const YAML::Node& node, CostCenterRules& rules) {
  if (Status s = kConfig["cost_centers"].CheckKeys(
          node, {"namespace_label_key", "workload_annotation_key", "namespaces"});
      !s.ok())
    return s;
  if (node["namespace_label_key"])
    rules.namespace_label_key = node["namespace_label_key"].as<std::string>();
  if (node["workload_annotation_key"])
    rules.workload_annotation_key = node["workload_annotation_key"].as<std::string>();
  if (const YAML::Node ns = node["namespaces"]) {
    if (!ns.IsMap())
      return InvalidArgumentError("config cost_centers.namespaces: expected a mapping");
    for (const auto& kv : ns) {
      const auto name = kv.first.as<std::string>();
      const auto cost_center = kv.second.as<std::string>();
      if (Status s = ValidateNamespaceName("config cost_centers.namespaces key", name); !s.ok())
        return s;
      if (Status s = ValidateLabelText("config cost_centers.namespaces." + name, cost_center);
          !s.ok())
        return s;
      rules.namespace_cost_centers[name] = cost_center;
    }
  }
  return OkStatus();
}

}  // namespace

Result<GpuvpaConfig> ParseConfig(std::string_view yaml_text) {
  GpuvpaConfig config;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) return config;
    if (Status s = kConfig["(top level)"].CheckKeys(
            root, {"region", "cluster", "prices", "max_usd_per_gpu_hour", "cost_centers", "ledger",
                   "recommender", "delivery"});
        !s.ok())
      return s;
    if (const YAML::Node max = root["max_usd_per_gpu_hour"]) {
      double bound = 0;
      if (!max.IsScalar() || !YAML::convert<double>::decode(max, bound))
        return InvalidArgumentError("config max_usd_per_gpu_hour: \"" + YAML::Dump(max) +
                                    "\" is not a number");
      if (Status s = config.prices.SetMaxPrice(bound); !s.ok())
        return InvalidArgumentError("config " + s.message());
    }
    if (root["region"]) config.region = root["region"].as<std::string>();
    if (root["cluster"]) {
      config.cluster = root["cluster"].as<std::string>();
      GPUVPA_RETURN_IF_ERROR(ValidateClusterName("config cluster", config.cluster));
    }
    if (root["prices"]) {
      if (Status s = ParsePrices(root["prices"], config); !s.ok()) return s;
    }
    if (root["cost_centers"]) {
      if (Status s = ParseCostCenters(root["cost_centers"], config.cost_centers); !s.ok()) return s;
    }
    if (const YAML::Node section = root["recommender"])
      config.recommender_yaml = YAML::Dump(section);
    if (const YAML::Node section = root["delivery"]) config.delivery_yaml = YAML::Dump(section);
    if (const YAML::Node ledger = root["ledger"]) {
      if (Status s = kConfig["ledger"].CheckKeys(ledger, {"path", "url_file"}); !s.ok()) return s;
      if (ledger["path"]) config.ledger_path = ledger["path"].as<std::string>();
      if (ledger["url_file"]) config.ledger_url_file = ledger["url_file"].as<std::string>();
      if (ledger["path"] && ledger["url_file"])
        return InvalidArgumentError("config ledger: path and url_file: give the ledger one way");
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("config: ") + e.what());
  }
  return config;
}

Result<GpuvpaConfig> LoadConfigFile(const std::string& path) {
  if (path.empty()) return GpuvpaConfig{};
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  Result<GpuvpaConfig> config = ParseConfig(*text);
  if (!config.ok()) return Status(config.status().code(), path + ": " + config.status().message());
  return config;
}

}  // namespace gpuvpa
