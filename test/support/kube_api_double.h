// A strict Kubernetes API server double for tests (there is no kube-apiserver package here): a
// real HTTPS server on 127.0.0.1 that serves the paths gpuvpa uses with the API's semantics:
//   - discovery (/api, /apis, /api/v1, /apis/<group>/<version>, /version) so kubectl works;
//   - core namespaces, pods, events; apps deployments, statefulsets; coordination leases; the
//     GpuVerticalPodAutoscaler CRD's objects and their status subresource;
//   - get, list (label and field selectors), watch (resourceVersion, bookmarks, 410 Expired
//     after a compaction), create, update (409 on a stale resourceVersion), patch (JSON merge,
//     JSON patch, strategic merge for built-in kinds; 415 for other content types; a
//     resourceVersion in a patch is a precondition), delete; `dryRun=All` on every write;
//   - a bearer token per user and an RBAC table per token (401 unknown token, 403 with the
//     API's own message naming user, verb, resource, group and namespace);
//   - validation of every written object against the schema the double knows (the CRD's own
//     openAPIV3Schema from deploy/, a subset of the apps/v1 schema for workloads): an unknown
//     field or a wrong type is 422 Invalid naming the field;
//   - Table responses (`Accept: application/json;as=Table...`) with the CRD's printer columns.
// Test hooks seed and inspect objects, force conflicts, throttle, and compact the watch history.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gpuvpa::testing {

struct KubeRbacRule {
  std::set<std::string> verbs;       // get list watch create update patch delete, or "*"
  std::set<std::string> groups;      // "" for core, or "*"
  std::set<std::string> resources;   // "deployments", "gpuverticalpodautoscalers/status", "*"
  std::set<std::string> namespaces;  // empty: every namespace
};

struct KubeUser {
  std::string name;  // as the API names it in 403s, e.g. system:serviceaccount:gpuvpa:updater
  std::vector<KubeRbacRule> rules;
};

// One request as the double saw it (for tests that check the order of calls).
struct KubeRequestRecord {
  std::string method;
  std::string path;   // without the query
  std::string query;  // raw
  std::string content_type;
  std::string user;
  int status = 0;
};

class KubeApiDouble {
 public:
  // Listens on 127.0.0.1 (ephemeral port) with TLS from `cert_dir` (server.pem, server.key, as
  // MakeTestCertificates writes them). The CRD is read from `crd_yaml_path`.
  KubeApiDouble(const std::string& cert_dir, const std::string& crd_yaml_path);
  ~KubeApiDouble();
  KubeApiDouble(const KubeApiDouble&) = delete;
  KubeApiDouble& operator=(const KubeApiDouble&) = delete;

  std::string url() const;  // https://127.0.0.1:PORT
  int port() const { return port_; }

  void AddUser(const std::string& token, KubeUser user);
  // A user allowed everything (what kubectl and test set-up use).
  void AddAdmin(const std::string& token);

  // Stores `object` as the API would after a create (uid, resourceVersion, timestamps set);
  // the kind and apiVersion pick the resource. Aborts the test on a refused object.
  nlohmann::json Seed(nlohmann::json object);
  // The stored object, or null. `resource` is plural ("deployments"); `ns` "" if cluster-scoped.
  nlohmann::json Get(const std::string& resource, const std::string& ns,
                     const std::string& name) const;
  std::vector<nlohmann::json> List(const std::string& resource, const std::string& ns) const;
  // Replaces the stored object's status, as a controller (kubelet) would; bumps resourceVersion.
  void SetStatus(const std::string& resource, const std::string& ns, const std::string& name,
                 nlohmann::json status);
  void Delete(const std::string& resource, const std::string& ns, const std::string& name);

  // The next `count` writes to `resource` are preceded by another writer's change (a label
  // bump), so a client holding the old resourceVersion gets a real 409.
  void InterposeWrites(const std::string& resource, int count);
  // Another writer's change to some object between two requests of a client: after `requests`
  // more allowed requests (reads and writes, dry runs included) to `resource`, and before the
  // next one, the stored object `target_resource`/`ns`/`name` gets `labels` merged into its
  // metadata.labels (a value may be of any JSON type). For races such as a namespace labelled
  // production between a dry run and its patch.
  void ChangeLabelsBeforeRequest(const std::string& resource, int requests,
                                 const std::string& target_resource, const std::string& ns,
                                 const std::string& name, nlohmann::json labels);
  // The next `count` requests answer 429 with Retry-After: 1.
  void Throttle(int count);
  // Forgets the watch history: a watch from any older resourceVersion gets 410 Expired.
  void CompactHistory();
  // The same, once, after `requests` more allowed requests (after any staged change), e.g. between
  // two pages of a list.
  void CompactHistoryAfterRequests(int requests);

  std::vector<KubeRequestRecord> requests() const;
  void ClearRequests();
  uint64_t resource_version() const;

  struct ResourceType;
  struct Store;

 private:
  void Accept();
  void Serve(int fd);

  std::unique_ptr<Store> store_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex conn_mu_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// Validates `value` against a structural OpenAPI v3 schema (the subset CRDs use: type,
// properties, required, items, enum, minLength, minimum, maximum, additionalProperties,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields). Errors as
// "<field path>: <what>", e.g. "spec.targetRef.kind: Unsupported value: \"Pod\"".
std::vector<std::string> ValidateAgainstSchema(const nlohmann::json& schema,
                                               const nlohmann::json& value,
                                               const std::string& path = "");
// Checks that a CRD schema is structural (every node has a type unless it is int-or-string or
// preserves unknown fields; metadata restricts nothing but name/generateName; no
// additionalProperties beside properties; defaults and enums match their type).
std::vector<std::string> StructuralSchemaErrors(const nlohmann::json& schema,
                                                const std::string& path = "");

// YAML (one document) to JSON, as the API server reads manifests.
nlohmann::json YamlToJson(const std::string& yaml_text);

}  // namespace gpuvpa::testing
