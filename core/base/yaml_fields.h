// Typed reads of YAML configuration fields, shared by every config loader. Errors name the file
// kind (`doc`, e.g. "config" or "scaler config"), the field's path and the offending value, and
// unknown keys are errors, so a typo never silently falls back to a default.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa {

struct YamlField {
  std::string doc;    // "config", "scaler config FILE:"
  std::string where;  // "prometheus[0].ca_file"

  Status Error(std::string_view why) const;
  // `node` is a mapping whose keys are all in `known`.
  Status CheckKeys(const YAML::Node& node, const std::vector<std::string_view>& known) const;
  Result<std::string> String(const YAML::Node& node) const;
  Result<long long> Integer(const YAML::Node& node, long long min, long long max) const;
  Result<bool> Bool(const YAML::Node& node) const;
  YamlField operator[](std::string_view child) const;  // "where.child"
  YamlField operator[](size_t index) const;            // "where[index]"
};

// Optional (or required) fields of a mapping; `out` keeps its default when the key is absent.
Status ReadYamlString(const YAML::Node& map, const YamlField& f, std::string_view key,
                      std::string& out, bool required = false);
Status ReadYamlNumber(const YAML::Node& map, const YamlField& f, std::string_view key, double min,
                      double max, double& out);
Status ReadYamlBool(const YAML::Node& map, const YamlField& f, std::string_view key, bool& out);
template <typename T>
Status ReadYamlInt(const YAML::Node& map, const YamlField& f, std::string_view key, long long min,
                   long long max, T& out) {
  const YAML::Node node = map[std::string(key)];
  if (!node) return OkStatus();
  Result<long long> v = f[key].Integer(node, min, max);
  if (!v.ok()) return v.status();
  out = static_cast<T>(*v);
  return OkStatus();
}

}  // namespace gpuvpa
