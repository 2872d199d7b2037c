// The Kubernetes test cluster: the API double with certificates and kubeconfigs.
#include "test/support/kube_test_cluster.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test/support/process.h"
#include "test/support/test_certs.h"

namespace gpuvpa::testing {

using json = nlohmann::json;

KubeTestCluster::KubeTestCluster() {
  std::string error;
  if (!MakeTestCertificates(dir_.dir().string(), &error)) {
    ADD_FAILURE() << error;
    std::abort();
  }
  api_ = std::make_unique<KubeApiDouble>(dir_.dir().string(), CrdPath());
  api_->AddAdmin(kAdminToken);
}

std::string KubeTestCluster::CrdPath() const {
  return std::string(GPUVPA_SOURCE_DIR) +
         "/deploy/kubernetes/base/crd-gpuverticalpodautoscaler.yaml";
}

std::string KubeTestCluster::Kubeconfig(const std::string& token, const std::string& file_name) {
  const std::string path = dir_.Path(file_name);
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: double\n  cluster:\n"
                         "    server: "
                      << api_->url() << "\n    certificate-authority: " << dir_.Path("ca.pem")
                      << "\nusers:\n- name: u\n  user:\n    token: " << token
                      << "\ncontexts:\n- name: c\n  context: {cluster: double, user: u, "
                         "namespace: default}\ncurrent-context: c\n";
  return path;
}

namespace {

// The rules bound to `service_account` of `ns` among `docs`: ClusterRoles through
// ClusterRoleBindings, Roles through RoleBindings (namespaced to `ns`).
KubeUser BoundUser(const std::vector<YAML::Node>& docs, const std::string& ns,
                   const std::string& service_account) {
  auto bound = [&](const std::string& binding_kind, const std::string& role_kind,
                   const std::string& role) {
    for (const YAML::Node& b : docs) {
      if (b["kind"].as<std::string>() != binding_kind ||
          b["roleRef"]["kind"].as<std::string>() != role_kind ||
          b["roleRef"]["name"].as<std::string>() != role)
        continue;
      for (const YAML::Node& s : b["subjects"])
        if (s["kind"].as<std::string>() == "ServiceAccount" &&
            s["name"].as<std::string>() == service_account &&
            s["namespace"].as<std::string>() == ns)
          return true;
    }
    return false;
  };
  KubeUser user{"system:serviceaccount:" + ns + ":" + service_account, {}};
  for (const YAML::Node& doc : docs) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind != "ClusterRole" && kind != "Role") continue;
    const std::string name = doc["metadata"]["name"].as<std::string>();
    if (!bound(kind == "Role" ? "RoleBinding" : "ClusterRoleBinding", kind, name)) continue;
    for (const YAML::Node& r : doc["rules"]) {
      KubeRbacRule rule;
      for (const YAML::Node& v : r["verbs"]) rule.verbs.insert(v.as<std::string>());
      for (const YAML::Node& g : r["apiGroups"]) rule.groups.insert(g.as<std::string>());
      for (const YAML::Node& x : r["resources"]) rule.resources.insert(x.as<std::string>());
      if (kind == "Role") rule.namespaces.insert(ns);
      user.rules.push_back(std::move(rule));
    }
  }
  return user;
}

}  // namespace

KubeUser KubeTestCluster::UserFromManifests(const std::string& service_account,
                                            const std::string& dir) {
  const std::filesystem::path base =
      std::filesystem::path(GPUVPA_SOURCE_DIR) / "deploy" / "kubernetes" / dir;
  const std::string ns =
      YAML::LoadFile((base / "kustomization.yaml").string())["namespace"].as<std::string>();
  std::vector<YAML::Node> docs;
  for (const auto& entry : std::filesystem::directory_iterator(base))
    if (entry.path().extension() == ".yaml")
      for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string()))
        if (doc.IsMap() && doc["kind"]) docs.push_back(doc);
  return BoundUser(docs, ns, service_account);
}

