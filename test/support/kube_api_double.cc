// The Kubernetes API test double: routing, storage with resourceVersions and a watch history,
// RBAC, patches, schema validation and Table output. One thread per connection (kubectl keeps
// connections alive and watches hold theirs); everything shared sits behind one mutex.
#include "test/support/kube_api_double.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "test/support/sockets.h"

namespace gpuvpa::testing {
namespace {

using json = nlohmann::json;
namespace asio = boost::asio;
namespace http = boost::beast::http;

std::string NowRfc3339() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int64_t ParseRfc3339(const std::string& text) {
  std::tm tm{};
  if (strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// apimachinery's HumanDuration, which the API uses for date columns.
std::string HumanDuration(int64_t s) {
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  const int64_t m = s / 60;
  if (m < 10)
    return s % 60 == 0 ? std::to_string(m) + "m"
                       : std::to_string(m) + "m" + std::to_string(s % 60) + "s";
  if (m < 180) return std::to_string(m) + "m";
  const int64_t h = s / 3600;
  if (h < 8) return std::to_string(h) + "h" + std::to_string(m % 60) + "m";
  if (h < 48) return std::to_string(h) + "h";
  if (h < 24 * 8) return std::to_string(h / 24) + "d" + std::to_string(h % 24) + "h";
  return std::to_string(h / 24) + "d";
}

json StatusBody(int code, const std::string& reason, const std::string& message,
                json details = nullptr) {
  json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  if (!details.is_null()) s["details"] = std::move(details);
  return s;
}

json ScalarOf(const YAML::Node& n) {
  const std::string& v = n.Scalar();
  if (n.Tag() == "!") return v;  // quoted: always a string
  if (v == "null" || v == "~" || v.empty()) return nullptr;
  if (v == "true") return true;
  if (v == "false") return false;
  // YAML 1.2 core schema numbers: [-+]digits, or a decimal with a point and an optional
  // exponent (what manifests use; hex, octal and .inf are left as strings).
  const size_t sign = v[0] == '-' || v[0] == '+' ? 1 : 0;
  const std::string_view body = std::string_view(v).substr(sign);
  const bool all_digits =
      !body.empty() && body.find_first_not_of("0123456789") == std::string_view::npos;
  if (all_digits) {
    long long n = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), n);
    if (ec == std::errc() && end == body.data() + body.size()) return v[0] == '-' ? -n : n;
  }
  const bool decimal = body.find('.') != std::string_view::npos &&
                       body.find_first_not_of("0123456789.eE+-") == std::string_view::npos &&
                       body.find_first_of("0123456789") != std::string_view::npos;
  if (decimal) {
    double d = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), d);
    if (ec == std::errc() && end == body.data() + body.size()) return v[0] == '-' ? -d : d;
  }
  return v;
}

json NodeToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = NodeToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(NodeToJson(e));
      return a;
    }
    case YAML::NodeType::Scalar:
      return ScalarOf(n);
    default:
      return nullptr;
  }
}

// The subset of the apps/v1 workload schema the double checks: every PodSpec and Container
// field is known by name (a typo is an unknown field); the ones gpuvpa writes are typed.
json WorkloadSchema() {
  static const char* kPodSpecFields[] = {"activeDeadlineSeconds",
                                         "affinity",
                                         "automountServiceAccountToken",
                                         "dnsConfig",
                                         "dnsPolicy",
                                         "enableServiceLinks",
                                         "ephemeralContainers",
                                         "hostAliases",
                                         "hostIPC",
                                         "hostNetwork",
                                         "hostPID",
                                         "hostname",
                                         "imagePullSecrets",
                                         "initContainers",
                                         "nodeName",
                                         "overhead",
                                         "preemptionPolicy",
                                         "priority",
                                         "priorityClassName",
                                         "readinessGates",
                                         "restartPolicy",
                                         "runtimeClassName",
                                         "schedulerName",
                                         "securityContext",
                                         "serviceAccount",
                                         "serviceAccountName",
                                         "setHostnameAsFQDN",
                                         "shareProcessNamespace",
                                         "subdomain",
                                         "terminationGracePeriodSeconds",
                                         "tolerations",
                                         "topologySpreadConstraints",
                                         "volumes"};
  static const char* kContainerFields[] = {"args",
                                           "command",
                                           "env",
                                           "envFrom",
                                           "imagePullPolicy",
                                           "lifecycle",
                                           "livenessProbe",
                                           "ports",
                                           "readinessProbe",
                                           "securityContext",
                                           "startupProbe",
                                           "stdin",
                                           "stdinOnce",
                                           "terminationMessagePath",
                                           "terminationMessagePolicy",
                                           "tty",
                                           "volumeDevices",
                                           "volumeMounts",
                                           "workingDir"};
  const json any = {{"x-kubernetes-preserve-unknown-fields", true}};
  const json quantity_map = {{"type", "object"},
                             {"additionalProperties", {{"x-kubernetes-int-or-string", true}}}};
  json container = {{"type", "object"},
                    {"required", {"name"}},
                    {"properties",
                     {{"name", {{"type", "string"}, {"minLength", 1}}},
                      {"image", {{"type", "string"}}},
                      {"resources",
                       {{"type", "object"},
                        {"properties", {{"limits", quantity_map}, {"requests", quantity_map}}}}}}}};
  for (const char* f : kContainerFields) container["properties"][f] = any;
  json pod_spec = {
      {"type", "object"},
      {"required", {"containers"}},
      {"properties",
       {{"containers", {{"type", "array"}, {"items", container}}},
        {"nodeSelector", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}}}}};
  for (const char* f : kPodSpecFields) pod_spec["properties"][f] = any;
  json spec = {{"type", "object"},
               {"required", {"selector", "template"}},
               {"properties",
                {{"replicas", {{"type", "integer"}, {"minimum", 0}}},
                 {"selector", any},
                 {"template",
                  {{"type", "object"}, {"properties", {{"metadata", any}, {"spec", pod_spec}}}}}}}};
  for (const char* f : {"strategy", "updateStrategy", "minReadySeconds", "revisionHistoryLimit",
                        "progressDeadlineSeconds", "paused", "serviceName", "podManagementPolicy",
                        "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy"})
    spec["properties"][f] = any;
  return {{"type", "object"},
          {"properties",
           {{"apiVersion", {{"type", "string"}}},
            {"kind", {{"type", "string"}}},
            {"metadata", any},
            {"spec", spec},
            {"status", any}}}};
}

json LeaseSchema() {
  return YamlToJson(R"(
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {x-kubernetes-preserve-unknown-fields: true}
  spec:
    type: object
    properties:
      holderIdentity: {type: string}
      leaseDurationSeconds: {type: integer, minimum: 1}
      acquireTime: {type: string}
      renewTime: {type: string}
      leaseTransitions: {type: integer, minimum: 0}
)");
}

json EventSchema() {
  return YamlToJson(R"(
type: object
required: [involvedObject]
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {x-kubernetes-preserve-unknown-fields: true}
  involvedObject:
    type: object
    required: [kind, name]
    properties:
      apiVersion: {type: string}
      kind: {type: string}
      name: {type: string}
      namespace: {type: string}
      uid: {type: string}
      resourceVersion: {type: string}
      fieldPath: {type: string}
  reason: {type: string}
  message: {type: string}
  type: {type: string, enum: [Normal, Warning]}
  count: {type: integer}
  firstTimestamp: {type: string}
  lastTimestamp: {type: string}
  eventTime: {x-kubernetes-preserve-unknown-fields: true}
  reportingComponent: {type: string}
  reportingInstance: {type: string}
  action: {type: string}
  source: {x-kubernetes-preserve-unknown-fields: true}
  related: {x-kubernetes-preserve-unknown-fields: true}
  series: {x-kubernetes-preserve-unknown-fields: true}
)");
}

