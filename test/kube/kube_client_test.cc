// The Kubernetes client against the API double, and the double against recorded API answers.
#include "core/kube/kube_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "test/support/kube_test_cluster.h"
#include "updater/kube/gvpa.h"

namespace gpuvpa {
namespace {

using json = nlohmann::json;
using testing::KubeTestCluster;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.api().Seed(KubeTestCluster::Namespace("ml-dev"));
    cluster_.api().Seed(
        KubeTestCluster::Workload("Deployment", "ml-dev", "web", "model", "nvidia.com/gpu", "1"));
    client_ = Client(testing::kAdminToken);
  }

  std::unique_ptr<KubeClient> Client(const std::string& token) {
    Result<KubeConnection> c = KubeconfigConnection(cluster_.Kubeconfig(token, token + ".yaml"));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Result<std::unique_ptr<KubeClient>> k = KubeClient::Create(*c, std::chrono::seconds(10));
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return std::move(k).value();
  }

  KubeTestCluster cluster_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(KubeClientTest, GetsAnObjectThroughAKubeconfig) {
  Result<json> d = client_->Get(kube::kDeployments, "ml-dev", "web");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)["kind"], "Deployment");
  EXPECT_FALSE((*d)["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_EQ(
      (*d)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
      "1");
}

TEST_F(KubeClientTest, MissingObjectIsNotFoundWithTheServersMessage) {
  Result<json> d = client_->Get(kube::kDeployments, "ml-dev", "nope");
  ASSERT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("deployments.apps \"nope\" not found"), std::string::npos);
}

TEST_F(KubeClientTest, StaleResourceVersionIsAConflict) {
  json d = *client_->Get(kube::kDeployments, "ml-dev", "web");
  json newer = d;
  newer["spec"]["replicas"] = 2;
  ASSERT_TRUE(client_->Update(kube::kDeployments, "ml-dev", newer).ok());
  d["spec"]["replicas"] = 3;  // still the old resourceVersion
  Result<json> stale = client_->Update(kube::kDeployments, "ml-dev", d);
  ASSERT_EQ(stale.status().code(), StatusCode::kAborted) << stale.status().ToString();
  // The same precondition inside a merge patch.
  Result<json> patched =
      client_->MergePatch(kube::kDeployments, "ml-dev", "web",
                          {{"metadata", {{"resourceVersion", d["metadata"]["resourceVersion"]}}},
                           {"spec", {{"replicas", 4}}}});
  EXPECT_EQ(patched.status().code(), StatusCode::kAborted);
  EXPECT_EQ(cluster_.api().Get("deployments", "ml-dev", "web")["spec"]["replicas"], 2);
}

