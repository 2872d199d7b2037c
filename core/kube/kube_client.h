// A Kubernetes API client on the one HTTP/TLS client: get, list (selectors), watch windows
// (resourceVersion, bookmarks; 410 Expired is OUT_OF_RANGE so the caller relists), create,
// update with optimistic concurrency, JSON merge patch, server-side apply, delete, all with
// `dryRun=All` on request. API answers become typed errors whose message is the server's own:
//   401 UNAUTHENTICATED, 403 PERMISSION_DENIED (names the verb and resource), 404 NOT_FOUND,
//   409 ABORTED (stale resourceVersion, or already exists), 410 OUT_OF_RANGE,
//   400/422 INVALID_ARGUMENT (names the field), 429 RESOURCE_EXHAUSTED after the client's own
//   bounded retries (Retry-After honoured), 5xx and transport failures UNAVAILABLE.
// The Informer keeps a local copy of one resource by list + watch, relisting on 410.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/base/status.h"
#include "core/kube/kube_config.h"
#include "core/net/http_client.h"

namespace gpuvpa {

struct KubeResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural
  std::string kind;
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // The request path of a collection (name empty) or an object, with an optional subresource.
  std::string Path(const std::string& ns, const std::string& name = "",
                   const std::string& subresource = "") const;
  // "deployments.apps ml-dev/web", for messages.
  std::string Describe(const std::string& ns, const std::string& name) const;
};

namespace kube {
extern const KubeResource kNamespaces;
extern const KubeResource kPods;
extern const KubeResource kEvents;
extern const KubeResource kDeployments;
extern const KubeResource kStatefulSets;
extern const KubeResource kLeases;
extern const KubeResource kGpuVerticalPodAutoscalers;
// Deployment or StatefulSet by kind; null for anything else.
const KubeResource* WorkloadResource(const std::string& kind);
}  // namespace kube

struct KubeListOptions {
  std::string label_selector;
  std::string field_selector;
  // Objects per page of a List (client-go's pager default); 0 lists in one answer.
  size_t page_size = 500;
};

struct KubeList {
  nlohmann::json items = nlohmann::json::array();
  std::string resource_version;
};

struct KubeWatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

struct KubeWriteOptions {
  bool dry_run = false;
  std::string field_manager = "gpuvpa";
  std::string subresource;  // "status" for the status subresource
  // false: the object the server answers with is not read (the result is null); a status
  // write whose answer nobody uses spares parsing the whole object back.
  bool read_answer = true;
};

class KubeClient {
 public:
  static Result<std::unique_ptr<KubeClient>> Create(
      KubeConnection connection, std::chrono::milliseconds timeout = std::chrono::seconds(15));

  Result<nlohmann::json> Get(const KubeResource& r, const std::string& ns, const std::string& name,
                             const std::string& subresource = "");
  Result<KubeList> List(const KubeResource& r, const std::string& ns,
                        const KubeListOptions& options = {});
  // One watch window from `resource_version`: events in order to `on_event` until the server
  // ends the window after `timeout_s`. Returns the resourceVersion to resume from (bookmarks
  // advance it). OUT_OF_RANGE when the version is too old (410 Expired): list again.
  Result<std::string> Watch(const KubeResource& r, const std::string& ns,
                            const KubeListOptions& options, const std::string& resource_version,
                            int timeout_s,
                            const std::function<void(const KubeWatchEvent&)>& on_event);
  Result<nlohmann::json> Create(const KubeResource& r, const std::string& ns,
                                const nlohmann::json& object, const KubeWriteOptions& options = {});
  // PUT: the object's metadata.resourceVersion is the precondition (ABORTED when stale).
  Result<nlohmann::json> Update(const KubeResource& r, const std::string& ns,
                                const nlohmann::json& object, const KubeWriteOptions& options = {});
  // RFC 7386 merge patch; a metadata.resourceVersion inside is a precondition.
  Result<nlohmann::json> MergePatch(const KubeResource& r, const std::string& ns,
                                    const std::string& name, const nlohmann::json& patch,
                                    const KubeWriteOptions& options = {});
  // Server-side apply (force: take fields other managers own).
  Result<nlohmann::json> Apply(const KubeResource& r, const std::string& ns,
                               const std::string& name, const nlohmann::json& object,
                               const KubeWriteOptions& options = {}, bool force = true);
  Status Delete(const KubeResource& r, const std::string& ns, const std::string& name);

  const KubeConnection& connection() const { return connection_; }

 private:
  KubeClient(KubeConnection connection, std::shared_ptr<HttpClient> http,
             std::chrono::milliseconds timeout)
      : connection_(std::move(connection)), http_(std::move(http)), timeout_(timeout) {}
  Result<nlohmann::json> Call(const std::string& method, const std::string& target,
                              const std::string& body, const std::string& content_type,
                              const std::string& what,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                              bool read_answer = true);
  Result<nlohmann::json> Write(const std::string& method, const KubeResource& r,
                               const std::string& ns, const std::string& name,
                               const std::string& body, const std::string& content_type,
                               const KubeWriteOptions& options, const std::string& extra_query);

  KubeConnection connection_;
  std::shared_ptr<HttpClient> http_;
  std::chrono::milliseconds timeout_;
};

// The HTTP status of an API answer as a typed error; `what` names the call.
Status KubeApiError(int http_status, const std::string& body, const std::string& what);

// A local copy of one resource (in one namespace, or all with ns ""), kept by list + watch.
class KubeInformer {
 public:
  KubeInformer(KubeClient& client, KubeResource resource, std::string ns,
               KubeListOptions options = {})
      : client_(client),
        resource_(std::move(resource)),
        ns_(std::move(ns)),
        options_(std::move(options)) {}

  // Lists when there is no resourceVersion yet (or after a 410), else watches for up to
  // `watch_s` seconds applying events. Returns how many changes it saw. `watch_s` <= 0 lists
  // again: the apiserver reads timeoutSeconds=0 as "its default" (30 to 60 minutes), so there
  // is no watch that returns at once.
  Result<size_t> Sync(int watch_s);
  // namespace/name -> object.
  const std::map<std::string, nlohmann::json>& objects() const { return objects_; }
  const std::string& resource_version() const { return resource_version_; }
  size_t relists() const { return relists_; }

 private:
  Result<size_t> SyncOrThrow(int watch_s);
  KubeClient& client_;
  KubeResource resource_;
  std::string ns_;
  KubeListOptions options_;
  std::map<std::string, nlohmann::json> objects_;
  std::string resource_version_;
  size_t relists_ = 0;
};

}  // namespace gpuvpa