KubeUser KubeTestCluster::UserFromRendered(const std::string& rendered_yaml,
                                           const std::string& service_account) {
  std::vector<YAML::Node> docs;
  std::string ns;
  for (const YAML::Node& doc : YAML::LoadAll(rendered_yaml)) {
    if (!doc.IsMap() || !doc["kind"]) continue;
    docs.push_back(doc);
    if (doc["kind"].as<std::string>() == "ServiceAccount" &&
        doc["metadata"]["name"].as<std::string>() == service_account)
      ns = doc["metadata"]["namespace"].as<std::string>();
  }
  return BoundUser(docs, ns, service_account);
}

std::string KubeTestCluster::KubectlPath() {
  if (const char* env = std::getenv("GPUVPA_KUBECTL"); env != nullptr && *env != '\0') return env;
  return std::string(GPUVPA_SOURCE_DIR) + "/build-tools/kubernetes-client/usr/bin/kubectl";
}

std::string KubeTestCluster::RenderingKubectlPath() {
  if (const char* env = std::getenv("GPUVPA_KUBECTL_RENDER"); env != nullptr && *env != '\0')
    return env;
  return "kubectl";
}

std::string KubeTestCluster::Kustomize(const std::string& dir, int* rc, std::string* warnings) {
  ScopedTempDir tmp;
  const std::string err = tmp.Path("stderr");
  std::string out =
      RunShell("{ '" + RenderingKubectlPath() + "' kustomize '" + dir + "' 2>'" + err + "'; }", rc);
  *warnings = ReadTextFile(err);
  return out;
}

std::string KubeTestCluster::Kubectl(const std::string& args, int* rc, const std::string& token) {
  const std::string kubeconfig = Kubeconfig(token, "kubectl-" + token + ".yaml");
  const std::string cmd = "HOME='" + dir_.Path("home") + "' '" + KubectlPath() +
                          "' --kubeconfig '" + kubeconfig + "' --cache-dir '" +
                          dir_.Path("kubectl-cache") + "' --request-timeout 20s " + args;
  return RunShell(cmd, rc);
}

json KubeTestCluster::Namespace(const std::string& name, const json& labels) {
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  if (!labels.is_null() && !labels.empty()) ns["metadata"]["labels"] = labels;
  return ns;
}

json KubeTestCluster::Workload(const std::string& kind, const std::string& ns,
                               const std::string& name, const std::string& container,
                               const std::string& resource, const std::string& quantity) {
  json w = {{"apiVersion", "apps/v1"},
            {"kind", kind},
            {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", name}}}}},
            {"spec",
             {{"replicas", 1},
              {"selector", {{"matchLabels", {{"app", name}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", name}}}}},
                {"spec",
                 {{"containers",
                   {{{"name", container},
                     {"image", "registry.example/" + name + ":1"},
                     {"resources",
                      {{"limits", {{resource, quantity}}},
                       {"requests", {{resource, quantity}}}}}}}}}}}}}}};
  if (kind == "StatefulSet") w["spec"]["serviceName"] = name;
  return w;
}

json KubeTestCluster::Gvpa(const std::string& ns, const std::string& name,
                           const std::string& target_kind, const std::string& target_name,
                           const std::string& mode) {
  return {
      {"apiVersion", "gpuvpa.io/v1alpha1"},
      {"kind", "GpuVerticalPodAutoscaler"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", target_kind}, {"name", target_name}}},
        {"updatePolicy", {{"updateMode", mode}}}}}};
}

json KubeTestCluster::Pod(const std::string& ns, const std::string& name,
                          const std::string& workload, const std::string& container) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", workload}}}}},
          {"spec", {{"containers", {{{"name", container}, {"image", "x"}}}}}},
          {"status",
           {{"phase", "Running"},
            {"containerStatuses",
             {{{"name", container},
               {"ready", true},
               {"restartCount", 0},
               {"state", {{"running", {{"startedAt", "2026-12-03T00:00:00Z"}}}}}}}}}}};
}

}  // namespace gpuvpa::testing