TEST_F(KubeClientTest, ForbiddenNamesUserVerbResourceAndNamespace) {
  cluster_.api().AddUser("reader", {"system:serviceaccount:gpuvpa:gpuvpa-updater",
                                    {{{"get", "list", "watch"}, {"apps"}, {"deployments"}, {}}}});
  auto reader = Client("reader");
  ASSERT_TRUE(reader->Get(kube::kDeployments, "ml-dev", "web").ok());
  Result<json> p =
      reader->MergePatch(kube::kDeployments, "ml-dev", "web", {{"spec", {{"replicas", 0}}}});
  ASSERT_EQ(p.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(p.status().message().find("cannot patch resource \"deployments\" in API group "
                                      "\"apps\" in the namespace \"ml-dev\""),
            std::string::npos)
      << p.status().message();
}

TEST_F(KubeClientTest, UnknownTokenIsUnauthenticated) {
  auto stranger = Client("who-knows");
  EXPECT_EQ(stranger->Get(kube::kDeployments, "ml-dev", "web").status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(KubeClientTest, UnknownFieldOrWrongTypeIsInvalidNamingTheField) {
  Result<json> typo =
      client_->MergePatch(kube::kDeployments, "ml-dev", "web",
                          {{"spec", {{"template", {{"spec", {{"nodeSelectr", {{"a", "b"}}}}}}}}}});
  ASSERT_EQ(typo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("spec.template.spec.nodeSelectr"), std::string::npos)
      << typo.status().message();
  Result<json> type =
      client_->MergePatch(kube::kDeployments, "ml-dev", "web", {{"spec", {{"replicas", "two"}}}});
  ASSERT_EQ(type.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(type.status().message().find("spec.replicas"), std::string::npos);
}

TEST_F(KubeClientTest, DryRunValidatesButStoresNothing) {
  const uint64_t rv = cluster_.api().resource_version();
  KubeWriteOptions dry;
  dry.dry_run = true;
  Result<json> p =
      client_->MergePatch(kube::kDeployments, "ml-dev", "web", {{"spec", {{"replicas", 5}}}}, dry);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)["spec"]["replicas"], 5);
  EXPECT_EQ(cluster_.api().Get("deployments", "ml-dev", "web")["spec"]["replicas"], 1);
  EXPECT_EQ(cluster_.api().resource_version(), rv);
  Result<json> bad =
      client_->MergePatch(kube::kDeployments, "ml-dev", "web", {{"spec", {{"replicas", -1}}}}, dry);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KubeClientTest, AWriteWhoseAnswerIsNotReadStillWritesAndStillFails) {
  KubeWriteOptions unread;
  unread.read_answer = false;
  Result<json> p = client_->MergePatch(kube::kDeployments, "ml-dev", "web",
                                       {{"spec", {{"replicas", 4}}}}, unread);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->is_null());
  EXPECT_EQ(cluster_.api().Get("deployments", "ml-dev", "web")["spec"]["replicas"], 4);
  Result<json> bad = client_->MergePatch(kube::kDeployments, "ml-dev", "web",
                                         {{"spec", {{"replicas", "four"}}}}, unread);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KubeClientTest, StatusSubresourceWritesOnlyStatus) {
  cluster_.api().Seed(KubeTestCluster::Gvpa("ml-dev", "web", "Deployment", "web", "Auto"));
  KubeWriteOptions status;
  status.subresource = "status";
  Result<json> s = client_->MergePatch(kube::kGpuVerticalPodAutoscalers, "ml-dev", "web",
                                       {{"spec", {{"updatePolicy", {{"updateMode", "Off"}}}}},
                                        {"status", {{"summary", {{"action", "mig_profile"}}}}}},
                                       status);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  json stored = cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev", "web");
  EXPECT_EQ(stored["status"]["summary"]["action"], "mig_profile");
  EXPECT_EQ(stored["spec"]["updatePolicy"]["updateMode"], "Auto");  // spec untouched
  // And the main resource does not write status.
  ASSERT_TRUE(client_
                  ->MergePatch(kube::kGpuVerticalPodAutoscalers, "ml-dev", "web",
                               {{"status", {{"summary", {{"action", "x"}}}}}})
                  .ok());
  EXPECT_EQ(cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev",
                               "web")["status"]["summary"]["action"],
            "mig_profile");
  // A value the CRD's enum does not allow is refused, naming the field.
  Result<json> bad =
      client_->MergePatch(kube::kGpuVerticalPodAutoscalers, "ml-dev", "web",
                          {{"spec", {{"updatePolicy", {{"updateMode", "Always"}}}}}});
  ASSERT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("spec.updatePolicy.updateMode: Unsupported value"),
            std::string::npos)
      << bad.status().message();
}

TEST_F(KubeClientTest, ServerSideApplyCreatesAndUpdatesStatus) {
  cluster_.api().Seed(KubeTestCluster::Gvpa("ml-dev", "web", "Deployment", "web", "Report"));
  KubeWriteOptions status;
  status.subresource = "status";
  status.field_manager = "gpuvpa-updater";
  Result<json> a =
      client_->Apply(kube::kGpuVerticalPodAutoscalers, "ml-dev", "web",
                     {{"status", {{"summary", {{"monthlySavings", "$10.00"}}}}}}, status);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(cluster_.api().Get("gpuverticalpodautoscalers", "ml-dev",
                               "web")["status"]["summary"]["monthlySavings"],
            "$10.00");
}