json AnySchema() { return {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}; }

// ".a.b.c" (the JSONPath subset printer columns and field selectors use).
const json* AtPath(const json& obj, std::string_view path) {
  const json* cur = &obj;
  if (path.starts_with('.')) path.remove_prefix(1);
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return cur;
}

std::string AsSelectorText(const json* v) {
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

// "a=b,c!=d,e==f" over labels (label selector) or dotted fields (field selector).
bool SelectorMatches(const std::string& selector, const json& obj, bool labels) {
  std::stringstream ss(selector);
  std::string term;
  while (std::getline(ss, term, ',')) {
    if (term.empty()) continue;
    bool negate = false;
    size_t op = term.find("!=");
    size_t value_at;
    if (op != std::string::npos) {
      negate = true;
      value_at = op + 2;
    } else if ((op = term.find("==")) != std::string::npos) {
      value_at = op + 2;
    } else if ((op = term.find('=')) != std::string::npos) {
      value_at = op + 1;
    } else {
      // "key" alone: the label exists.
      const json* labels_obj = AtPath(obj, ".metadata.labels");
      if (!labels || labels_obj == nullptr || !labels_obj->contains(term)) return false;
      continue;
    }
    const std::string key = term.substr(0, op);
    const std::string want = term.substr(value_at);
    std::string have;
    bool present;
    if (labels) {
      const json* l = AtPath(obj, ".metadata.labels");
      present = l != nullptr && l->is_object() && l->contains(key);
      have = present ? AsSelectorText(&(*l)[key]) : "";
    } else {
      const json* f = AtPath(obj, "." + key);
      present = f != nullptr;
      have = AsSelectorText(f);
    }
    const bool equal = present && have == want;
    if (negate ? equal : !equal) return false;
  }
  return true;
}

std::string QueryParam(const std::string& query, const std::string& key) {
  std::stringstream ss(query);
  std::string kv;
  while (std::getline(ss, kv, '&')) {
    const size_t eq = kv.find('=');
    if (kv.substr(0, eq) != key) continue;
    std::string raw = eq == std::string::npos ? "" : kv.substr(eq + 1);
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size()) {
        out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += raw[i] == '+' ? ' ' : raw[i];
      }
    }
    return out;
  }
  return "";
}

bool IsTrue(const std::string& v) { return v == "1" || v == "true"; }

// Strategic merge for built-in kinds: like a merge patch, except that lists of named objects
// (containers, env, volumes, ...) merge element by element on their name, and an element with
// "$patch": "delete" removes its match.
void StrategicMerge(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) {
      target.erase(it.key());
    } else if (it->is_array() && !it->empty() && (*it)[0].is_object() &&
               (*it)[0].contains("name") && target.contains(it.key()) &&
               target[it.key()].is_array()) {
      json& list = target[it.key()];
      for (const json& element : *it) {
        auto match = std::find_if(list.begin(), list.end(), [&](const json& e) {
          return e.is_object() && e.value("name", "") == element.value("name", "");
        });
        const bool remove = element.value("$patch", "") == "delete";
        if (match == list.end()) {
          if (!remove) list.push_back(element);
        } else if (remove) {
          list.erase(match);
        } else {
          StrategicMerge(*match, element);
        }
      }
    } else {
      StrategicMerge(target[it.key()], *it);
    }
  }
}

}  // namespace

json YamlToJson(const std::string& yaml_text) { return NodeToJson(YAML::Load(yaml_text)); }

std::vector<std::string> ValidateAgainstSchema(const json& schema, const json& value,
                                               const std::string& path) {
  std::vector<std::string> errors;
  const std::string where = path.empty() ? "<root>" : path;
  const bool preserve = schema.value("x-kubernetes-preserve-unknown-fields", false);
  if (schema.value("x-kubernetes-int-or-string", false)) {
    if (!value.is_number_integer() && !value.is_string())
      errors.push_back(where + ": Invalid value: must be an integer or a string");
    return errors;
  }
  if (value.is_null()) return errors;  // an absent optional field
  const std::string type = schema.value("type", "");
  auto wrong = [&](const std::string& want) {
    errors.push_back(where + ": Invalid value: \"" + std::string(value.type_name()) +
                     "\": must be of type " + want);
  };
  if (type == "object") {
    if (!value.is_object()) {
      wrong("object");
      return errors;
    }
    static const json kNoProperties = json::object();
    const auto found = schema.find("properties");
    const json& props = found != schema.end() ? *found : kNoProperties;
    for (const std::string& r : schema.value("required", std::vector<std::string>{}))
      if (!value.contains(r) || value[r].is_null())
        errors.push_back((path.empty() ? "" : path + ".") + r + ": Required value");
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string child = path.empty() ? it.key() : path + "." + it.key();
      // The root's metadata is ObjectMeta, which the API server checks itself.
      if (path.empty() && it.key() == "metadata") continue;
      if (const auto prop = props.find(it.key()); prop != props.end()) {
        auto sub = ValidateAgainstSchema(*prop, *it, child);
        errors.insert(errors.end(), sub.begin(), sub.end());
      } else if (schema.contains("additionalProperties") &&
                 schema["additionalProperties"].is_object()) {
        auto sub = ValidateAgainstSchema(schema["additionalProperties"], *it, child);
        errors.insert(errors.end(), sub.begin(), sub.end());
      } else if (!preserve) {
        errors.push_back(child + ": field not declared in schema");
      }
    }
  } else if (type == "array") {
    if (!value.is_array()) {
      wrong("array");
      return errors;
    }
    if (schema.contains("items"))
      for (size_t i = 0; i < value.size(); ++i) {
        auto sub =
            ValidateAgainstSchema(schema["items"], value[i], path + "[" + std::to_string(i) + "]");
        errors.insert(errors.end(), sub.begin(), sub.end());
      }
  } else if (type == "string") {
    if (!value.is_string()) {
      wrong("string");
      return errors;
    }
    const std::string s = value.get<std::string>();
    if (schema.contains("minLength") && s.size() < schema["minLength"].get<size_t>())
      errors.push_back(where + ": Invalid value: \"" + s + "\": should be at least " +
                       schema["minLength"].dump() + " chars long");
    // `pattern` is not checked (no schema the double serves uses one).
  } else if (type == "integer") {
    if (!value.is_number_integer()) wrong("integer");
  } else if (type == "number") {
    if (!value.is_number()) wrong("number");
  } else if (type == "boolean") {
    if (!value.is_boolean()) wrong("boolean");
  }
  if (value.is_number()) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
      errors.push_back(where + ": Invalid value: " + value.dump() +
                       ": should be greater than or equal to " + schema["minimum"].dump());
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
      errors.push_back(where + ": Invalid value: " + value.dump() +
                       ": should be less than or equal to " + schema["maximum"].dump());
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const json& e : schema["enum"]) found = found || e == value;
    if (!found) {
      std::string allowed;
      for (const json& e : schema["enum"]) allowed += (allowed.empty() ? "" : ", ") + e.dump();
      errors.push_back(where + ": Unsupported value: " + value.dump() +
                       ": supported values: " + allowed);
    }
  }
  return errors;
}

