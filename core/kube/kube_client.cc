// The Kubernetes API client: paths, typed errors, bounded 429 retries, watch windows, informer.
#include "core/kube/kube_client.h"

#include <spdlog/spdlog.h>

#include <sstream>
#include <thread>

#include "core/base/names.h"

namespace gpuvpa {

using json = nlohmann::json;

namespace kube {
const KubeResource kNamespaces{"", "v1", "namespaces", "Namespace", false};
const KubeResource kPods{"", "v1", "pods", "Pod", true};
const KubeResource kEvents{"", "v1", "events", "Event", true};
const KubeResource kDeployments{"apps", "v1", "deployments", "Deployment", true};
const KubeResource kStatefulSets{"apps", "v1", "statefulsets", "StatefulSet", true};
const KubeResource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
const KubeResource kGpuVerticalPodAutoscalers{"gpuvpa.io", "v1alpha1", "gpuverticalpodautoscalers",
                                              "GpuVerticalPodAutoscaler", true};

const KubeResource* WorkloadResource(const std::string& kind) {
  if (kind == "Deployment") return &kDeployments;
  if (kind == "StatefulSet") return &kStatefulSets;
  return nullptr;
}
}  // namespace kube

namespace {

// A string member of an API object, or "" when it is absent or not a string (a hostile or
// broken peer decides the types).
std::string TextOf(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Retries of a throttled call, and the longest Retry-After honoured.
constexpr int kMaxThrottleRetries = 3;
constexpr std::chrono::seconds kMaxRetryAfter{5};

std::string Query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    q += (q.empty() ? "?" : "&") + k + "=" + UrlEncode(v);
  }
  return q;
}

}  // namespace

std::string KubeResource::Path(const std::string& ns, const std::string& name,
                               const std::string& subresource) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += "/" + resource;
  if (!name.empty()) p += "/" + name;
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

std::string KubeResource::Describe(const std::string& ns, const std::string& name) const {
  const std::string qualified = group.empty() ? resource : resource + "." + group;
  return qualified + " " + (ns.empty() ? name : ns + "/" + name);
}

Status KubeApiError(int http_status, const std::string& body, const std::string& what) {
  std::string message;
  const json parsed = json::parse(body, nullptr, false);
  if (TextOf(parsed, "kind") == "Status") message = TextOf(parsed, "message");
  if (message.empty()) message = body.substr(0, 200);
  // A peer's text (a proxy's error page may be any bytes): valid UTF-8, bounded, one line, so
  // it can go into an Event, a ledger row's evidence and a log.
  message = SanitizeText(message, 1000);
  const std::string text = what + ": HTTP " + std::to_string(http_status) + ": " + message;
  switch (http_status) {
    case 400:
    case 415:
    case 422:
      return InvalidArgumentError(text);
    case 401:
      return {StatusCode::kUnauthenticated, text};
    case 403:
      return {StatusCode::kPermissionDenied, text};
    case 404:
      return NotFoundError(text);
    case 409:
      return {StatusCode::kAborted, text};
    case 410:
      return {StatusCode::kOutOfRange, text};
    case 429:
      return {StatusCode::kResourceExhausted, text};
    default:
      return UnavailableError(text);
  }
}

Result<std::unique_ptr<KubeClient>> KubeClient::Create(KubeConnection connection,
                                                       std::chrono::milliseconds timeout) {
  connection.http.max_response_bytes =
      std::max<size_t>(connection.http.max_response_bytes, 64u << 20);
  Result<std::shared_ptr<HttpClient>> http = HttpClient::Create(connection.http);
  if (!http.ok())
    return Status(http.status().code(),
                  "Kubernetes API (" + connection.source + "): " + http.status().message());
  return std::unique_ptr<KubeClient>(
      new KubeClient(std::move(connection), std::move(http).value(), timeout));
}

Result<json> KubeClient::Call(const std::string& method, const std::string& target,
                              const std::string& body, const std::string& content_type,
                              const std::string& what, std::chrono::milliseconds timeout,
                              bool read_answer) {
  const auto deadline =
      std::chrono::steady_clock::now() + (timeout.count() > 0 ? timeout : timeout_);
  for (int attempt = 0;; ++attempt) {
    Result<HttpResponse> r = method == "GET"
                                 ? http_->Get(target, deadline)
                                 : http_->Send(method, target, body, content_type, deadline);
    if (!r.ok()) return Status(r.status().code(), what + ": " + r.status().message());
    if (r->status >= 200 && r->status < 300) {
      if (!read_answer) return json();
      json parsed = json::parse(r->body, nullptr, false);
      if (parsed.is_discarded())
        return UnavailableError(what + ": the API server's answer is not JSON");
      return parsed;
    }
    if (r->status == 429 && attempt < kMaxThrottleRetries) {
      int retry_s = 1;
      try {
        retry_s = std::max(0, std::stoi(r->retry_after));
      } catch (const std::exception&) {
      }
      const auto wait =
          std::min<std::chrono::seconds>(std::chrono::seconds(retry_s), kMaxRetryAfter);
      if (std::chrono::steady_clock::now() + wait < deadline) {
        std::this_thread::sleep_for(wait);
        continue;
      }
    }
    return KubeApiError(r->status, r->body, what);
  }
}