TEST_F(KubeClientTest, ThrottledCallsAreRetriedAfterRetryAfter) {
  cluster_.api().Throttle(1);
  Result<json> d = client_->Get(kube::kDeployments, "ml-dev", "web");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  int throttled = 0;
  for (const auto& r : cluster_.api().requests()) throttled += r.status == 429;
  EXPECT_EQ(throttled, 1);
  cluster_.api().Throttle(10);
  EXPECT_EQ(client_->Get(kube::kDeployments, "ml-dev", "web").status().code(),
            StatusCode::kResourceExhausted);
}

TEST_F(KubeClientTest, InformerListsWatchesWithBookmarksAndRelistsAfterExpiry) {
  KubeInformer informer(*client_, kube::kDeployments, "ml-dev");
  ASSERT_TRUE(informer.Sync(1).ok());
  EXPECT_EQ(informer.objects().size(), 1u);
  EXPECT_EQ(informer.relists(), 1u);
  cluster_.api().Seed(
      KubeTestCluster::Workload("Deployment", "ml-dev", "api", "srv", "nvidia.com/gpu", "2"));
  cluster_.api().Seed(
      KubeTestCluster::Workload("Deployment", "other", "elsewhere", "c", "nvidia.com/gpu", "1"));
  Result<size_t> changes = informer.Sync(1);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  EXPECT_EQ(*changes, 1u);  // the other namespace is not watched
  EXPECT_TRUE(informer.objects().contains("ml-dev/api"));
  // Nothing changes: the window ends with a bookmark that moves the resourceVersion on.
  cluster_.api().Seed(KubeTestCluster::Namespace("unrelated"));
  const std::string before = informer.resource_version();
  ASSERT_TRUE(informer.Sync(1).ok());
  EXPECT_GT(std::stoull(informer.resource_version()), std::stoull(before));
  // A compaction expires the version: the informer lists again and sees a deletion it missed.
  cluster_.api().Delete("deployments", "ml-dev", "api");
  cluster_.api().CompactHistory();
  cluster_.api().Seed(KubeTestCluster::Namespace("later"));
  ASSERT_TRUE(informer.Sync(1).ok());
  EXPECT_EQ(informer.relists(), 2u);
  EXPECT_FALSE(informer.objects().contains("ml-dev/api"));
  EXPECT_EQ(informer.objects().size(), 1u);
}

// A real apiserver reads timeoutSeconds=0 as its default window (30 to 60 minutes; the double
// waits 30 s), so a sync that must not wait lists again instead of watching.
TEST_F(KubeClientTest, InformerSyncWithoutAWindowListsAgainInsteadOfWatching) {
  KubeInformer informer(*client_, kube::kDeployments, "ml-dev");
  ASSERT_TRUE(informer.Sync(0).ok());
  cluster_.api().Seed(
      KubeTestCluster::Workload("Deployment", "ml-dev", "api", "srv", "nvidia.com/gpu", "2"));
  cluster_.api().ClearRequests();
  Result<size_t> synced = informer.Sync(0);
  ASSERT_TRUE(synced.ok()) << synced.status().ToString();
  EXPECT_EQ(informer.relists(), 2u);
  EXPECT_TRUE(informer.objects().contains("ml-dev/api"));
  for (const testing::KubeRequestRecord& r : cluster_.api().requests())
    EXPECT_EQ(r.query.find("watch"), std::string::npos) << r.query;
}