std::vector<std::string> StructuralSchemaErrors(const json& schema, const std::string& path) {
  std::vector<std::string> errors;
  const std::string where = path.empty() ? "openAPIV3Schema" : path;
  if (!schema.is_object()) return {where + ": not an object"};
  const bool int_or_string = schema.value("x-kubernetes-int-or-string", false);
  const bool preserve = schema.value("x-kubernetes-preserve-unknown-fields", false);
  if (!schema.contains("type") && !int_or_string && !preserve)
    errors.push_back(where +
                     ".type: Required value: must not be empty for specified object fields");
  if (schema.contains("properties") && schema.contains("additionalProperties"))
    errors.push_back(where + ": additionalProperties and properties are mutual exclusive");
  static const std::set<std::string> kKnown = {"type",
                                               "properties",
                                               "required",
                                               "items",
                                               "enum",
                                               "minLength",
                                               "maxLength",
                                               "minimum",
                                               "maximum",
                                               "pattern",
                                               "additionalProperties",
                                               "x-kubernetes-int-or-string",
                                               "x-kubernetes-preserve-unknown-fields",
                                               "description",
                                               "default",
                                               "format",
                                               "minItems",
                                               "maxItems",
                                               "nullable",
                                               "x-kubernetes-list-type",
                                               "x-kubernetes-list-map-keys",
                                               "x-kubernetes-map-type"};
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (!kKnown.contains(it.key()))
      errors.push_back(where + "." + it.key() +
                       ": Forbidden: not allowed in a structural schema here");
  if (schema.contains("default")) {
    auto sub = ValidateAgainstSchema(schema, schema["default"], where + ".default");
    errors.insert(errors.end(), sub.begin(), sub.end());
  }
  if (schema.contains("enum"))
    for (const json& e : schema["enum"]) {
      json without_enum = schema;
      without_enum.erase("enum");
      auto sub = ValidateAgainstSchema(without_enum, e, where + ".enum");
      errors.insert(errors.end(), sub.begin(), sub.end());
    }
  if (schema.contains("properties")) {
    for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
      const std::string child = where + ".properties[" + it.key() + "]";
      if (path.empty() && it.key() == "metadata") {
        // Only name and generateName may be restricted at the root's metadata.
        if (it->contains("properties"))
          for (auto m = (*it)["properties"].begin(); m != (*it)["properties"].end(); ++m)
            if (m.key() != "name" && m.key() != "generateName")
              errors.push_back(child + ".properties[" + m.key() +
                               "]: Forbidden: must not be specified");
      }
      auto sub = StructuralSchemaErrors(*it, child);
      errors.insert(errors.end(), sub.begin(), sub.end());
    }
    for (const json& r : schema.value("required", json::array()))
      if (!schema["properties"].contains(r.get<std::string>()))
        errors.push_back(where + ".required: " + r.dump() + " is not a property");
  }
  if (schema.contains("items")) {
    auto sub = StructuralSchemaErrors(schema["items"], where + ".items");
    errors.insert(errors.end(), sub.begin(), sub.end());
  } else if (schema.value("type", "") == "array") {
    errors.push_back(where + ".items: Required value: must be specified for arrays");
  }
  if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
    auto sub =
        StructuralSchemaErrors(schema["additionalProperties"], where + ".additionalProperties");
    errors.insert(errors.end(), sub.begin(), sub.end());
  }
  return errors;
}

struct KubeApiDouble::ResourceType {
  std::string group;
  std::string version;
  std::string resource;  // plural
  std::string singular;
  std::string kind;
  bool namespaced = true;
  bool status_subresource = false;
  bool custom = false;  // a CRD: no strategic merge, printer columns from the CRD
  std::vector<std::string> short_names;
  json schema;
  json printer_columns = json::array();

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "deployments.apps", "pods": how API messages name the resource.
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
};

struct KubeApiDouble::Store {
  mutable std::mutex mu;
  std::condition_variable changed;
  std::vector<ResourceType> types;
  std::map<std::string, json> objects;  // resource/namespace/name
  struct Event {
    uint64_t rv;
    std::string type;
    std::string resource;
    std::string ns;
    json object;
  };
  std::vector<Event> history;
  uint64_t compacted_through = 0;
  uint64_t rv = 1000;
  uint64_t uids = 0;
  std::map<std::string, KubeUser> users;
  std::map<std::string, int> interpose;
  struct StagedLabels {
    std::string resource;  // counted requests go to this resource
    int requests = 0;      // let this many through first
    std::string target;    // resource/namespace/name (Key)
    json labels;
  };
  std::vector<StagedLabels> staged;
  int throttle = 0;
  int compact_after = -1;  // requests before the history is forgotten (-1: never)
  std::vector<KubeRequestRecord> requests;
  int port = 0;
  std::unique_ptr<asio::ssl::context> tls;

  const ResourceType* Type(const std::string& group, const std::string& resource) const {
    for (const ResourceType& t : types)
      if (t.group == group && t.resource == resource) return &t;
    return nullptr;
  }
  const ResourceType* TypeOfResource(const std::string& resource) const {
    for (const ResourceType& t : types)
      if (t.resource == resource) return &t;
    return nullptr;
  }
  const ResourceType* TypeOfObject(const json& o) const {
    for (const ResourceType& t : types)
      if (t.kind == o.value("kind", "") && t.api_version() == o.value("apiVersion", "")) return &t;
    return nullptr;
  }
  static std::string Key(const std::string& resource, const std::string& ns,
                         const std::string& name) {
    return resource + "/" + ns + "/" + name;
  }

  void Compact() {
    history.clear();
    compacted_through = rv;
  }

  // Stores a written object (caller holds mu): a new resourceVersion and a watch event.
  json Commit(const ResourceType& t, json object, const std::string& event_type) {
    object["kind"] = t.kind;
    object["apiVersion"] = t.api_version();
    object["metadata"]["resourceVersion"] = std::to_string(++rv);
    const std::string ns = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"]["name"];
    if (event_type == "DELETED")
      objects.erase(Key(t.resource, ns, name));
    else
      objects[Key(t.resource, ns, name)] = object;
    history.push_back({rv, event_type, t.resource, ns, object});
    changed.notify_all();
    return object;
  }

  json Fresh(const ResourceType& t, json object, const std::string& ns) {
    json& m = object["metadata"];
    if (t.namespaced) m["namespace"] = ns;
    m["uid"] = "00000000-0000-4000-8000-" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%012llu", static_cast<unsigned long long>(++uids));
      return std::string(buf);
    }();
    m["creationTimestamp"] = NowRfc3339();
    if (object.contains("spec")) m["generation"] = 1;
    return object;
  }
};

namespace {

struct Reply {
  Reply() = default;
  Reply(int status_code, json json_body, std::string retry, std::string serialized = "")
      : status(status_code),
        body(std::move(json_body)),
        retry_after(std::move(retry)),
        text(std::move(serialized)) {}
  int status = 200;
  json body;
  std::string retry_after;
  std::string text;  // when set, the body already serialized (lists and reads: no copies)
};

Reply Fail(int code, const std::string& reason, const std::string& message,
           json details = nullptr) {
  return {code, StatusBody(code, reason, message, std::move(details)), ""};
}

Reply Route(KubeApiDouble::Store& s, const std::string& method, const std::string& path,
            const std::string& query, const std::string& content_type, const std::string& accept,
            const std::string& token, const std::string& body);
// Serves one watch until its timeout; leaves `ec` set (a watch ends its connection).
void ServeWatchStream(KubeApiDouble::Store& s, const std::atomic<bool>& stopping,
                      asio::ssl::stream<asio::ip::tcp::socket>& stream, const std::string& path,
                      const std::string& query, const std::string& token,
                      boost::system::error_code& ec);

}  // namespace