Result<json> KubeClient::Get(const KubeResource& r, const std::string& ns, const std::string& name,
                             const std::string& subresource) {
  return Call("GET", r.Path(ns, name, subresource), "", "", "get " + r.Describe(ns, name));
}

Result<KubeList> KubeClient::List(const KubeResource& r, const std::string& ns,
                                  const KubeListOptions& options) {
  // In pages, as client-go's pager does: no answer holds more than a page of objects, so a
  // list of 100,000 objects never meets the response size limit. The first page's
  // resourceVersion is the list's. A continue token the server has compacted away (410) starts
  // the list over once, whole.
  const std::string what = "list " + r.Describe(ns, "*");
  KubeList out;
  std::string token;
  do {
    Result<json> body =
        Call("GET",
             r.Path(ns) +
                 Query({{"labelSelector", options.label_selector},
                        {"fieldSelector", options.field_selector},
                        {"limit", options.page_size > 0 ? std::to_string(options.page_size) : ""},
                        {"continue", token}}),
             "", "", what);
    if (!body.ok() && !token.empty() && body.status().code() == StatusCode::kOutOfRange) {
      KubeListOptions whole = options;
      whole.page_size = 0;
      return List(r, ns, whole);
    }
    if (!body.ok()) return body.status();
    if (body->contains("items") && (*body)["items"].is_array())
      for (json& item : (*body)["items"]) out.items.push_back(std::move(item));
    const json* meta = body->contains("metadata") ? &(*body)["metadata"] : nullptr;
    if (token.empty() && meta != nullptr && meta->contains("resourceVersion") &&
        (*meta)["resourceVersion"].is_string())
      out.resource_version = (*meta)["resourceVersion"];
    token = options.page_size > 0 && meta != nullptr && meta->contains("continue") &&
                    (*meta)["continue"].is_string()
                ? (*meta)["continue"].get<std::string>()
                : "";
  } while (!token.empty());
  return out;
}

Result<std::string> KubeClient::Watch(const KubeResource& r, const std::string& ns,
                                      const KubeListOptions& options,
                                      const std::string& resource_version, int timeout_s,
                                      const std::function<void(const KubeWatchEvent&)>& on_event) {
  const std::string what = "watch " + r.Describe(ns, "*");
  const std::string target = r.Path(ns) + Query({{"watch", "1"},
                                                 {"allowWatchBookmarks", "true"},
                                                 {"resourceVersion", resource_version},
                                                 {"timeoutSeconds", std::to_string(timeout_s)},
                                                 {"labelSelector", options.label_selector},
                                                 {"fieldSelector", options.field_selector}});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 10);
  Result<HttpResponse> resp = http_->Get(target, deadline);
  if (!resp.ok()) return Status(resp.status().code(), what + ": " + resp.status().message());
  if (resp->status != 200) return KubeApiError(resp->status, resp->body, what);
  std::string rv = resource_version;
  std::istringstream lines(resp->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    json event = json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("type") || !event["type"].is_string() ||
        !event.contains("object") || !event["object"].is_object())
      return UnavailableError(what + ": a watch event is not an event: " + line.substr(0, 120));
    KubeWatchEvent e{event["type"], event["object"]};
    if (e.type == "ERROR") {
      const auto code_it = e.object.find("code");
      const int code = code_it != e.object.end() && code_it->is_number_integer() &&
                               code_it->get<int64_t>() >= 100 && code_it->get<int64_t>() < 600
                           ? static_cast<int>(code_it->get<int64_t>())
                           : 500;
      return KubeApiError(code, e.object.dump(), what);
    }
    const json* meta = e.object.contains("metadata") ? &e.object["metadata"] : nullptr;
    if (meta != nullptr && meta->contains("resourceVersion") &&
        (*meta)["resourceVersion"].is_string())
      rv = (*meta)["resourceVersion"];
    on_event(e);
  }
  return rv;
}