TEST_F(KubeClientTest, ListsInPagesWithTheFirstPagesVersionAndStartsOverWhenATokenExpires) {
  for (int i = 0; i < 1203; ++i)
    cluster_.api().Seed(KubeTestCluster::Workload("Deployment", "ml-dev", "d" + std::to_string(i),
                                                  "c", "nvidia.com/gpu", "1"));
  cluster_.api().Seed(
      KubeTestCluster::Workload("Deployment", "other", "elsewhere", "c", "nvidia.com/gpu", "1"));
  const std::string version = std::to_string(cluster_.api().resource_version());
  cluster_.api().ClearRequests();
  Result<KubeList> list = client_->List(kube::kDeployments, "ml-dev");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::set<std::string> names;
  for (const json& d : list->items) names.insert(d["metadata"]["name"].get<std::string>());
  EXPECT_EQ(list->items.size(), 1204u);
  EXPECT_EQ(names.size(), 1204u);  // none twice, none left out
  EXPECT_EQ(list->resource_version, version);
  std::vector<testing::KubeRequestRecord> pages = cluster_.api().requests();
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].query, "limit=500");
  EXPECT_NE(pages[1].query.find("limit=500&continue="), std::string::npos) << pages[1].query;

  // etcd compacted between the first and the second page: 410 Expired, and the list is taken
  // again whole (what it returns is still everything, once).
  cluster_.api().ClearRequests();
  cluster_.api().Seed(
      KubeTestCluster::Workload("Deployment", "ml-dev", "late", "c", "nvidia.com/gpu", "1"));
  cluster_.api().ChangeLabelsBeforeRequest("deployments", 1, "deployments", "ml-dev", "d7",
                                           {{"tier", "gold"}});
  cluster_.api().CompactHistoryAfterRequests(1);
  list = client_->List(kube::kDeployments, "ml-dev");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 1205u);
  pages = cluster_.api().requests();
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[1].status, 410);
  EXPECT_EQ(pages[2].query, "");
}

// A burst of writes whose watch events are more than the client holds in one answer (64 MiB):
// the window cannot be read whole, so the informer rebuilds its copy from a paged list and sees
// every object, rather than failing every cycle from the same version.
TEST_F(KubeClientTest, InformerListsAgainWhenAWatchWindowIsTooLargeToRead) {
  KubeInformer informer(*client_, kube::kDeployments, "ml-dev");
  ASSERT_TRUE(informer.Sync(1).ok());
  const std::string filler(100 * 1024, 'x');
  for (int i = 0; i < 700; ++i) {
    json d = KubeTestCluster::Workload("Deployment", "ml-dev", "big-" + std::to_string(i), "c",
                                       "nvidia.com/gpu", "1");
    d["metadata"]["annotations"]["example.com/filler"] = filler;
    cluster_.api().Seed(std::move(d));
  }
  Result<size_t> synced = informer.Sync(1);
  ASSERT_TRUE(synced.ok()) << synced.status().ToString();
  EXPECT_EQ(informer.relists(), 2u);
  EXPECT_EQ(informer.objects().size(), 701u);
}

TEST_F(KubeClientTest, WatchFromAnExpiredVersionIsOutOfRange) {
  Result<KubeList> list = client_->List(kube::kDeployments, "ml-dev");
  ASSERT_TRUE(list.ok());
  cluster_.api().Seed(KubeTestCluster::Namespace("x"));
  cluster_.api().CompactHistory();
  Result<std::string> w = client_->Watch(kube::kDeployments, "ml-dev", {}, list->resource_version,
                                         1, [](const KubeWatchEvent&) {});
  EXPECT_EQ(w.status().code(), StatusCode::kOutOfRange) << w.status().ToString();
}