KubeApiDouble::KubeApiDouble(const std::string& cert_dir, const std::string& crd_yaml_path)
    : store_(std::make_unique<Store>()) {
  std::ifstream crd_in(crd_yaml_path);
  std::stringstream crd_text;
  crd_text << crd_in.rdbuf();
  const json crd = YamlToJson(crd_text.str());
  const json& version = crd["spec"]["versions"][0];
  ResourceType gvpa;
  gvpa.group = crd["spec"]["group"];
  gvpa.version = version["name"];
  gvpa.resource = crd["spec"]["names"]["plural"];
  gvpa.singular = crd["spec"]["names"]["singular"];
  gvpa.kind = crd["spec"]["names"]["kind"];
  gvpa.namespaced = crd["spec"]["scope"] == "Namespaced";
  gvpa.status_subresource =
      version.contains("subresources") && version["subresources"].contains("status");
  gvpa.custom = true;
  gvpa.short_names = crd["spec"]["names"].value("shortNames", std::vector<std::string>{});
  gvpa.schema = version["schema"]["openAPIV3Schema"];
  gvpa.printer_columns = version.value("additionalPrinterColumns", json::array());
  auto type = [](std::string g, std::string v, std::string r, std::string s, std::string k, bool ns,
                 bool status, std::vector<std::string> shorts, json schema) {
    ResourceType t;
    t.group = std::move(g);
    t.version = std::move(v);
    t.resource = std::move(r);
    t.singular = std::move(s);
    t.kind = std::move(k);
    t.namespaced = ns;
    t.status_subresource = status;
    t.short_names = std::move(shorts);
    t.schema = std::move(schema);
    return t;
  };
  store_->types = {
      type("", "v1", "namespaces", "namespace", "Namespace", false, true, {"ns"}, AnySchema()),
      type("", "v1", "pods", "pod", "Pod", true, true, {"po"}, AnySchema()),
      type("", "v1", "events", "event", "Event", true, false, {"ev"}, EventSchema()),
      type("apps", "v1", "deployments", "deployment", "Deployment", true, true, {"deploy"},
           WorkloadSchema()),
      type("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, true, {"sts"},
           WorkloadSchema()),
      type("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, false, {}, LeaseSchema()),
      gvpa};

  std::string server_cert = cert_dir + "/server.pem";
  std::string server_key = cert_dir + "/server.key";
  listen_fd_ = ListenOnLoopback(&port_);
  store_->port = port_;
  store_->tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  store_->tls->use_certificate_chain_file(server_cert);
  store_->tls->use_private_key_file(server_key, asio::ssl::context::pem);
  acceptor_ = std::thread([this] {
    asio::ssl::context& tls = *store_->tls;
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(conn_mu_);
      open_fds_.push_back(fd);
      threads_.emplace_back([this, fd, &tls] {
        try {
          asio::io_context io;
          asio::ssl::stream<asio::ip::tcp::socket> stream(io, tls);
          stream.next_layer().assign(asio::ip::tcp::v4(), fd);
          boost::system::error_code ec;
          // The apiserver (Go) sets TCP_NODELAY on every connection; so does the double.
          stream.next_layer().set_option(asio::ip::tcp::no_delay(true), ec);
          stream.handshake(asio::ssl::stream_base::server, ec);
          boost::beast::flat_buffer buffer;
          while (!ec && !stopping_) {
            http::request_parser<http::string_body> parser;
            parser.body_limit(8u << 20);
            http::read(stream, buffer, parser, ec);
            if (ec) break;
            http::request<http::string_body> req = parser.release();
            const std::string target(req.target());
            const size_t q = target.find('?');
            const std::string path = target.substr(0, q);
            const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
            std::string token(req[http::field::authorization]);
            if (token.starts_with("Bearer ")) token = token.substr(7);
            // Route everything but a watch to a JSON reply.
            const bool watch =
                req.method() == http::verb::get && IsTrue(QueryParam(query, "watch"));
            if (watch) {
              Reply r;
              std::string user;
              {
                std::lock_guard<std::mutex> lock(store_->mu);
                auto u = store_->users.find(token);
                if (u == store_->users.end()) {
                  r = Fail(401, "Unauthorized", "Unauthorized");
                } else {
                  user = u->second.name;
                }
              }
              if (r.status == 401) {
                http::response<http::string_body> res{http::status::unauthorized, req.version()};
                res.set(http::field::content_type, "application/json");
                res.body() = r.body.dump();
                res.prepare_payload();
                http::write(stream, res, ec);
                continue;
              }
              ServeWatchStream(*store_, stopping_, stream, path, query, token, ec);
              break;
            }
            Reply r = Route(*store_, std::string(req.method_string()), path, query,
                            std::string(req[http::field::content_type]),
                            std::string(req[http::field::accept]), token, req.body());
            http::response<http::string_body> res{static_cast<http::status>(r.status),
                                                  req.version()};
            res.set(http::field::content_type, "application/json");
            if (!r.retry_after.empty()) res.set(http::field::retry_after, r.retry_after);
            res.keep_alive(req.keep_alive());
            res.body() = r.text.empty() ? r.body.dump() : std::move(r.text);
            res.prepare_payload();
            http::write(stream, res, ec);
            if (!req.keep_alive()) break;
          }
          std::lock_guard<std::mutex> lock(conn_mu_);
          open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
          stream.next_layer().close(ec);
        } catch (const std::exception&) {
          std::lock_guard<std::mutex> lock(conn_mu_);
          auto it = std::find(open_fds_.begin(), open_fds_.end(), fd);
          if (it != open_fds_.end()) open_fds_.erase(it);
        }
      });
    }
  });
}

KubeApiDouble::~KubeApiDouble() {
  stopping_ = true;
  store_->changed.notify_all();
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (;;) {
    store_->changed.notify_all();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(conn_mu_);
      threads.swap(threads_);
    }
    if (threads.empty()) break;
    for (std::thread& t : threads) t.join();
  }
  ::close(listen_fd_);
}

std::string KubeApiDouble::url() const { return "https://127.0.0.1:" + std::to_string(port_); }

void KubeApiDouble::AddUser(const std::string& token, KubeUser user) {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->users[token] = std::move(user);
}

void KubeApiDouble::AddAdmin(const std::string& token) {
  AddUser(token, {"kubernetes-admin", {{{"*"}, {"*"}, {"*"}, {}}}});
}

json KubeApiDouble::Seed(json object) {
  std::lock_guard<std::mutex> lock(store_->mu);
  const ResourceType* t = store_->TypeOfObject(object);
  if (t == nullptr) throw std::invalid_argument("no resource for " + object.dump());
  auto errors = ValidateAgainstSchema(t->schema, object);
  if (!errors.empty()) throw std::invalid_argument("seed refused: " + errors[0]);
  const std::string ns = object["metadata"].value("namespace", t->namespaced ? "default" : "");
  return store_->Commit(*t, store_->Fresh(*t, std::move(object), ns), "ADDED");
}

json KubeApiDouble::Get(const std::string& resource, const std::string& ns,
                        const std::string& name) const {
  std::lock_guard<std::mutex> lock(store_->mu);
  auto it = store_->objects.find(Store::Key(resource, ns, name));
  return it == store_->objects.end() ? json() : it->second;
}

std::vector<json> KubeApiDouble::List(const std::string& resource, const std::string& ns) const {
  std::lock_guard<std::mutex> lock(store_->mu);
  std::vector<json> out;
  const std::string prefix = resource + "/" + ns + "/";
  for (const auto& [key, obj] : store_->objects)
    if (key.starts_with(prefix)) out.push_back(obj);
  return out;
}

void KubeApiDouble::SetStatus(const std::string& resource, const std::string& ns,
                              const std::string& name, json status) {
  std::lock_guard<std::mutex> lock(store_->mu);
  auto it = store_->objects.find(Store::Key(resource, ns, name));
  if (it == store_->objects.end()) throw std::invalid_argument("no object " + name);
  json o = it->second;
  o["status"] = std::move(status);
  store_->Commit(*store_->TypeOfResource(resource), std::move(o), "MODIFIED");
}

