// Update policy: parsing and decisions.
#include "updater/plan/policy.h"

#include <yaml-cpp/yaml.h>

#include "core/base/atomic_file.h"
#include "core/base/names.h"
#include "core/base/yaml_fields.h"

namespace gpuvpa::updater {
namespace {

const YamlField kPolicy{"policy", ""};

Result<Labels> ReadLabels(const YAML::Node& node, const YamlField& f) {
  if (!node.IsMap()) return f.Error("expected a mapping of label names to values");
  Labels labels;
  for (const auto& kv : node) {
    Result<std::string> key = f.String(kv.first);
    if (!key.ok()) return key.status();
    Result<std::string> value = f[*key].String(kv.second);
    if (!value.ok()) return value.status();
    labels[*key] = *value;
  }
  return labels;
}

Result<std::vector<std::string>> ReadStrings(const YAML::Node& node, const YamlField& f) {
  if (!node.IsSequence()) return f.Error("expected a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    Result<std::string> s = f[i].String(node[i]);
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return out;
}

Status ReadModes(const YAML::Node& node, UpdaterPolicy& policy) {
  const YamlField f = kPolicy["namespaces"];
  if (!node.IsMap()) return f.Error("expected a mapping of namespace to mode");
  for (const auto& kv : node) {
    Result<std::string> ns = f.String(kv.first);
    if (!ns.ok()) return ns.status();
    if (Status s = ValidateNamespaceName("policy namespaces key", *ns); !s.ok()) return s;
    Result<std::string> text = f[*ns].String(kv.second);
    if (!text.ok()) return text.status();
    Result<UpdateMode> mode = ParseUpdateMode(*text);
    if (!mode.ok()) return f[*ns].Error(mode.status().message());
    policy.namespace_modes[*ns] = *mode;
  }
  return OkStatus();
}

// Adds the file's entries to the built-in selector; an empty selector or list is an error.
Status ReadProduction(const YAML::Node& node, ProductionSelector& out) {
  const YamlField f = kPolicy["production"];
  if (!node.IsMap() || node.size() == 0)
    return f.Error(
        "is empty: an empty selector would protect nothing (omit the key for the built-in one)");
  if (Status s = f.CheckKeys(node, {"label_keys", "label_values", "name_words", "name_patterns",
                                    "namespace_label", "namespace_patterns"});
      !s.ok())
    return s;
  auto add = [&](const YAML::Node& list, const YamlField& lf,
                 std::vector<std::string>& to) -> Status {
    Result<std::vector<std::string>> values = ReadStrings(list, lf);
    if (!values.ok()) return values.status();
    if (values->empty()) return lf.Error("is an empty list");
    for (const std::string& v : *values)
      if (!IsUsableSelectorEntry(v))
        return lf.Error("holds " + QuoteForError(v) + ", which is not a usable entry");
    to.insert(to.end(), values->begin(), values->end());
    return OkStatus();
  };
  for (auto [key, list] :
       {std::pair<const char*, std::vector<std::string>*>{"label_keys", &out.label_keys},
        {"label_values", &out.label_values},
        {"name_words", &out.name_words},
        {"name_patterns", &out.name_patterns},
        {"namespace_patterns", &out.name_patterns}})
    if (const YAML::Node n = node[key])
      if (Status s = add(n, f[key], *list); !s.ok()) return s;
  // The earlier spelling: one key and its values.
  if (const YAML::Node label = node["namespace_label"]) {
    const YamlField lf = f["namespace_label"];
    if (Status s = lf.CheckKeys(label, {"key", "values"}); !s.ok()) return s;
    std::string key;
    if (Status s = ReadYamlString(label, lf, "key", key, true); !s.ok()) return s;
    if (key.empty()) return lf["key"].Error("is empty");
    out.label_keys.push_back(key);
    if (!label["values"]) return lf.Error("values is required");
    if (Status s = add(label["values"], lf["values"], out.label_values); !s.ok()) return s;
  }
  return out.Validate();
}

Status ReadScaleToZero(const YAML::Node& node, ScaleToZeroPolicy& out) {
  const YamlField f = kPolicy["scale_to_zero"];
  if (Status s = f.CheckKeys(node, {"max_active_duty", "min_idle_hours_ratio", "min_idle_gap_hours",
                                    "scaler_address", "queue_address"});
      !s.ok())
    return s;
  double gap_hours = out.min_idle_gap_s / 3600;
  for (Status s : {ReadYamlNumber(node, f, "max_active_duty", 0, 1, out.max_active_duty),
                   ReadYamlNumber(node, f, "min_idle_hours_ratio", 0, 1, out.min_idle_hours_ratio),
                   ReadYamlNumber(node, f, "min_idle_gap_hours", 0, 24 * 365, gap_hours),
                   ReadYamlString(node, f, "scaler_address", out.scaler_address),
                   ReadYamlString(node, f, "queue_address", out.queue_address)})
    if (!s.ok()) return s;
  out.min_idle_gap_s = gap_hours * 3600;
  return OkStatus();
}

template <typename Read>
Status ReadMapOfLabels(const YAML::Node& node, const YamlField& f, Read&& check_key,
                       std::map<std::string, Labels, std::less<>>& out) {
  if (!node.IsMap()) return f.Error("expected a mapping");
  for (const auto& kv : node) {
    Result<std::string> key = f.String(kv.first);
    if (!key.ok()) return key.status();
    if (Status s = check_key(*key); !s.ok()) return s;
    Result<Labels> labels = ReadLabels(kv.second, f[*key]);
    if (!labels.ok()) return labels.status();
    out[*key] = *labels;
  }
  return OkStatus();
}

Status CheckWorkloadKey(const std::string& key) {
  const size_t a = key.find('/');
  const size_t b = a == std::string::npos ? a : key.find('/', a + 1);
  if (b == std::string::npos || key.find('/', b + 1) != std::string::npos)
    return InvalidArgumentError("policy workload_annotations key " + QuoteForError(key) +
                                " is not namespace/Kind/name");
  return OkStatus();
}

}  // namespace

std::string_view UpdateModeName(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kOff:
      return "Off";
    case UpdateMode::kReport:
      return "Report";
    case UpdateMode::kAuto:
      return "Auto";
  }
  return "Report";
}

Result<UpdateMode> ParseUpdateMode(std::string_view text) {
  for (UpdateMode m : {UpdateMode::kOff, UpdateMode::kReport, UpdateMode::kAuto})
    if (text == UpdateModeName(m)) return m;
  return InvalidArgumentError("mode " + QuoteForError(text) + " is not one of Off, Report, Auto");
}

Result<UpdaterPolicy> ParseUpdaterPolicy(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("policy: not YAML: ") + e.what());
  }
  UpdaterPolicy policy;
  if (root.IsNull()) return policy;
  try {
    if (Status s =
            kPolicy.CheckKeys(root, {"default_mode", "namespaces", "production",
                                     "opt_out_annotation", "min_change_ratio", "min_confidence",
                                     "allowed_gpu_models", "shared_gpu_replicas", "scale_to_zero",
                                     "namespace_labels", "workload_annotations"});
        !s.ok())
      return s;
    if (const YAML::Node n = root["default_mode"]) {
      Result<std::string> text = kPolicy["default_mode"].String(n);
      if (!text.ok()) return text.status();
      Result<UpdateMode> mode = ParseUpdateMode(*text);
      if (!mode.ok()) return kPolicy["default_mode"].Error(mode.status().message());
      policy.default_mode = *mode;
    }
    if (const YAML::Node n = root["namespaces"])
      if (Status s = ReadModes(n, policy); !s.ok()) return s;
    if (root["production"])
      if (Status s = ReadProduction(root["production"], policy.production); !s.ok()) return s;
    if (const YAML::Node n = root["scale_to_zero"])
      if (Status s = ReadScaleToZero(n, policy.scale_to_zero); !s.ok()) return s;
    for (Status s :
         {ReadYamlString(root, kPolicy, "opt_out_annotation", policy.opt_out_annotation),
          ReadYamlNumber(root, kPolicy, "min_change_ratio", 0, 1, policy.min_change_ratio),
          ReadYamlNumber(root, kPolicy, "min_confidence", 0, 1000, policy.min_confidence)})
      if (!s.ok()) return s;
    if (const YAML::Node n = root["allowed_gpu_models"]) {
      Result<std::vector<std::string>> models = ReadStrings(n, kPolicy["allowed_gpu_models"]);
      if (!models.ok()) return models.status();
      policy.allowed_gpu_models = *models;
    }
    if (const YAML::Node n = root["shared_gpu_replicas"]) {
      const YamlField f = kPolicy["shared_gpu_replicas"];
      if (!n.IsSequence()) return f.Error("expected a list");
      policy.shared_gpu_replicas.clear();
      for (size_t i = 0; i < n.size(); ++i) {
        Result<long long> r = f[i].Integer(n[i], 2, 64);
        if (!r.ok()) return r.status();
        policy.shared_gpu_replicas.push_back(static_cast<int>(*r));
      }
    }
    if (const YAML::Node n = root["namespace_labels"])
      if (Status s = ReadMapOfLabels(
              n, kPolicy["namespace_labels"],
              [](const std::string& ns) {
                return ValidateNamespaceName("policy namespace_labels key", ns);
              },
              policy.namespace_labels);
          !s.ok())
        return s;
    if (const YAML::Node n = root["workload_annotations"])
      if (Status s = ReadMapOfLabels(n, kPolicy["workload_annotations"], CheckWorkloadKey,
                                     policy.workload_annotations);
          !s.ok())
        return s;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("policy: ") + e.what());
  }
  return policy;
}