TEST_F(KubeClientTest, InClusterTokenFileIsReReadWhenRotated) {
  cluster_.api().AddUser("token-1", {"sa-1", {{{"*"}, {"*"}, {"*"}, {}}}});
  cluster_.api().AddUser("token-2", {"sa-2", {{{"*"}, {"*"}, {"*"}, {}}}});
  const std::string token = cluster_.dir().Path("token");
  std::ofstream(token) << "token-1\n";
  std::ofstream(cluster_.dir().Path("namespace")) << "gpuvpa";
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", std::to_string(cluster_.api().port()).c_str(), 1);
  InClusterFiles files{token, cluster_.dir().Path("ca.pem"), cluster_.dir().Path("namespace")};
  Result<KubeConnection> c = InClusterConnection(files);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->default_namespace, "gpuvpa");
  auto k = KubeClient::Create(*c);
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE((*k)->Get(kube::kDeployments, "ml-dev", "web").ok());
  // Kubernetes swaps the projected token; a later request uses the new one.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(token + ".new") << "token-2\n";
  std::filesystem::rename(token + ".new", token);
  ASSERT_TRUE((*k)->Get(kube::kDeployments, "ml-dev", "web").ok());
  auto requests = cluster_.api().requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[requests.size() - 2].user, "sa-1");
  EXPECT_EQ(requests.back().user, "sa-2");
}

TEST_F(KubeClientTest, OutsideAPodInClusterConfigIsAClearError) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  Result<KubeConnection> c = InClusterConnection();
  ASSERT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST_F(KubeClientTest, KubeconfigErrorsNameTheEntry) {
  const std::string path = cluster_.dir().Path("bad-kubeconfig");
  std::ofstream(path) << "clusters: [{name: a, cluster: {server: https://127.0.0.1:1}}]\n"
                         "users: [{name: u, user: {exec: {command: aws}}}]\n"
                         "contexts: [{name: c, context: {cluster: a, user: u}}]\n"
                         "current-context: c\n";
  Result<KubeConnection> c = KubeconfigConnection(path);
  ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("user \"u\""), std::string::npos);
  EXPECT_EQ(KubeconfigConnection(path, "missing").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KubeconfigConnection(cluster_.dir().Path("none")).status().code(),
            StatusCode::kNotFound);
}

// ---- the double against recorded answers of a real API server --------------------------------

class KubeApiDoubleRealismTest : public KubeClientTest {
 protected:
  // The raw answer of the double, bypassing the client's error mapping.
  json Raw(const std::string& method, const std::string& target, const std::string& token,
           const std::string& body = "", const std::string& type = "") {
    HttpClientOptions o;
    o.base_url = cluster_.api().url();
    o.ca_file = cluster_.dir().Path("ca.pem");
    o.bearer_token = token;
    auto http = HttpClient::Create(o);
    EXPECT_TRUE(http.ok());
    auto r = (*http)->Send(method, target, body, type,
                           std::chrono::steady_clock::now() + std::chrono::seconds(10));
    EXPECT_TRUE(r.ok());
    return json::parse(r->body);
  }
  std::string Recorded(const std::string& name) {
    return std::string(GPUVPA_SOURCE_DIR) + "/test/data/kube/" + name;
  }
};

TEST_F(KubeApiDoubleRealismTest, NotFoundConflictAndForbiddenMatchRecordedStatuses) {
  EXPECT_EQ(
      Raw("GET", "/apis/apps/v1/namespaces/ml-dev/deployments/nope", testing::kAdminToken).dump(),
      [&] {
        json r = ReadJson(Recorded("status-not-found.json"));
        r["message"] = "deployments.apps \"nope\" not found";
        r["details"]["name"] = "nope";
        return r.dump();
      }());
  json stale =
      KubeTestCluster::Workload("Deployment", "ml-dev", "web", "model", "nvidia.com/gpu", "1");
  stale["metadata"]["resourceVersion"] = "1";
  EXPECT_EQ(Raw("PUT", "/apis/apps/v1/namespaces/ml-dev/deployments/web", testing::kAdminToken,
                stale.dump(), "application/json"),
            ReadJson(Recorded("status-conflict.json")));
  cluster_.api().AddUser("updater", {"system:serviceaccount:gpuvpa:gpuvpa-updater", {}});
  EXPECT_EQ(Raw("PATCH", "/apis/apps/v1/namespaces/ml-dev/deployments/web", "updater", "{}",
                "application/merge-patch+json"),
            ReadJson(Recorded("status-forbidden.json")));
}