void KubeApiDouble::Delete(const std::string& resource, const std::string& ns,
                           const std::string& name) {
  std::lock_guard<std::mutex> lock(store_->mu);
  auto it = store_->objects.find(Store::Key(resource, ns, name));
  if (it == store_->objects.end()) return;
  store_->Commit(*store_->TypeOfResource(resource), it->second, "DELETED");
}

void KubeApiDouble::InterposeWrites(const std::string& resource, int count) {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->interpose[resource] = count;
}

void KubeApiDouble::ChangeLabelsBeforeRequest(const std::string& resource, int requests,
                                              const std::string& target_resource,
                                              const std::string& ns, const std::string& name,
                                              json labels) {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->staged.push_back(
      {resource, requests, Store::Key(target_resource, ns, name), std::move(labels)});
}

void KubeApiDouble::Throttle(int count) {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->throttle = count;
}

void KubeApiDouble::CompactHistory() {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->Compact();
}

void KubeApiDouble::CompactHistoryAfterRequests(int requests) {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->compact_after = requests;
}

std::vector<KubeRequestRecord> KubeApiDouble::requests() const {
  std::lock_guard<std::mutex> lock(store_->mu);
  return store_->requests;
}

void KubeApiDouble::ClearRequests() {
  std::lock_guard<std::mutex> lock(store_->mu);
  store_->requests.clear();
}

uint64_t KubeApiDouble::resource_version() const {
  std::lock_guard<std::mutex> lock(store_->mu);
  return store_->rv;
}

// ---- routing ---------------------------------------------------------------------------

namespace {

using Store = KubeApiDouble::Store;
using ResourceType = KubeApiDouble::ResourceType;

// What a request path names.
struct Target {
  bool discovery = false;
  json discovery_body;
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
  std::string subresource;
  std::string error;  // 404 when set
};

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string p;
  while (std::getline(ss, p, '/'))
    if (!p.empty()) parts.push_back(p);
  return parts;
}

json ResourceList(const Store& s, const std::string& group, const std::string& version) {
  json resources = json::array();
  for (const ResourceType& t : s.types) {
    if (t.group != group || t.version != version) continue;
    resources.push_back({{"name", t.resource},
                         {"singularName", t.singular},
                         {"namespaced", t.namespaced},
                         {"kind", t.kind},
                         {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}},
                         {"shortNames", t.short_names}});
    if (t.status_subresource)
      resources.push_back({{"name", t.resource + "/status"},
                           {"singularName", ""},
                           {"namespaced", t.namespaced},
                           {"kind", t.kind},
                           {"verbs", {"get", "patch", "update"}}});
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? version : group + "/" + version},
          {"resources", resources}};
}

