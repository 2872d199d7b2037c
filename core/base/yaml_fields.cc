// YAML field reads.
#include "core/base/yaml_fields.h"

#include <charconv>
#include <cmath>

#include "core/base/names.h"

namespace gpuvpa {

Status YamlField::Error(std::string_view why) const {
  return InvalidArgumentError(std::string(doc) + (where.empty() ? "" : " " + where) + ": " +
                              std::string(why));
}

Status YamlField::CheckKeys(const YAML::Node& node,
                            const std::vector<std::string_view>& known) const {
  if (!node.IsMap()) return Error("expected a mapping");
  for (const auto& kv : node) {
    // A key may be any YAML node (`? [a, b]: c`); only a string can name a field.
    if (!kv.first.IsScalar()) return Error("a key is not a string");
    const auto key = kv.first.as<std::string>();
    bool ok = false;
    for (std::string_view k : known) ok = ok || k == key;
    if (!ok) return Error("unknown key \"" + key + "\"");
  }
  return OkStatus();
}

Result<std::string> YamlField::String(const YAML::Node& node) const {
  if (!node.IsScalar()) return Error("expected a string");
  return node.as<std::string>();
}

Result<long long> YamlField::Integer(const YAML::Node& node, long long min, long long max) const {
  if (!node.IsScalar()) return Error("expected an integer");
  const std::string text = node.as<std::string>();
  long long v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < min || v > max)
    return Error("\"" + text + "\" is not an integer in " + std::to_string(min) + ".." +
                 std::to_string(max));
  return v;
}

Result<bool> YamlField::Bool(const YAML::Node& node) const {
  const std::string text = node.IsScalar() ? node.as<std::string>() : "";
  if (text == "true") return true;
  if (text == "false") return false;
  return Error("\"" + text + "\" is not true or false");
}

YamlField YamlField::operator[](std::string_view child) const {
  return {doc, where.empty() ? std::string(child) : where + "." + std::string(child)};
}

YamlField YamlField::operator[](size_t index) const {
  return {doc, where + "[" + std::to_string(index) + "]"};
}

Status ReadYamlString(const YAML::Node& map, const YamlField& f, std::string_view key,
                      std::string& out, bool required) {
  const YAML::Node node = map[std::string(key)];
  if (!node) return required ? f[key].Error("is required") : OkStatus();
  Result<std::string> v = f[key].String(node);
  if (!v.ok()) return v.status();
  if (v->empty()) return f[key].Error("must not be empty");
  out = std::move(v).value();
  return OkStatus();
}

Status ReadYamlNumber(const YAML::Node& map, const YamlField& f, std::string_view key, double min,
                      double max, double& out) {
  const YAML::Node node = map[std::string(key)];
  if (!node) return OkStatus();
  double v = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v))
    return f[key].Error("\"" + YAML::Dump(node) + "\" is not a number");
  if (v < min || v > max)
    return f[key].Error(YAML::Dump(node) + " is not in " + FormatNumber(min) + ".." +
                        FormatNumber(max));
  out = v;
  return OkStatus();
}

Status ReadYamlBool(const YAML::Node& map, const YamlField& f, std::string_view key, bool& out) {
  const YAML::Node node = map[std::string(key)];
  if (!node) return OkStatus();
  Result<bool> v = f[key].Bool(node);
  if (!v.ok()) return v.status();
  out = *v;
  return OkStatus();
}

}  // namespace gpuvpa
