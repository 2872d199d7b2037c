// Everything a Kubernetes test needs around the API double: a temporary folder, test
// certificates, the double (with the shipped CRD), an admin token, kubeconfig files per token,
// and builders for the objects the tests seed.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "test/support/kube_api_double.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::testing {

inline constexpr const char* kAdminToken = "admin-token";

class KubeTestCluster {
 public:
  KubeTestCluster();  // aborts the test (GTEST fatal) if the certificates cannot be made
  KubeApiDouble& api() { return *api_; }
  const ScopedTempDir& dir() const { return dir_; }
  std::string CrdPath() const;
  // Writes a kubeconfig for `token` (CA file, token inline) and returns its path.
  std::string Kubeconfig(const std::string& token, const std::string& file_name = "kubeconfig");

  // Debian's kubectl 1.20 (deploy/setup-deps.sh --with-browser extracts it into build-tools/;
  // GPUVPA_KUBECTL overrides), its path.
  static std::string KubectlPath();
  // The kustomize renderer: a kubectl of 1.21 or later (GPUVPA_KUBECTL_RENDER, else `kubectl` on
  // PATH; this machine kind ships 1.32). Debian's 1.20 embeds kustomize 2.0, which cannot take a
  // directory under `resources:`, while 1.32 warns on the `bases:` that 2.0 needs; the shipped
  // kustomizations are written for current kubectl.
  static std::string RenderingKubectlPath();
  // `kubectl kustomize DIR`: the rendered YAML; stderr (warnings) in `warnings`, exit in `rc`.
  static std::string Kustomize(const std::string& dir, int* rc, std::string* warnings);
  // Runs kubectl against the double as `token`; stdout + stderr, exit status in `rc`.
  std::string Kubectl(const std::string& args, int* rc, const std::string& token = kAdminToken);

  // The API user of a gpuvpa service account with exactly the rules the shipped manifests
  // (deploy/kubernetes/base) bind to it: ClusterRoles through ClusterRoleBindings, Roles through
  // RoleBindings in the base's namespace. The daemon tests run with these, so the manifests
  // grant what the code needs.
  // `dir`: a kustomization under deploy/kubernetes whose files and namespace are read.
  static KubeUser UserFromManifests(const std::string& service_account,
                                    const std::string& dir = "base");
  // The same from rendered manifests (an overlay's `kubectl kustomize` output), whose objects
  // carry their namespace.
  static KubeUser UserFromRendered(const std::string& rendered_yaml,
                                   const std::string& service_account);

  static nlohmann::json Namespace(const std::string& name, const nlohmann::json& labels = {});
  // A Deployment (or StatefulSet) whose one container holds `resource`=`quantity`.
  static nlohmann::json Workload(const std::string& kind, const std::string& ns,
                                 const std::string& name, const std::string& container,
                                 const std::string& resource, const std::string& quantity);
  static nlohmann::json Gvpa(const std::string& ns, const std::string& name,
                             const std::string& target_kind, const std::string& target_name,
                             const std::string& mode);
  // A pod of a workload (labels app=<workload>) with one container status.
  static nlohmann::json Pod(const std::string& ns, const std::string& name,
                            const std::string& workload, const std::string& container);

 private:
  ScopedTempDir dir_;
  std::unique_ptr<KubeApiDouble> api_;
};

}  // namespace gpuvpa::testing