Target Resolve(const Store& s, const std::string& path) {
  Target t;
  const std::vector<std::string> p = Split(path);
  if (p.size() == 1 && p[0] == "version") {
    t.discovery = true;
    t.discovery_body = {
        {"major", "1"}, {"minor", "20"}, {"gitVersion", "v1.20.2"}, {"platform", "linux/amd64"}};
    return t;
  }
  if (p.size() == 1 && p[0] == "api") {
    t.discovery = true;
    t.discovery_body = {{"kind", "APIVersions"},
                        {"versions", {"v1"}},
                        {"serverAddressByClientCIDRs",
                         {{{"clientCIDR", "0.0.0.0/0"},
                           {"serverAddress", "127.0.0.1:" + std::to_string(s.port)}}}}};
    return t;
  }
  if (p.size() == 1 && p[0] == "apis") {
    json groups = json::array();
    std::set<std::string> seen;
    for (const ResourceType& rt : s.types) {
      if (rt.group.empty() || !seen.insert(rt.group).second) continue;
      const json gv = {{"groupVersion", rt.api_version()}, {"version", rt.version}};
      groups.push_back({{"name", rt.group}, {"versions", {gv}}, {"preferredVersion", gv}});
    }
    t.discovery = true;
    t.discovery_body = {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
    return t;
  }
  size_t at;
  std::string group, version;
  if (p.size() >= 2 && p[0] == "api" && p[1] == "v1") {
    version = "v1";
    at = 2;
  } else if (p.size() >= 3 && p[0] == "apis") {
    group = p[1];
    version = p[2];
    at = 3;
  } else {
    t.error = "the server could not find the requested resource";
    return t;
  }
  if (p.size() == at) {
    bool known = false;
    for (const ResourceType& rt : s.types)
      known = known || (rt.group == group && rt.version == version);
    if (!known) {
      t.error = "the server could not find the requested resource";
      return t;
    }
    t.discovery = true;
    t.discovery_body = ResourceList(s, group, version);
    return t;
  }
  std::vector<std::string> rest(p.begin() + static_cast<long>(at), p.end());
  // namespaces/<ns>/<resource>/...; "namespaces" and "namespaces/<name>" are the Namespace
  // resource itself.
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    t.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  t.type = s.Type(group, rest[0]);
  if (t.type == nullptr || t.type->version != version || rest.size() > 3 ||
      (!t.type->namespaced && !t.ns.empty())) {
    t.type = nullptr;
    t.error = "the server could not find the requested resource";
    return t;
  }
  if (rest.size() >= 2) t.name = rest[1];
  if (rest.size() == 3) {
    t.subresource = rest[2];
    if (t.subresource != "status" || !t.type->status_subresource) {
      t.type = nullptr;
      t.error = "the server could not find the requested resource";
    }
  }
  return t;
}

std::string VerbOf(const std::string& method, const Target& t, bool watch) {
  if (method == "GET") return watch ? "watch" : (t.name.empty() ? "list" : "get");
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return "";
}

bool Allowed(const KubeUser& user, const std::string& verb, const std::string& group,
             const std::string& resource, const std::string& ns) {
  for (const KubeRbacRule& r : user.rules) {
    const bool verb_ok = r.verbs.contains("*") || r.verbs.contains(verb);
    const bool group_ok = r.groups.contains("*") || r.groups.contains(group);
    const bool resource_ok = r.resources.contains("*") || r.resources.contains(resource);
    const bool ns_ok = r.namespaces.empty() || r.namespaces.contains(ns);
    if (verb_ok && group_ok && resource_ok && ns_ok) return true;
  }
  return false;
}

Reply Forbidden(const KubeUser& user, const std::string& verb, const Target& t) {
  const std::string resource =
      t.subresource.empty() ? t.type->resource : t.type->resource + "/" + t.subresource;
  std::string msg = t.type->qualified() + (t.name.empty() ? "" : " \"" + t.name + "\"") +
                    " is forbidden: User \"" + user.name + "\" cannot " + verb + " resource \"" +
                    resource + "\" in API group \"" + t.type->group + "\"" +
                    (t.type->namespaced && !t.ns.empty() ? " in the namespace \"" + t.ns + "\""
                                                         : " at the cluster scope");
  json details = {{"kind", t.type->resource}};
  if (!t.name.empty()) details["name"] = t.name;
  if (!t.type->group.empty()) details["group"] = t.type->group;
  return Fail(403, "Forbidden", msg, details);
}

Reply NotFound(const Target& t) {
  json details = {{"name", t.name}, {"kind", t.type->resource}};
  if (!t.type->group.empty()) details["group"] = t.type->group;
  return Fail(404, "NotFound", t.type->qualified() + " \"" + t.name + "\" not found", details);
}

Reply Invalid(const Target& t, const std::string& name, const std::vector<std::string>& errors) {
  json causes = json::array();
  std::string joined;
  for (const std::string& e : errors) {
    const size_t colon = e.find(": ");
    causes.push_back({{"reason", "FieldValueInvalid"},
                      {"message", e.substr(colon == std::string::npos ? 0 : colon + 2)},
                      {"field", e.substr(0, colon)}});
    joined += (joined.empty() ? "" : ", ") + e;
  }
  json details = {{"name", name}, {"kind", t.type->kind}, {"causes", causes}};
  if (!t.type->group.empty()) details["group"] = t.type->group;
  return Fail(422, "Invalid",
              t.type->kind + (t.type->group.empty() ? "" : "." + t.type->group) + " \"" + name +
                  "\" is invalid: " + joined,
              details);
}

Reply Conflict(const Target& t, const std::string& name) {
  json details = {{"name", name}, {"kind", t.type->resource}};
  if (!t.type->group.empty()) details["group"] = t.type->group;
  return Fail(409, "Conflict",
              "Operation cannot be fulfilled on " + t.type->qualified() + " \"" + name +
                  "\": the object has been modified; please apply your changes to the latest "
                  "version and try again",
              details);
}

json TableOf(const ResourceType& type, const std::vector<const json*>& objects, uint64_t rv) {
  json columns = json::array();
  columns.push_back({{"name", "Name"},
                     {"type", "string"},
                     {"format", "name"},
                     {"description", "Name must be unique within a namespace."},
                     {"priority", 0}});
  json printer = type.printer_columns;
  if (printer.empty())
    printer = json::array(
        {{{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}}});
  for (const json& c : printer)
    columns.push_back({{"name", c["name"]},
                       {"type", c["type"] == "date" ? "date" : c["type"]},
                       {"format", c.value("format", "")},
                       {"description", c.value("description", "")},
                       {"priority", c.value("priority", 0)}});
  json rows = json::array();
  const int64_t now = std::time(nullptr);
  for (const json* object : objects) {
    const json& o = *object;
    json cells = json::array({o["metadata"]["name"]});
    for (const json& c : printer) {
      const json* v = AtPath(o, c["jsonPath"].get<std::string>());
      if (v == nullptr || v->is_null()) {
        cells.push_back(nullptr);
      } else if (c["type"] == "date") {
        cells.push_back(HumanDuration(now - ParseRfc3339(v->get<std::string>())));
      } else if (c["type"] == "string" && !v->is_string()) {
        cells.push_back(v->dump());
      } else {
        cells.push_back(*v);
      }
    }
    json meta = o["metadata"];
    rows.push_back({{"cells", cells},
                    {"object",
                     {{"kind", "PartialObjectMetadata"},
                      {"apiVersion", "meta.k8s.io/v1"},
                      {"metadata", meta}}}});
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", std::to_string(rv)}}},
          {"columnDefinitions", columns},
          {"rows", rows}};
}

// A write's result before it is stored: checks identity, keeps what the verb may not change,
// validates, bumps generation on a spec change.
Reply Finish(Store& s, const Target& t, const json& old, json updated, bool dry_run) {
  const std::string name = old["metadata"]["name"];
  if (updated["metadata"].value("name", "") != name ||
      (t.type->namespaced && updated["metadata"].value("namespace", "") != t.ns) ||
      updated["metadata"].value("uid", "") != old["metadata"].value("uid", ""))
    return Invalid(t, name, {"metadata: Invalid value: name, namespace and uid are immutable"});
  for (const char* keep : {"creationTimestamp", "generation"})
    if (old["metadata"].contains(keep)) updated["metadata"][keep] = old["metadata"][keep];
  if (t.type->status_subresource) {
    json kept = t.subresource == "status" ? old : updated;
    if (t.subresource == "status") {
      if (updated.contains("status"))
        kept["status"] = updated["status"];
      else
        kept.erase("status");
      kept["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
    } else if (old.contains("status")) {
      kept["status"] = old["status"];
    } else {
      kept.erase("status");
    }
    updated = std::move(kept);
  }
  updated["kind"] = t.type->kind;
  updated["apiVersion"] = t.type->api_version();
  auto errors = ValidateAgainstSchema(t.type->schema, updated);
  if (!errors.empty()) return Invalid(t, name, errors);
  if (old.contains("spec") && updated.value("spec", json()) != old["spec"])
    updated["metadata"]["generation"] = old["metadata"].value("generation", 1) + 1;
  json compare = updated;
  compare["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  if (compare == old || dry_run) return {200, compare == old ? old : updated, ""};
  return {200, s.Commit(*t.type, std::move(updated), "MODIFIED"), ""};
}

Reply Write(Store& s, const std::string& method, const Target& t, const std::string& query,
            const std::string& content_type, const std::string& body) {
  const std::string dry = QueryParam(query, "dryRun");
  if (!dry.empty() && dry != "All")
    return Fail(400, "BadRequest", "unsupported dry run option: " + dry);
  const bool dry_run = dry == "All";
  if (!t.name.empty() && s.interpose[t.type->resource] > 0 && method != "POST") {
    // Another writer changes the object first.
    auto it = s.objects.find(Store::Key(t.type->resource, t.ns, t.name));
    if (it != s.objects.end()) {
      --s.interpose[t.type->resource];
      json o = it->second;
      o["metadata"]["labels"]["interposed-writer"] = std::to_string(s.rv);
      s.Commit(*t.type, std::move(o), "MODIFIED");
    }
  }
  json parsed;
  if (method != "DELETE") {
    if (content_type.starts_with("application/apply-patch+yaml")) {
      try {
        parsed = YamlToJson(body);
      } catch (const std::exception& e) {
        return Fail(400, "BadRequest", std::string("error decoding YAML: ") + e.what());
      }
    } else {
      parsed = json::parse(body, nullptr, false);
      if (parsed.is_discarded())
        return Fail(400, "BadRequest", "the body of the request is not valid JSON");
    }
  }
  if (method == "POST") {
    if (!t.name.empty()) return Fail(405, "MethodNotAllowed", "POST to a named object");
    if (!parsed.is_object() || !parsed.contains("metadata"))
      return Fail(400, "BadRequest", "the object has no metadata");
    if (parsed.value("kind", t.type->kind) != t.type->kind)
      return Fail(400, "BadRequest",
                  "the kind " + parsed.value("kind", "") + " does not match " + t.type->kind);
    std::string name = parsed["metadata"].value("name", "");
    if (name.empty() && parsed["metadata"].contains("generateName"))
      name = parsed["metadata"]["generateName"].get<std::string>() + std::to_string(s.rv + 1);
    if (name.empty())
      return Invalid(t, "", {"metadata.name: Required value: name or generateName is required"});
    parsed["metadata"]["name"] = name;
    if (t.type->namespaced && parsed["metadata"].value("namespace", t.ns) != t.ns)
      return Fail(400, "BadRequest",
                  "the namespace of the provided object does not match the namespace sent on "
                  "the request");
    Target named = t;
    named.name = name;
    if (s.objects.contains(Store::Key(t.type->resource, t.ns, name))) {
      json details = {{"name", name}, {"kind", t.type->resource}};
      if (!t.type->group.empty()) details["group"] = t.type->group;
      return Fail(409, "AlreadyExists", t.type->qualified() + " \"" + name + "\" already exists",
                  details);
    }
    if (t.type->status_subresource) parsed.erase("status");
    parsed["kind"] = t.type->kind;
    parsed["apiVersion"] = t.type->api_version();
    parsed["metadata"].erase("resourceVersion");
    auto errors = ValidateAgainstSchema(t.type->schema, parsed);
    if (!errors.empty()) return Invalid(named, name, errors);
    json fresh = s.Fresh(*t.type, std::move(parsed), t.ns);
    if (dry_run) return {201, fresh, ""};
    return {201, s.Commit(*t.type, std::move(fresh), "ADDED"), ""};
  }
  if (t.name.empty()) return Fail(405, "MethodNotAllowed", method + " needs a named object");
  auto it = s.objects.find(Store::Key(t.type->resource, t.ns, t.name));
  if (it == s.objects.end()) return NotFound(t);
  const json old = it->second;
  const std::string current_rv = old["metadata"]["resourceVersion"];
  if (method == "DELETE") {
    if (dry_run) return {200, old, ""};
    s.Commit(*t.type, old, "DELETED");
    return {200, StatusBody(200, "", ""), ""};
  }
  if (method == "PUT") {
    if (!parsed.is_object() || !parsed.contains("metadata"))
      return Fail(400, "BadRequest", "the object has no metadata");
    const std::string rv = parsed["metadata"].value("resourceVersion", "");
    if (rv.empty())
      return Invalid(t, t.name,
                     {"metadata.resourceVersion: Invalid value: 0x0: must be specified for an "
                      "update"});
    if (rv != current_rv) return Conflict(t, t.name);
    return Finish(s, t, old, std::move(parsed), dry_run);
  }
  // PATCH
  json updated = old;
  const std::string ct = content_type.substr(0, content_type.find(';'));
  if (ct == "application/merge-patch+json" || ct == "application/strategic-merge-patch+json" ||
      ct == "application/apply-patch+yaml") {
    if (ct == "application/strategic-merge-patch+json" && t.type->custom)
      return Fail(415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - accepted media types "
                  "include: application/json-patch+json, application/merge-patch+json, "
                  "application/apply-patch+yaml");
    if (ct == "application/apply-patch+yaml" && QueryParam(query, "fieldManager").empty())
      return Fail(400, "BadRequest", "PATCH requests for server-side apply require a fieldManager");
    if (!parsed.is_object()) return Fail(400, "BadRequest", "the patch is not a JSON object");
    const json* rv = AtPath(parsed, ".metadata.resourceVersion");
    if (rv != nullptr && rv->is_string() && *rv != current_rv) return Conflict(t, t.name);
    if (ct == "application/strategic-merge-patch+json")
      StrategicMerge(updated, parsed);
    else
      updated.merge_patch(parsed);
    if (ct == "application/apply-patch+yaml") {
      // The manager that applied is recorded (ownership conflicts are not modelled).
      json& managers = updated["metadata"]["managedFields"];
      if (!managers.is_array()) managers = json::array();
      managers.push_back({{"manager", QueryParam(query, "fieldManager")},
                          {"operation", "Apply"},
                          {"time", NowRfc3339()}});
    }
  } else if (ct == "application/json-patch+json") {
    try {
      updated = old.patch(parsed);
    } catch (const std::exception& e) {
      return Fail(422, "Invalid", std::string("the JSON patch does not apply: ") + e.what());
    }
  } else {
    return Fail(415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml" +
                    std::string(t.type->custom ? "" : ", application/strategic-merge-patch+json"));
  }
  updated["metadata"]["resourceVersion"] = current_rv;
  return Finish(s, t, old, std::move(updated), dry_run);
}

// A page of a list (`limit`, `continue`). The continue token is opaque to clients: the
// resourceVersion of the list's first page and the last key served, hex-encoded. Later pages
// are served from the current objects (a real server serves them from its snapshot at that
// resourceVersion; an informer converges either way, as its watch replays what changed since);
// a token from before a compaction is 410 Expired, as a real server answers once etcd compacted
// past it.
struct ListPage {
  size_t limit = 0;  // 0: everything
  std::string after;
  uint64_t rv = 0;
};

std::string ContinueToken(uint64_t rv, const std::string& after) {
  const std::string plain = std::to_string(rv) + "/" + after;
  std::string out;
  for (unsigned char c : plain) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", c);
    out += hex;
  }
  return out;
}

struct ListPageOrError {
  std::optional<ListPage> page;
  Reply error;
  explicit operator bool() const { return page.has_value(); }
  const ListPage* operator->() const { return &*page; }
};

ListPageOrError ParseListPage(const Store& s, const std::string& query) {
  ListPage p;
  p.rv = s.rv;
  const std::string limit = QueryParam(query, "limit");
  if (!limit.empty()) {
    long long n = -1;
    auto [end, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), n);
    if (ec != std::errc() || end != limit.data() + limit.size() || n < 0)
      return {std::nullopt, Fail(400, "BadRequest", "limit: invalid value \"" + limit + "\"")};
    p.limit = static_cast<size_t>(n);
  }
  const std::string token = QueryParam(query, "continue");
  if (token.empty()) return {p, {}};
  auto invalid = [&] {
    return ListPageOrError{std::nullopt,
                           Fail(400, "BadRequest", "continue key is not valid: \"" + token + "\"")};
  };
  std::string plain;
  for (size_t i = 0; i + 1 < token.size(); i += 2) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(token.data() + i, token.data() + i + 2, v, 16);
    if (ec != std::errc() || end != token.data() + i + 2) return invalid();
    plain += static_cast<char>(v);
  }
  const size_t slash = plain.find('/');
  if (token.size() % 2 != 0 || slash == std::string::npos || slash == 0) return invalid();
  uint64_t rv = 0;
  auto [end, ec] = std::from_chars(plain.data(), plain.data() + slash, rv);
  if (ec != std::errc() || end != plain.data() + slash || rv > s.rv) return invalid();
  if (rv < s.compacted_through)
    return {std::nullopt,
            Fail(410, "Expired",
                 "The provided continue parameter is too old to display a consistent list "
                 "result. You can start a new list without the continue parameter.")};
  p.rv = rv;
  p.after = plain.substr(slash + 1);
  return {p, {}};
}