TEST_F(KubeApiDoubleRealismTest, WatchEventsMatchRecordedExpiryAndBookmark) {
  HttpClientOptions o;
  o.base_url = cluster_.api().url();
  o.ca_file = cluster_.dir().Path("ca.pem");
  o.bearer_token = testing::kAdminToken;
  auto http = HttpClient::Create(o);
  ASSERT_TRUE(http.ok());
  auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(10); };
  // A bookmark closes an idle window.
  const std::string rv = std::to_string(cluster_.api().resource_version());
  auto r =
      (*http)->Get("/apis/apps/v1/namespaces/ml-dev/deployments?watch=1&resourceVersion=" + rv +
                       "&allowWatchBookmarks=true&timeoutSeconds=1",
                   deadline());
  ASSERT_TRUE(r.ok());
  std::string last = r->body.substr(0, r->body.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  json bookmark = ReadJson(Recorded("watch-event-bookmark.json"));
  bookmark["object"]["metadata"]["resourceVersion"] = rv;
  EXPECT_EQ(json::parse(last), bookmark);
  // A version older than the history: one ERROR event with the Expired status.
  cluster_.api().Seed(KubeTestCluster::Namespace("a"));
  cluster_.api().Seed(KubeTestCluster::Namespace("b"));
  cluster_.api().CompactHistory();
  const std::string now = std::to_string(cluster_.api().resource_version());
  r = (*http)->Get("/apis/apps/v1/namespaces/ml-dev/deployments?watch=1&resourceVersion=" + rv,
                   deadline());
  ASSERT_TRUE(r.ok());
  json expired = ReadJson(Recorded("watch-event-expired.json"));
  expired["object"]["message"] = "too old resource version: " + rv + " (" + now + ")";
  EXPECT_EQ(json::parse(r->body), expired);
}

TEST(CrdSchemaTest, TheShippedCrdIsStructural) {
  testing::KubeTestCluster cluster;
  std::ifstream in(cluster.CrdPath());
  std::stringstream text;
  text << in.rdbuf();
  const json crd = testing::YamlToJson(text.str());
  ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
  const json& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  EXPECT_EQ(testing::StructuralSchemaErrors(schema), std::vector<std::string>{});
  // The check itself can fail: a field without a type, metadata restricted, both kinds of
  // properties.
  json broken = schema;
  broken["properties"]["spec"]["properties"]["targetRef"].erase("type");
  broken["properties"]["metadata"]["properties"]["labels"] = {{"type", "object"}};
  broken["properties"]["status"]["additionalProperties"] = {{"type", "string"}};
  EXPECT_EQ(testing::StructuralSchemaErrors(broken).size(), 3u);
  // The shipped example is accepted by the API (the double validates it against the CRD).
  std::ifstream example(std::string(GPUVPA_SOURCE_DIR) + "/deploy/kubernetes/examples/gvpa.yaml");
  std::stringstream example_text;
  example_text << example.rdbuf();
  const json gvpa = cluster.api().Seed(testing::YamlToJson(example_text.str()));
  Result<updater::Gvpa> parsed = updater::ParseGvpa(gvpa);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->mode, updater::UpdateMode::kAuto);
  ASSERT_EQ(parsed->containers.size(), 1u);
  EXPECT_EQ(*parsed->containers[0].min_vram_bytes, 8.0 * 1024 * 1024 * 1024);
  // The enum of update modes is strings ("Off" read as YAML 1.1 would be a boolean).
  for (const json& mode : schema["properties"]["spec"]["properties"]["updatePolicy"]["properties"]
                                ["updateMode"]["enum"])
    EXPECT_TRUE(mode.is_string());
}
}  // namespace
}  // namespace gpuvpa
