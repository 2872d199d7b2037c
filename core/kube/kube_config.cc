// Kubernetes connection settings from the pod's service account or a kubeconfig file.
#include "core/kube/kube_config.h"

#include <absl/strings/escaping.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>

#include "core/base/atomic_file.h"

namespace gpuvpa {
namespace {

Status ConfigError(const std::string& path, const std::string& what) {
  return InvalidArgumentError("kubeconfig " + path + ": " + what);
}

// The entry of `list` (clusters, users, contexts) named `name`.
YAML::Node Named(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& entry : list)
    if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
        entry["name"].Scalar() == name)
      return entry;
  return YAML::Node();
}

std::string ScalarOr(const YAML::Node& map, const char* key, const std::string& fallback = "") {
  const YAML::Node n = map[key];
  return n && n.IsScalar() ? n.Scalar() : fallback;
}

// A path in a kubeconfig is relative to the file's folder.
std::string Relative(const std::string& kubeconfig, const std::string& file) {
  if (file.empty() || file.starts_with('/')) return file;
  return (std::filesystem::path(kubeconfig).parent_path() / file).string();
}

// `<key>-data` (base64) into `pem`, or `<key>` (a file) into `file`.
Status ReadMaterial(const std::string& path, const YAML::Node& map, const std::string& key,
                    const std::string& where, std::string& file, std::string& pem) {
  const std::string data = ScalarOr(map, (key + "-data").c_str());
  const std::string name = ScalarOr(map, key.c_str());
  if (!data.empty() && !name.empty())
    return ConfigError(path, where + " gives both " + key + " and " + key + "-data");
  if (!data.empty() && !absl::Base64Unescape(data, &pem))
    return ConfigError(path, where + "." + key + "-data is not base64");
  file = Relative(path, name);
  return OkStatus();
}

}  // namespace

Result<KubeConnection> InClusterConnection(const InClusterFiles& files) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0')
    return FailedPreconditionError(
        "not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
        "(give --kubeconfig)");
  const std::string h = host;
  KubeConnection c;
  c.http.base_url =
      "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::string(port);
  c.http.ca_file = files.ca;
  c.http.bearer_token_file = files.token;
  Result<std::string> ns = ReadWholeFile(files.namespace_file);
  c.default_namespace = ns.ok() ? std::string(*ns) : "default";
  while (!c.default_namespace.empty() &&
         std::isspace(static_cast<unsigned char>(c.default_namespace.back())))
    c.default_namespace.pop_back();
  c.source = "in-cluster";
  return c;
}

Result<KubeConnection> KubeconfigConnection(const std::string& path, const std::string& context) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return NotFoundError("kubeconfig " + path + " cannot be read");
  return ParseKubeconfig(*text, path, context);
}

Result<KubeConnection> ParseKubeconfig(const std::string& text, const std::string& path,
                                       const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ConfigError(path, "not YAML: " + std::string(e.what()));
  }
  if (!root.IsMap()) return ConfigError(path, "not a kubeconfig (no mapping at the top)");
  const std::string context_name = context.empty() ? ScalarOr(root, "current-context") : context;
  if (context_name.empty()) return ConfigError(path, "no current-context and none given");
  const YAML::Node ctx = Named(root["contexts"], context_name)["context"];
  if (!ctx || !ctx.IsMap()) return ConfigError(path, "context \"" + context_name + "\" not found");
  const std::string cluster_name = ScalarOr(ctx, "cluster");
  const std::string user_name = ScalarOr(ctx, "user");
  const YAML::Node cluster = Named(root["clusters"], cluster_name)["cluster"];
  if (!cluster || !cluster.IsMap())
    return ConfigError(
        path, "cluster \"" + cluster_name + "\" of context \"" + context_name + "\" not found");
  KubeConnection c;
  c.http.base_url = ScalarOr(cluster, "server");
  if (c.http.base_url.empty())
    return ConfigError(path, "cluster \"" + cluster_name + "\" has no server");
  if (Status s = ReadMaterial(path, cluster, "certificate-authority",
                              "cluster \"" + cluster_name + "\"", c.http.ca_file, c.http.ca_pem);
      !s.ok())
    return s;
  c.http.verify_peer = ScalarOr(cluster, "insecure-skip-tls-verify") != "true";
  if (!user_name.empty()) {
    const YAML::Node user = Named(root["users"], user_name)["user"];
    if (!user) return ConfigError(path, "user \"" + user_name + "\" not found");
    if (user.IsMap()) {
      if (user["exec"] || user["auth-provider"])
        return ConfigError(path, "user \"" + user_name +
                                     "\" authenticates through an exec or auth-provider plugin, "
                                     "which gpuvpa does not run; use a token or a client "
                                     "certificate");
      const std::string where = "user \"" + user_name + "\"";
      c.http.bearer_token = ScalarOr(user, "token");
      c.http.bearer_token_file = Relative(path, ScalarOr(user, "tokenFile"));
      if (Status s = ReadMaterial(path, user, "client-certificate", where, c.http.client_cert_file,
                                  c.http.client_cert_pem);
          !s.ok())
        return s;
      if (Status s = ReadMaterial(path, user, "client-key", where, c.http.client_key_file,
                                  c.http.client_key_pem);
          !s.ok())
        return s;
      const std::string basic_user = ScalarOr(user, "username");
      if (!basic_user.empty())
        return ConfigError(path, where + " uses basic auth, which Kubernetes removed in 1.19");
    }
  }
  c.default_namespace = ScalarOr(ctx, "namespace", "default");
  c.source = "kubeconfig " + path + " (context " + context_name + ")";
  return c;
}

Result<KubeConnection> ResolveKubeConnection(const std::string& kubeconfig_path,
                                             const std::string& context) {
  if (!kubeconfig_path.empty()) return KubeconfigConnection(kubeconfig_path, context);
  Result<KubeConnection> in_cluster = InClusterConnection();
  if (in_cluster.ok()) return in_cluster;
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return KubeconfigConnection(first, context);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return KubeconfigConnection(std::string(home) + "/.kube/config", context);
  return in_cluster.status();
}

}  // namespace gpuvpa