Reply Route(Store& s, const std::string& method, const std::string& path, const std::string& query,
            const std::string& content_type, const std::string& accept, const std::string& token,
            const std::string& body) {
  std::lock_guard<std::mutex> lock(s.mu);
  KubeRequestRecord record{method, path, query, content_type, "", 0};
  auto done = [&](Reply r) {
    record.status = r.status;
    s.requests.push_back(record);
    return r;
  };
  auto u = s.users.find(token);
  if (u == s.users.end()) return done(Fail(401, "Unauthorized", "Unauthorized"));
  record.user = u->second.name;
  if (s.throttle > 0) {
    --s.throttle;
    Reply r = Fail(429, "TooManyRequests", "Too many requests, please try again later.",
                   {{"retryAfterSeconds", 1}});
    r.retry_after = "1";
    return done(r);
  }
  const Target t = Resolve(s, path);
  if (!t.error.empty()) return done(Fail(404, "NotFound", t.error));
  if (t.discovery) {
    if (method != "GET") return done(Fail(405, "MethodNotAllowed", "discovery is read-only"));
    return done({200, t.discovery_body, ""});
  }
  const std::string verb = VerbOf(method, t, false);
  if (verb.empty()) return done(Fail(405, "MethodNotAllowed", method + " is not allowed"));
  const std::string resource =
      t.subresource.empty() ? t.type->resource : t.type->resource + "/" + t.subresource;
  if (!Allowed(u->second, verb, t.type->group, resource, t.ns))
    return done(Forbidden(u->second, verb, t));
  for (auto it = s.staged.begin(); it != s.staged.end();) {
    if (it->resource != t.type->resource || it->requests-- > 0) {
      ++it;
      continue;
    }
    if (auto target = s.objects.find(it->target); target != s.objects.end()) {
      json o = target->second;
      for (auto l = it->labels.begin(); l != it->labels.end(); ++l)
        o["metadata"]["labels"][l.key()] = l.value();
      const std::string resource = it->target.substr(0, it->target.find('/'));
      s.Commit(*s.TypeOfResource(resource), std::move(o), "MODIFIED");
    }
    it = s.staged.erase(it);
  }
  if (s.compact_after >= 0 && s.compact_after-- == 0) s.Compact();
  if (method != "GET") return done(Write(s, method, t, query, content_type, body));
  const bool table = accept.find("as=Table") != std::string::npos;
  if (!t.name.empty()) {
    auto it = s.objects.find(Store::Key(t.type->resource, t.ns, t.name));
    if (it == s.objects.end()) return done(NotFound(t));
    if (table) return done({200, TableOf(*t.type, {&it->second}, s.rv), ""});
    return done({200, nullptr, "", it->second.dump()});
  }
  const std::string labels = QueryParam(query, "labelSelector");
  const std::string fields = QueryParam(query, "fieldSelector");
  const ListPageOrError page = ParseListPage(s, query);
  if (!page) return done(page.error);
  std::vector<const json*> items;
  // Keys are resource/namespace/name: a namespace's objects are one range of the map.
  const std::string prefix =
      t.type->resource + "/" + (t.type->namespaced && !t.ns.empty() ? t.ns + "/" : "");
  std::string last, next;  // the last key served; the key after which the next page starts
  auto it =
      page->after.empty() ? s.objects.lower_bound(prefix) : s.objects.upper_bound(page->after);
  for (; it != s.objects.end(); ++it) {
    const auto& [key, obj] = *it;
    if (!key.starts_with(prefix)) {
      if (key > prefix) break;
      continue;
    }
    if (!SelectorMatches(labels, obj, true) || !SelectorMatches(fields, obj, false)) continue;
    if (page->limit > 0 && items.size() == page->limit) {
      next = last;
      break;
    }
    items.push_back(&obj);
    last = key;
  }
  json metadata = {{"resourceVersion", std::to_string(page->rv)}};
  if (!next.empty()) metadata["continue"] = ContinueToken(page->rv, next);
  if (table) {
    json out = TableOf(*t.type, items, page->rv);
    out["metadata"] = metadata;
    return done({200, out, ""});
  }
  // Written out directly, each object dumped in place (a copy of every item into a list
  // object, then of that list, was most of a large list's cost), keys in nlohmann's order.
  std::string text = R"({"apiVersion":)" + json(t.type->api_version()).dump() + R"(,"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += ',';
    text += items[i]->dump();
  }
  text += R"(],"kind":)" + json(t.type->kind + "List").dump() + R"(,"metadata":)" +
          metadata.dump() + "}";
  return done({200, nullptr, "", std::move(text)});
}

