// Where the Kubernetes API is and how to authenticate to it: in-cluster (the service account's
// token file, re-read on every request so a rotated token is picked up, its CA file, and
// KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig file (server, CA, token or token file or client
// certificate, inline `*-data` or as files relative to the kubeconfig's folder; the context's
// namespace). Exec and auth-provider plugins are refused by name: nothing runs a program.
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/net/http_client.h"

namespace gpuvpa {

struct KubeConnection {
  HttpClientOptions http;         // base URL, TLS material, bearer token
  std::string default_namespace;  // the context's namespace, or the pod's own in-cluster
  std::string source;             // "in-cluster" or "kubeconfig FILE (context NAME)"
};

struct InClusterFiles {
  std::string token = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// FAILED_PRECONDITION when KUBERNETES_SERVICE_HOST/PORT are not set (not in a pod).
Result<KubeConnection> InClusterConnection(const InClusterFiles& files = {});
// `context` empty: the file's current-context.
Result<KubeConnection> KubeconfigConnection(const std::string& path,
                                            const std::string& context = "");
// The same from the file's text; `path` names it in errors and anchors relative paths.
Result<KubeConnection> ParseKubeconfig(const std::string& text, const std::string& path,
                                       const std::string& context = "");
// A kubeconfig path given: that file. Otherwise in-cluster when running in a pod, else
// $KUBECONFIG, else ~/.kube/config.
Result<KubeConnection> ResolveKubeConnection(const std::string& kubeconfig_path,
                                             const std::string& context = "");

}  // namespace gpuvpa