Result<json> KubeClient::Write(const std::string& method, const KubeResource& r,
                               const std::string& ns, const std::string& name,
                               const std::string& body, const std::string& content_type,
                               const KubeWriteOptions& options, const std::string& extra_query) {
  std::string target =
      r.Path(ns, name, options.subresource) +
      Query({{"dryRun", options.dry_run ? "All" : ""}, {"fieldManager", options.field_manager}});
  if (!extra_query.empty())
    target += (target.find('?') == std::string::npos ? "?" : "&") + extra_query;
  std::string verb = method == "POST"    ? "create"
                     : method == "PUT"   ? "update"
                     : method == "PATCH" ? "patch"
                                         : "delete";
  return Call(method, target, body, content_type,
              verb + " " + r.Describe(ns, name) +
                  (options.subresource.empty() ? "" : "/" + options.subresource) +
                  (options.dry_run ? " (dry run)" : ""),
              std::chrono::milliseconds(0), options.read_answer);
}

Result<json> KubeClient::Create(const KubeResource& r, const std::string& ns, const json& object,
                                const KubeWriteOptions& options) {
  return Write("POST", r, ns, "", object.dump(), "application/json", options, "");
}

Result<json> KubeClient::Update(const KubeResource& r, const std::string& ns, const json& object,
                                const KubeWriteOptions& options) {
  const std::string name = object.contains("metadata") ? TextOf(object["metadata"], "name") : "";
  if (name.empty())
    return InvalidArgumentError("update " + r.Describe(ns, "?") +
                                ": the object has no metadata.name");
  return Write("PUT", r, ns, name, object.dump(), "application/json", options, "");
}

Result<json> KubeClient::MergePatch(const KubeResource& r, const std::string& ns,
                                    const std::string& name, const json& patch,
                                    const KubeWriteOptions& options) {
  return Write("PATCH", r, ns, name, patch.dump(), "application/merge-patch+json", options, "");
}

Result<json> KubeClient::Apply(const KubeResource& r, const std::string& ns,
                               const std::string& name, const json& object,
                               const KubeWriteOptions& options, bool force) {
  json body = object;
  body["apiVersion"] = r.api_version();
  body["kind"] = r.kind;
  body["metadata"]["name"] = name;
  if (r.namespaced) body["metadata"]["namespace"] = ns;
  // JSON is YAML: the apply body needs no YAML writer.
  return Write("PATCH", r, ns, name, body.dump(), "application/apply-patch+yaml", options,
               force ? "force=true" : "");
}

Status KubeClient::Delete(const KubeResource& r, const std::string& ns, const std::string& name) {
  Result<json> out = Write("DELETE", r, ns, name, "", "", {false, "", ""}, "");
  return out.ok() ? OkStatus() : out.status();
}

Result<size_t> KubeInformer::Sync(int watch_s) {
  try {
    return SyncOrThrow(watch_s);
  } catch (const json::exception& e) {
    resource_version_.clear();  // start over with a list
    return UnavailableError("watch " + resource_.Describe(ns_, "*") +
                            ": an object of an unexpected shape: " + e.what());
  }
}

Result<size_t> KubeInformer::SyncOrThrow(int watch_s) {
  auto key_of = [](const json& o) {
    const json& m = o.at("metadata");
    return TextOf(m, "namespace") + "/" + TextOf(m, "name");
  };
  if (resource_version_.empty() || watch_s <= 0) {
    Result<KubeList> list = client_.List(resource_, ns_, options_);
    if (!list.ok()) return list.status();
    objects_.clear();
    for (const json& item : list->items)
      if (item.is_object() && item.contains("metadata")) objects_[key_of(item)] = item;
    resource_version_ = list->resource_version;
    ++relists_;
    return objects_.size();
  }
  size_t changes = 0;
  Result<std::string> rv = client_.Watch(
      resource_, ns_, options_, resource_version_, watch_s, [&](const KubeWatchEvent& e) {
        if (e.type == "BOOKMARK" || !e.object.contains("metadata")) return;
        ++changes;
        if (e.type == "DELETED")
          objects_.erase(key_of(e.object));
        else
          objects_[key_of(e.object)] = e.object;
      });
  if (!rv.ok()) {
    // Expired (410), or a window that could not be read whole (more events than the response
    // limit holds after a burst of writes, a connection lost midway): what it held is not
    // known, so the copy is rebuilt from a list (in pages) now. When the list fails too, its
    // error is the answer and the next Sync lists again.
    spdlog::info("watch {}: {}; listing again", resource_.Describe(ns_, "*"),
                 rv.status().message());
    resource_version_.clear();
    return SyncOrThrow(watch_s);
  }
  resource_version_ = *rv;
  return changes;
}

}  // namespace gpuvpa