void ServeWatchStream(Store& s, const std::atomic<bool>& stopping,
                      asio::ssl::stream<asio::ip::tcp::socket>& stream, const std::string& path,
                      const std::string& query, const std::string& token,
                      boost::system::error_code& ec) {
  std::unique_lock<std::mutex> lock(s.mu);
  const KubeUser& user = s.users.at(token);
  KubeRequestRecord record{"GET", path, query, "", user.name, 200};
  const Target t = Resolve(s, path);
  Reply refused;
  if (!t.error.empty() || t.discovery || !t.name.empty()) {
    refused = Fail(404, "NotFound", "the server could not find the requested resource");
  } else if (!Allowed(user, "watch", t.type->group, t.type->resource, t.ns)) {
    refused = Forbidden(user, "watch", t);
  }
  if (refused.status != 200) {
    record.status = refused.status;
    s.requests.push_back(record);
    lock.unlock();
    http::response<http::string_body> res{static_cast<http::status>(refused.status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = refused.body.dump();
    res.prepare_payload();
    http::write(stream, res, ec);
    return;
  }
  s.requests.push_back(record);
  const std::string labels = QueryParam(query, "labelSelector");
  const std::string fields = QueryParam(query, "fieldSelector");
  const bool bookmarks = IsTrue(QueryParam(query, "allowWatchBookmarks"));
  const std::string timeout_text = QueryParam(query, "timeoutSeconds");
  // As the apiserver: no timeoutSeconds, or 0, is the server's default window (there 30 to 60
  // minutes, here 30 s); the double caps a window at 60 s.
  const int asked = timeout_text.empty() ? 0 : std::stoi(timeout_text);
  const int timeout_s = asked <= 0 ? 30 : std::min(60, asked);
  const std::string rv_text = QueryParam(query, "resourceVersion");
  uint64_t from = rv_text.empty() || rv_text == "0" ? 0 : std::stoull(rv_text);

  std::vector<std::string> pending;
  auto event_line = [](const std::string& type, const json& object) {
    return json{{"type", type}, {"object", object}}.dump() + "\n";
  };
  auto matches = [&](const std::string& resource, const std::string& ns, const json& obj) {
    return resource == t.type->resource && (t.ns.empty() || ns == t.ns) &&
           SelectorMatches(labels, obj, true) && SelectorMatches(fields, obj, false);
  };
  bool expired = false;
  if (from == 0) {
    // No resourceVersion: the current state as ADDED events, then changes.
    for (const auto& [key, obj] : s.objects)
      if (key.starts_with(t.type->resource + "/") &&
          matches(t.type->resource, obj["metadata"].value("namespace", ""), obj))
        pending.push_back(event_line("ADDED", obj));
    from = s.rv;
  } else if (from < s.compacted_through) {
    pending.push_back(
        event_line("ERROR", StatusBody(410, "Expired",
                                       "too old resource version: " + rv_text + " (" +
                                           std::to_string(s.compacted_through) + ")")));
    expired = true;
  }
  lock.unlock();
  auto write_chunk = [&](const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    asio::write(stream, asio::buffer(std::string(size) + data + "\r\n"), ec);
  };
  asio::write(stream,
              asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                       "Transfer-Encoding: chunked\r\n\r\n")),
              ec);
  for (const std::string& line : pending)
    if (!ec) write_chunk(line);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto next_bookmark = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!ec && !expired && !stopping) {
    pending.clear();
    lock.lock();
    s.changed.wait_until(lock, std::min(end, next_bookmark), [&] {
      return stopping || (!s.history.empty() && s.history.back().rv > from);
    });
    // The history is in resourceVersion order: start after `from`, not at the beginning.
    const auto first =
        std::upper_bound(s.history.begin(), s.history.end(), from,
                         [](uint64_t rv, const Store::Event& e) { return rv < e.rv; });
    for (auto e = first; e != s.history.end(); ++e)
      if (matches(e->resource, e->ns, e->object)) pending.push_back(event_line(e->type, e->object));
    if (!s.history.empty()) from = std::max(from, s.history.back().rv);
    const auto now = std::chrono::steady_clock::now();
    const bool finished = now >= end;
    if (bookmarks && (now >= next_bookmark || finished)) {
      pending.push_back(
          event_line("BOOKMARK", {{"kind", t.type->kind},
                                  {"apiVersion", t.type->api_version()},
                                  {"metadata", {{"resourceVersion", std::to_string(s.rv)}}}}));
      from = std::max(from, s.rv);
      next_bookmark = now + std::chrono::seconds(1);
    }
    lock.unlock();
    for (const std::string& line : pending)
      if (!ec) write_chunk(line);
    if (finished) break;
  }
  if (!ec) asio::write(stream, asio::buffer(std::string("0\r\n\r\n")), ec);
  ec = boost::asio::error::eof;  // a watch ends its connection
}

}  // namespace
}  // namespace gpuvpa::testing