Result<UpdaterPolicy> LoadUpdaterPolicy(const std::string& path) {
  if (path.empty()) return UpdaterPolicy{};
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok())
    return Status(text.status().code(), "policy " + path + ": " + text.status().message());
  Result<UpdaterPolicy> policy = ParseUpdaterPolicy(*text);
  if (!policy.ok()) return Status(policy.status().code(), path + ": " + policy.status().message());
  return policy;
}

std::string PolicyWorkloadKey(std::string_view namespace_name, std::string_view owner_kind,
                              std::string_view owner_name) {
  std::string key(namespace_name);
  key += '/';
  key += owner_kind;
  key += '/';
  key += owner_name;
  return key;
}

PolicyDecision DecidePolicy(const UpdaterPolicy& policy, std::string_view namespace_name,
                            std::string_view owner_kind, std::string_view owner_name) {
  PolicyDecision d;
  d.mode = policy.default_mode;
  d.reason = "default mode " + std::string(UpdateModeName(d.mode));
  if (auto it = policy.namespace_modes.find(namespace_name); it != policy.namespace_modes.end()) {
    d.mode = it->second;
    d.reason = "namespace mode " + std::string(UpdateModeName(d.mode));
  }
  static const Labels kNone;
  auto labels = policy.namespace_labels.find(namespace_name);
  const std::string why = policy.production.Why(
      namespace_name, labels == policy.namespace_labels.end() ? kNone : labels->second);
  d.production = !why.empty();
  if (d.production && d.mode == UpdateMode::kAuto) {
    d.mode = UpdateMode::kReport;
    d.reason = "production namespace (" + why + "): never Auto (reported only)";
  }
  if (d.mode > policy.max_mode) {
    d.mode = policy.max_mode;
    d.reason = "the updater runs with --max-mode " + std::string(UpdateModeName(d.mode));
  }
  const std::string key = PolicyWorkloadKey(namespace_name, owner_kind, owner_name);
  if (auto it = policy.workload_annotations.find(key); it != policy.workload_annotations.end()) {
    if (auto a = it->second.find(policy.opt_out_annotation);
        a != it->second.end() && OptOutValue(a->second)) {
      d.opted_out = true;
      d.mode = UpdateMode::kOff;
      d.reason = "opted out by annotation " + policy.opt_out_annotation;
    }
  }
  return d;
}

}  // namespace gpuvpa::updater
