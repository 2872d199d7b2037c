// Every container of every shipped overlay, started on this machine exactly as its manifest
// says: the `command`, the `args` (with $(VAR) expanded as the kubelet does), the `env`
// (fieldRefs filled as the kubelet fills them), each ConfigMap and Secret (the ones
// make-secrets.sh makes) at its mountPath, emptyDirs and the volume claim as empty folders owned
// by the pod's user, a hostPath as the folder the test made for that host path, the
// service-account token where the pod mounts one, the pod's user and group, its capabilities
// dropped and no new privileges as its securityContext says, and a read-only root file system.
// runtimeClassName nvidia is done as the NVIDIA container runtime does it: the driver's
// libnvidia-ml.so.1 (here the fake one, replaying the H200 recordings) appears in the
// container's library folder. Each container runs in a mount namespace of its own
// (unshare), so the paths it opens are the manifest's own; the binaries are this build's, at
// the image's /usr/local/bin. Only the sockets move (GPUVPA_TEST_ADDRESS_MAP): a listener on
// 0.0.0.0:PORT gets a free 127.0.0.1 port, and a Service name the real server behind it (the
// recommender, Prometheus, Redis, the Kubernetes API double). Every container must pass its
// readiness probe within 60 s and its liveness probe for the next 30 s.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "core/cost/ledger.h"
#include "core/net/http_client.h"
#include "proto/health.grpc.pb.h"
#include "test/support/fake_kubelet.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/ledger_backends.h"
#include "test/support/process.h"
#include "test/support/prometheus_server.h"
#include "test/support/redis_server.h"
#include "test/support/sockets.h"
#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

const fs::path kKube = fs::path(GPUVPA_SOURCE_DIR) / "deploy" / "kubernetes";
// Where the NVIDIA container runtime puts the driver's libraries (the loader's multiarch folder).
const std::string kLibraryDir = GPUVPA_LIBRARY_DIR;

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// $(NAME) replaced by the container's variable NAME, $$ by $, as the kubelet expands command
// and args; an unknown $(NAME) stays as written.
std::string Expand(const std::string& text, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "$$") == 0) {
      out += '$';
      ++i;
      continue;
    }
    if (text.compare(i, 2, "$(") == 0) {
      const size_t close = text.find(')', i);
      if (close != std::string::npos) {
        auto it = env.find(text.substr(i + 2, close - i - 2));
        if (it != env.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

// GET http://127.0.0.1:port/path with the project's client: the status code (0 when nothing
// answered), the body in `body`.
int HttpStatus(int port, const std::string& path, std::string* body = nullptr) {
  Result<HttpResponse> r =
      HttpGet("http://127.0.0.1:" + std::to_string(port) + path, std::chrono::seconds(2));
  if (!r.ok()) return 0;
  if (body != nullptr) *body = r->body;
  return r->status;
}

bool GrpcServing(int port, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&ctx, request, &response).ok() &&
         response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// One started container.
struct Started {
  std::string who;       // pod's workload (or pod, for a StatefulSet's second replica on)/container
  std::string workload;  // its workload's name (the app.kubernetes.io/name the Services select)
  std::string pod;       // the pod's name
  int index = 0;         // a StatefulSet pod's index
  pid_t pid = -1;
  std::string log;
  YAML::Node container;
  std::map<std::string, int> local_port;  // containerPort (and its name) -> 127.0.0.1 port
  bool ready = false;

  int Port(const YAML::Node& port) const {
    auto it = local_port.find(port.as<std::string>());
    return it == local_port.end() ? 0 : it->second;
  }
  // "" when the probe passes, else what it saw.
  std::string Probe(const char* kind) const {
    const YAML::Node probe = container[kind];
    if (!probe) return std::string("no ") + kind;
    if (probe["httpGet"]) {
      const int port = Port(probe["httpGet"]["port"]);
      const int status = HttpStatus(port, probe["httpGet"]["path"].as<std::string>("/"));
      return status >= 200 && status < 400 ? "" : "HTTP " + std::to_string(status);
    }
    if (probe["grpc"]) {
      return GrpcServing(Port(probe["grpc"]["port"]), probe["grpc"]["service"].as<std::string>(""))
                 ? ""
                 : "gRPC health not SERVING";
    }
    return std::string("a ") + kind + " of a kind this test does not run";
  }
  bool Exited(int* status) {
    if (pid < 0) return true;
    int s = 0;
    if (::waitpid(pid, &s, WNOHANG) != pid) return false;
    *status = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
    pid = -1;
    return true;
  }
};

// The cluster around the containers: real Prometheus and Redis, the API double, the Secrets.
class ManifestRun {
 public:
  // `ledger_url`: a PostgreSQL URL for the Secret gpuvpa-ledger-db (the postgres-ledger
  // overlay), made by make-secrets.sh --ledger-url-file as a user would.
  explicit ManifestRun(const std::string& ledger_url = "") {
    std::string error;
    fs::create_directories(tmp_.Path("prometheus"));
    prometheus_ = std::make_unique<testing::PrometheusServer>(tmp_.Path("prometheus"));
    EXPECT_TRUE(prometheus_->Start(&error)) << error;
    EXPECT_TRUE(redis_.Start(&error)) << error;
    cluster_.api().Seed(testing::KubeTestCluster::Namespace("gpuvpa"));
    cluster_.api().Seed(
        testing::KubeTestCluster::Namespace("ml-dev", {{"environment", "development"}}));
    int rc = 0;
    std::string ledger_flag;
    if (!ledger_url.empty()) {
      std::ofstream(tmp_.Path("ledger-url")) << ledger_url << "\n";
      ledger_flag = " --ledger-url-file " + Quote(tmp_.Path("ledger-url"));
    }
    const std::string out =
        testing::RunShell("bash " + Quote((kKube / "make-secrets.sh").string()) + ledger_flag +
                              " " + Quote(tmp_.Path("secrets")),
                          &rc);
    EXPECT_EQ(rc, 0) << out;
    for (const YAML::Node& s : YAML::LoadAllFromFile(tmp_.Path("secrets") + "/secrets.yaml")) {
      if (!s.IsMap()) continue;
      auto& files = secrets_[s["metadata"]["name"].as<std::string>()];
      for (const auto& kv : s["data"]) {
        std::string bytes;
        EXPECT_TRUE(absl::Base64Unescape(kv.second.as<std::string>(), &bytes));
        files[kv.first.as<std::string>()] = bytes;
      }
    }
  }

  ~ManifestRun() { StopAll(); }

  // Starts every container of `rendered`; empty when all came up (readiness within 60 s,
  // liveness for 30 s), else one line per container that did not.
  std::vector<std::string> Run(const std::string& rendered) {
    std::vector<YAML::Node> workloads;
    for (const YAML::Node& doc : YAML::LoadAll(rendered)) {
      if (!doc.IsMap()) continue;
      const std::string kind = doc["kind"].as<std::string>();
      if (kind == "ConfigMap") config_maps_[doc["metadata"]["name"].as<std::string>()] = doc;
      if (kind == "Service") services_.push_back(doc);
      if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "Job")
        workloads.push_back(doc);
    }
    // The ledger's owner first: the others connect to it (they also cope without it). (Indices:
    // assigning a YAML::Node rewrites the node it refers to, so nodes are never sorted.)
    std::vector<size_t> order(workloads.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) {
      return workloads[i]["kind"].as<std::string>() == "StatefulSet";
    });
    rendered_ = rendered;
    // Every container port gets its local port before anything starts (Services need them).
    std::vector<std::pair<YAML::Node, YAML::Node>> plan;
    // A StatefulSet's every replica (its pods' names and indices differ); one pod of any other
    // workload.
    for (size_t i : order) {
      const YAML::Node& w = workloads[i];
      const bool stateful = w["kind"].as<std::string>() == "StatefulSet";
      const int replicas = stateful ? w["spec"]["replicas"].as<int>(1) : 1;
      for (int index = 0; index < replicas; ++index)
        for (const YAML::Node& c : w["spec"]["template"]["spec"]["containers"]) {
          Started s;
          s.workload = w["metadata"]["name"].as<std::string>();
          s.pod = s.workload + (stateful ? "-" + std::to_string(index) : "-5d8f7c9b4-x2x7q");
          s.index = index;
          s.who = (index == 0 ? s.workload : s.pod) + "/" + c["name"].as<std::string>();
          s.container = c;
          for (const YAML::Node& p : c["ports"]) {
            const int port = testing::FreeLocalPort();
            s.local_port[p["containerPort"].as<std::string>()] = port;
            if (p["name"]) s.local_port[p["name"].as<std::string>()] = port;
          }
          started_.push_back(s);
          plan.push_back({w, c});
        }
    }
    std::vector<std::string> problems;
    for (size_t i = 0; i < plan.size(); ++i)
      if (std::string why = Start(plan[i].first, started_[i]); !why.empty())
        problems.push_back(started_[i].who + ": " + why);
    if (!problems.empty()) return problems;
    // Readiness within 60 s.
    const auto ready_by = steady_clock::now() + seconds(60);
    std::map<std::string, std::string> last;
    for (bool all = false; !all;) {
      all = true;
      for (Started& s : started_) {
        int status = 0;
        if (s.Exited(&status))
          return {s.who + ": exited with " + std::to_string(status) + " before it was ready:\n" +
                  testing::ReadTextFile(s.log)};
        if (s.ready) continue;
        last[s.who] = s.Probe("readinessProbe");
        s.ready = last[s.who].empty();
        all = all && s.ready;
      }
      if (all) break;
      if (steady_clock::now() > ready_by) {
        for (Started& s : started_)
          if (!s.ready)
            problems.push_back(s.who + ": not ready in 60 s (" + last[s.who] + "):\n" +
                               testing::ReadTextFile(s.log));
        return problems;
      }
      std::this_thread::sleep_for(milliseconds(500));
    }
    // Liveness (and readiness) for 30 s.
    const auto until = steady_clock::now() + seconds(30);
    while (steady_clock::now() < until) {
      for (Started& s : started_) {
        int status = 0;
        if (s.Exited(&status))
          return {s.who + ": exited with " + std::to_string(status) + " while live:\n" +
                  testing::ReadTextFile(s.log)};
        for (const char* probe : {"livenessProbe", "readinessProbe"})
          if (std::string why = s.Probe(probe); !why.empty())
            return {s.who + ": " + probe + " failed (" + why + "):\n" +
                    testing::ReadTextFile(s.log)};
      }
      std::this_thread::sleep_for(seconds(2));
    }
    return {};
  }

  const std::vector<Started>& started() const { return started_; }
  // Every container's output, for a failure message.
  std::string Logs() const {
    std::string all;
    for (const Started& s : started_) all += "--- " + s.who + "\n" + testing::ReadTextFile(s.log);
    return all;
  }
  testing::KubeTestCluster& cluster() { return cluster_; }
  // The node the pods run on (spec.nodeName).
  void SetNode(const std::string& node) { node_ = node; }
  // What a hostPath volume of `path` mounts (a folder the test made).
  void ProvideHostPath(const std::string& path, const std::string& folder) {
    host_paths_[path] = folder;
  }
  // A file of a Secret make-secrets.sh made ("" when there is none).
  std::string SecretFile(const std::string& secret, const std::string& key) const {
    auto it = secrets_.find(secret);
    if (it == secrets_.end() || !it->second.count(key)) return "";
    return it->second.at(key);
  }

  void StopAll() {
    for (Started& s : started_) testing::KillProcess(s.pid);
    // The mount points this test made on the host, if still empty.
    for (const std::string& target : created_)
      testing::RunShell("rmdir -p " + Quote(target) + " 2>/dev/null || true", &ignored_rc_);
  }

 private:
  // Where a Service's port sends traffic: the local port of the container behind it.
  std::string MapFor(const Started& self) const {
    std::string map;
    auto add = [&](const std::string& from, int port) {
      if (port > 0) map += (map.empty() ? "" : ",") + from + "=127.0.0.1:" + std::to_string(port);
    };
    for (const auto& [port, local] : self.local_port)
      if (std::isdigit(static_cast<unsigned char>(port[0]))) add("0.0.0.0:" + port, local);
    for (const YAML::Node& svc : services_) {
      const std::string name = svc["metadata"]["name"].as<std::string>();
      const std::string ns = svc["metadata"]["namespace"].as<std::string>();
      const std::string selected =
          svc["spec"]["selector"]["app.kubernetes.io/name"].as<std::string>();
      const bool headless = svc["spec"]["clusterIP"].as<std::string>("") == "None";
      for (const Started& target : started_) {
        if (target.workload != selected) continue;
        for (const YAML::Node& p : svc["spec"]["ports"]) {
          const std::string port = p["port"].as<std::string>();
          const int local = target.Port(p["targetPort"] ? p["targetPort"] : p["port"]);
          // A headless Service names each pod (pod.service...); another, all of them at once.
          const std::string prefix = headless ? target.pod + "." : "";
          for (const std::string& host : {name, name + "." + ns, name + "." + ns + ".svc",
                                          name + "." + ns + ".svc.cluster.local"})
            add(prefix + host + ":" + port, local);
        }
      }
    }
    // The cluster's other Services, as the shipped config names them.
    const std::string prometheus = prometheus_->url().substr(std::string("http://").size());
    map += ",prometheus-operated.monitoring.svc:9090=" + prometheus;
    map += ",redis.queues.svc:6379=127.0.0.1:" + std::to_string(redis_.port());
    return map;
  }

  // Writes `files` into a new folder (mode 0644 files, as the kubelet's default).
  std::string Folder(const std::string& name, const std::map<std::string, std::string>& files) {
    const std::string dir = tmp_.Path("volumes/" + std::to_string(++folders_) + "-" + name);
    fs::create_directories(dir);
    for (const auto& [key, bytes] : files) {
      std::ofstream(dir + "/" + key, std::ios::binary) << bytes;
      ::chmod((dir + "/" + key).c_str(), 0644);
    }
    ::chmod(dir.c_str(), 0755);
    return dir;
  }

  // The volume `name` of `pod` as a folder; "" with `why` set when this test cannot make it.
  std::string Volume(const YAML::Node& workload, const std::string& name, uid_t uid, gid_t gid,
                     std::string* why) {
    const YAML::Node pod = workload["spec"]["template"]["spec"];
    for (const YAML::Node& v : pod["volumes"]) {
      if (v["name"].as<std::string>() != name) continue;
      if (v["configMap"]) {
        const std::string cm = v["configMap"]["name"].as<std::string>();
        if (!config_maps_.count(cm)) {
          *why = "ConfigMap " + cm + " is not in the overlay";
          return "";
        }
        std::map<std::string, std::string> files;
        for (const auto& kv : config_maps_.at(cm)["data"])
          files[kv.first.as<std::string>()] = kv.second.as<std::string>();
        return Folder(name, files);
      }
      if (v["secret"]) {
        const std::string secret = v["secret"]["secretName"].as<std::string>();
        if (!secrets_.count(secret) && !v["secret"]["optional"].as<bool>(false)) {
          *why = "Secret " + secret + " is not made by make-secrets.sh";
          return "";
        }
        return Folder(name, secrets_.count(secret) ? secrets_.at(secret)
                                                   : std::map<std::string, std::string>{});
      }
      if (v["emptyDir"]) return Writable(name, uid, gid);
      if (v["hostPath"]) {
        const std::string path = v["hostPath"]["path"].as<std::string>();
        if (!host_paths_.count(path)) {
          *why = "hostPath " + path + " is not one this test provides";
          return "";
        }
        return host_paths_.at(path);
      }
      *why = "volume " + name + " of a kind this test does not make";
      return "";
    }
    for (const YAML::Node& claim : workload["spec"]["volumeClaimTemplates"])
      if (claim["metadata"]["name"].as<std::string>() == name) return Writable(name, uid, gid);
    *why = "volume " + name + " is not declared";
    return "";
  }

  std::string Writable(const std::string& name, uid_t uid, gid_t gid) {
    const std::string dir = Folder(name, {});
    EXPECT_EQ(::chown(dir.c_str(), uid, gid), 0) << dir;
    ::chmod(dir.c_str(), 0770);
    return dir;
  }

  std::string Start(const YAML::Node& workload, Started& s) {
    const YAML::Node pod = workload["spec"]["template"]["spec"];
    const YAML::Node& c = s.container;
    const std::string pod_name = s.pod;
    const uid_t uid = c["securityContext"]["runAsUser"].as<uid_t>(
        pod["securityContext"]["runAsUser"].as<uid_t>(0));
    const gid_t gid =
        pod["securityContext"]["fsGroup"].as<gid_t>(c["securityContext"]["runAsGroup"].as<gid_t>(
            pod["securityContext"]["runAsGroup"].as<gid_t>(0)));
    // The environment, as the kubelet makes it.
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOSTNAME", pod_name},
        {"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
        {"KUBERNETES_SERVICE_PORT", std::to_string(cluster_.api().port())}};
    for (const YAML::Node& e : c["env"]) {
      const std::string name = e["name"].as<std::string>();
      if (e["value"]) {
        env[name] = Expand(e["value"].as<std::string>(), env);
      } else if (e["valueFrom"]["fieldRef"]) {
        const std::string field = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
        if (field == "metadata.name")
          env[name] = pod_name;
        else if (field == "spec.nodeName")
          env[name] = node_;
        else if (field == "metadata.namespace")
          env[name] = workload["metadata"]["namespace"].as<std::string>();
        else if (field == "metadata.labels['apps.kubernetes.io/pod-index']" &&
                 workload["kind"].as<std::string>() == "StatefulSet")
          env[name] = std::to_string(s.index);
        else
          return "env " + name + ": fieldRef " + field + " is not one this test fills";
      } else {
        return "env " + name + ": a source this test does not fill";
      }
    }
    for (const char* sanitizer : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
      if (const char* v = std::getenv(sanitizer)) env[sanitizer] = v;
    env["GPUVPA_TEST_ADDRESS_MAP"] = MapFor(s);
    // The mounts: every volumeMount, the service-account token, this build's binaries.
    std::vector<std::pair<std::string, std::string>> mounts;  // source, target
    std::set<std::string> read_only;
    for (const YAML::Node& m : c["volumeMounts"]) {
      std::string why;
      const std::string source = Volume(workload, m["name"].as<std::string>(), uid, gid, &why);
      if (source.empty()) return why;
      const std::string target = m["mountPath"].as<std::string>();
      mounts.push_back({source, target});
      if (m["readOnly"].as<bool>(false)) read_only.insert(target);
    }
    if (pod["automountServiceAccountToken"].as<bool>(true)) {
      const std::string account = pod["serviceAccountName"].as<std::string>("default");
      const std::string token = "token-of-" + account;
      cluster_.api().AddUser(token, testing::KubeTestCluster::UserFromRendered(rendered_, account));
      mounts.push_back(
          {Folder("serviceaccount",
                  {{"token", token},
                   {"ca.crt", testing::ReadTextFile(cluster_.dir().Path("ca.pem"))},
                   {"namespace", workload["metadata"]["namespace"].as<std::string>()}}),
           "/var/run/secrets/kubernetes.io/serviceaccount"});
      read_only.insert("/var/run/secrets/kubernetes.io/serviceaccount");
    }
    // /tmp last: the other sources live under it.
    std::stable_partition(mounts.begin(), mounts.end(),
                          [](const auto& m) { return m.second != "/tmp"; });
    // This build's binaries first: the checkout may itself live under a path a volume covers
    // (a clone in /tmp, which the recommender's emptyDir hides).
    std::string script = "set -e\nmount --bind " + Quote(GPUVPA_BIN_DIR) + " /usr/local/bin\n";
    for (const auto& [source, target] : mounts) {
      if (!fs::exists(target)) created_.insert(target);
      script += "mkdir -p " + Quote(target) + "\nmount --bind " + Quote(source) + " " +
                Quote(target) + "\n";
      if (read_only.count(target)) script += "mount -o remount,bind,ro " + Quote(target) + "\n";
    }
    // The NVIDIA runtime's part: the driver's NVML in the container's library folder (an
    // overlay of this mount namespace; the host's folder is untouched).
    if (pod["runtimeClassName"].as<std::string>("") == "nvidia") {
      script += "mount -t overlay overlay -o lowerdir=" +
                Quote(fs::path(GPUVPA_FAKE_NVML).parent_path().string() + ":" + kLibraryDir) + " " +
                Quote(kLibraryDir) + "\n";
      env["FAKE_NVML_DIR"] = std::string(GPUVPA_SHARED_DATA_DIR) + "/fixtures/nvml-h200";
    } else if (pod["runtimeClassName"]) {
      return "runtimeClassName " + pod["runtimeClassName"].as<std::string>() +
             " is not one this test emulates";
    }
    if (c["securityContext"]["readOnlyRootFilesystem"].as<bool>(false))
      script += "mount -o remount,bind,ro /\n";
    script += "exec setpriv --reuid=" + std::to_string(uid) + " --regid=" + std::to_string(gid) +
              " --clear-groups";
    // The container's capabilities: none left after drop ALL (root's too), and no new
    // privileges through setuid files.
    const YAML::Node drop = c["securityContext"]["capabilities"]["drop"];
    if (drop.IsSequence() && drop.size() > 0 && drop[0].as<std::string>() == "ALL")
      script += " --inh-caps=-all --bounding-set=-all";
    if (!c["securityContext"]["allowPrivilegeEscalation"].as<bool>(true))
      script += " --no-new-privs";
    script += " env -i";
    for (const auto& [k, v] : env) script += " " + Quote(k + "=" + v);
    for (const YAML::Node& part : c["command"])
      script += " " + Quote(Expand(part.as<std::string>(), env));
    for (const YAML::Node& part : c["args"])
      script += " " + Quote(Expand(part.as<std::string>(), env));
    script += "\n";
    s.log = tmp_.Path(s.pod + ".log");
    s.pid = testing::SpawnProcess(
        {"unshare", "--mount", "--propagation", "private", "bash", "-c", script}, s.log);
    return s.pid > 0 ? "" : "cannot start unshare";
  }

  testing::ScopedTempDir tmp_;
  testing::KubeTestCluster cluster_;
  std::unique_ptr<testing::PrometheusServer> prometheus_;
  testing::RedisServer redis_;
  std::map<std::string, std::map<std::string, std::string>> secrets_;
  std::map<std::string, YAML::Node> config_maps_;
  std::vector<YAML::Node> services_;
  std::vector<Started> started_;
  std::string rendered_;  // whose RBAC the mounted tokens get
  std::set<std::string> created_;
  std::string node_ = "gpu-node-1";
  std::map<std::string, std::string> host_paths_;
  int folders_ = 0;
  int ignored_rc_ = 0;
};

std::string Render(const std::string& overlay) {
  int rc = 0;
  std::string warnings;
  const std::string out =
      testing::KubeTestCluster::Kustomize((kKube / overlay).string(), &rc, &warnings);
  EXPECT_EQ(rc, 0) << warnings;
  return out;
}

// Each recommender's cost API, as Grafana reaches it through the Service: HTTPS with the
// recommender's certificate (the CA make-secrets.sh made), the token of its Secret; refused
// without the token.
void ExpectTheCostApiAnswers(ManifestRun& run) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.Path("ca.crt")) << run.SecretFile("gpuvpa-recommender-tls", "ca.crt");
  const std::string token = run.SecretFile("gpuvpa-cost-api", "token");
  ASSERT_FALSE(token.empty());
  int answered = 0;
  for (const Started& s : run.started()) {
    if (s.workload != "gpuvpa-recommender") continue;
    ASSERT_TRUE(s.local_port.count("costs")) << s.who << " has no port named costs";
    const std::string port = std::to_string(s.local_port.at("costs"));
    const std::string host = "gpuvpa-recommender.gpuvpa.svc";
    const std::string curl = "curl -sS --cacert '" + dir.Path("ca.crt") + "' --resolve " + host +
                             ":" + port + ":127.0.0.1 -w ' %{http_code}' 'https://" + host + ":" +
                             port + "/allocation?window=7d&aggregate=costCenter'";
    int rc = 0;
    const std::string with =
        testing::RunShell(curl + " -H 'Authorization: Bearer " + token + "'", &rc);
    EXPECT_EQ(rc, 0) << s.who << ": " << with;
    EXPECT_NE(with.find("\"status\":\"success\""), std::string::npos) << s.who << ": " << with;
    EXPECT_EQ(with.substr(with.size() >= 4 ? with.size() - 4 : 0), " 200") << with;
    const std::string without = testing::RunShell(curl, &rc);
    EXPECT_EQ(without.substr(without.size() >= 4 ? without.size() - 4 : 0), " 401") << without;
    EXPECT_EQ(testing::ReadTextFile(s.log).find(token), std::string::npos) << "never logged";
    ++answered;
  }
  EXPECT_GE(answered, 1);
}

// A container's /metrics, as Prometheus scrapes it through the manifest's metrics port:
// promtool accepts it, every metric is gpuvpa_-prefixed, no sample is NaN, the build is named.
// The page, for more checks.
std::string ExpectMetricsAsPrometheusScrapesThem(const Started& s) {
  const int port = s.local_port.count("metrics") ? s.local_port.at("metrics") : 0;
  EXPECT_GT(port, 0) << s.who << " has no port named metrics (the ServiceMonitor's)";
  std::string text;
  EXPECT_EQ(HttpStatus(port, "/metrics", &text), 200) << s.who;
  EXPECT_NE(text.find("gpuvpa_build_info{"), std::string::npos) << s.who;
  EXPECT_EQ(text.find("NaN"), std::string::npos) << s.who << ":\n" << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') {
      EXPECT_EQ(line.rfind("gpuvpa_", 0), 0u) << s.who << ": " << line;
    }
  testing::ScopedTempDir dir;
  std::ofstream(dir.Path("metrics.txt")) << text;
  int rc = 0;
  const std::string out =
      testing::RunShell("promtool check metrics < '" + dir.Path("metrics.txt") + "'", &rc);
  EXPECT_EQ(rc, 0) << s.who << ": " << out;
  return text;
}

class ManifestRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "mount namespaces (unshare --mount) and the pods' user need root; CI runs "
                      "as root";
  }
};

TEST_F(ManifestRunTest, EveryContainerOfEveryOverlayStartsAsWrittenAndPassesItsProbes) {
  for (const std::string overlay : {"overlays/report-only", "overlays/nonprod-auto"}) {
    SCOPED_TRACE(overlay);
    const std::string rendered = Render(overlay);
    ManifestRun run;
    const std::vector<std::string> problems = run.Run(rendered);
    EXPECT_TRUE(problems.empty()) << overlay << ":\n"
                                  << ::testing::PrintToString(problems) << "\n"
                                  << run.Logs();
    EXPECT_EQ(run.started().size(), 3u) << "recommender, updater, scaler";
    // The updater reached the API with the mounted token and its Lease exists.
    bool lease = false;
    for (const auto& r : run.cluster().api().requests())
      lease = lease ||
              (r.path.find("/leases") != std::string::npos && r.status < 300 && r.method != "GET");
    EXPECT_TRUE(lease) << "the updater took its Lease through the in-cluster config";
    // Each component's /metrics, as Prometheus scrapes it.
    int scraped = 0;
    for (const Started& s : run.started()) {
      ExpectMetricsAsPrometheusScrapesThem(s);
      ++scraped;
    }
    EXPECT_EQ(scraped, 3);
    // The owner reports on the updater's Service port.
    for (const Started& s : run.started())
      if (s.who == "gpuvpa-updater/updater") {
        std::string index;
        EXPECT_EQ(HttpStatus(s.local_port.at("metrics"), "/reports/", &index), 200) << index;
        EXPECT_NE(index.find("gpuvpa owner reports"), std::string::npos) << index;
      }
    ExpectTheCostApiAnswers(run);
  }
}

// The node agent's DaemonSet as written, on a GPU node as the GPU operator makes one: NVML
// where the NVIDIA runtime puts it (the fake library replaying the H200 recordings), the
// kubelet's pod-resources socket in the hostPath folder, NODE_NAME from spec.nodeName, the API
// with the token and RBAC the manifest binds; root with no capability left, as its
// securityContext says. It must load NVML (ready), read the GPUs, ask the kubelet through the
// read-only mount, and publish what promtool accepts.
TEST_F(ManifestRunTest, TheNodeAgentDaemonSetRunsAsDeployedWithTheNvidiaRuntime) {
  const std::string rendered = Render("node-agent");
  testing::ScopedTempDir host;
  const std::string sockets = host.Path("pod-resources");
  fs::create_directories(sockets);
  testing::FakeKubelet kubelet;
  testing::AddContainer(kubelet.answer, "ml-dev", "trainer-0", "trainer", "nvidia.com/gpu.shared",
                        {"GPU-fa4e0000-0000-4000-8000-000000000000::0"});
  std::unique_ptr<grpc::Server> server = testing::ServeKubelet(kubelet, sockets + "/kubelet.sock");
  ASSERT_NE(server, nullptr);
  ManifestRun run;
  run.SetNode("gpu-node-1");
  run.ProvideHostPath("/var/lib/kubelet/pod-resources", sockets);
  const std::vector<std::string> problems = run.Run(rendered);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems) << "\n" << run.Logs();
  ASSERT_EQ(run.started().size(), 1u);
  const Started& agent = run.started()[0];
  EXPECT_EQ(agent.who, "gpuvpa-node-agent/agent");
  const std::string page = ExpectMetricsAsPrometheusScrapesThem(agent);
  // NVML loaded from the runtime's folder: the recording's device, its GPM SM activity, and
  // its processes.
  EXPECT_NE(page.find("gpuvpa_gpu_sm_active_ratio{"), std::string::npos) << page;
  EXPECT_NE(page.find("gpu_uuid=\"GPU-fa4e0000-0000-4000-8000-000000000000\""), std::string::npos)
      << page;
  EXPECT_NE(page.find("gpuvpa_container_gpu_memory_used_bytes{"), std::string::npos) << page;
  EXPECT_NE(page.find("gpuvpa_node_agent_poll_errors_total 0"), std::string::npos) << page;
  // The kubelet answered through the read-only hostPath, to root without capabilities.
  EXPECT_GE(kubelet.list_calls(), 1) << run.Logs();
  const std::string log = testing::ReadTextFile(agent.log);
  EXPECT_NE(log.find("naming the pods of node gpu-node-1"), std::string::npos) << log;
  EXPECT_EQ(log.find("kubelet pod-resources at"), std::string::npos) << "no kubelet error:\n"
                                                                     << log;
  EXPECT_EQ(log.find("token-of-"), std::string::npos) << "the token is never logged";
  server->Shutdown();
}

// The postgres-ledger overlay as written, against a real PostgreSQL (migrated first by
// `gpuvpa ledger migrate`, as the README says): three recommender shards, each its pod index,
// the updater asking all three and the scaler, all writing the one database directly.
TEST_F(ManifestRunTest, ThePostgresLedgerOverlayRunsThreeShardsOnOneDatabase) {
  testing::LedgerPlace pg(testing::LedgerBackend::kPostgres);
  std::string error;
  ASSERT_TRUE(pg.Prepare(&error)) << error;
  testing::ScopedTempDir tmp;
  std::ofstream(tmp.Path("url")) << pg.url() << "\n";
  int rc = 0;
  const std::string migrated =
      testing::RunShell(std::string(GPUVPA_BIN_DIR) + "/gpuvpa ledger migrate --ledger-url-file " +
                            Quote(tmp.Path("url")),
                        &rc);
  ASSERT_EQ(rc, 0) << migrated;
  const std::string rendered = Render("overlays/postgres-ledger");
  ManifestRun run(pg.url());
  const std::vector<std::string> problems = run.Run(rendered);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems) << "\n" << run.Logs();
  std::set<std::string> who;
  for (const Started& s : run.started()) who.insert(s.who);
  EXPECT_EQ(who, (std::set<std::string>{"gpuvpa-recommender/recommender",
                                        "gpuvpa-recommender-1/recommender",
                                        "gpuvpa-recommender-2/recommender",
                                        "gpuvpa-updater/updater", "gpuvpa-scaler/scaler"}));
  // Each shard took its index from its pod, and the updater's cycle asked every shard.
  for (const Started& s : run.started()) {
    const std::string log = testing::ReadTextFile(s.log);
    if (s.workload != "gpuvpa-recommender") continue;
    EXPECT_NE(log.find("shard " + std::to_string(s.index) + "/3"), std::string::npos)
        << s.who << ":\n"
        << log;
  }
  EXPECT_EQ(pg.postgres()->Query("ledger", "SELECT MAX(version) FROM gpuvpa_schema"),
            std::to_string(Ledger::kSchemaVersion));
  ExpectTheCostApiAnswers(run);
}

// The same run fails, naming the container, when a manifest's flag is broken: a typo, a health
// port that is the mTLS port (the scaler cannot listen twice), a certificate file name that
// the Secret does not have.
TEST_F(ManifestRunTest, ABrokenFlagInAManifestFailsTheRun) {
  const std::string good = Render("overlays/report-only");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"--health-listen=0.0.0.0:9092", "--helth-listen=0.0.0.0:9092"},
           {"--health-listen=0.0.0.0:9092", "--health-listen=0.0.0.0:9090"},
           {"--tls-cert=/etc/gpuvpa/tls/tls.crt", "--tls-cert=/etc/gpuvpa/tls/cert.pem"}}) {
    std::string broken = good;
    const size_t at = broken.find(from);
    ASSERT_NE(at, std::string::npos);
    broken.replace(at, from.size(), to);
    ManifestRun run;
    const std::vector<std::string> problems = run.Run(broken);
    ASSERT_FALSE(problems.empty()) << to;
    EXPECT_EQ(problems[0].rfind("gpuvpa-scaler/scaler: ", 0), 0u) << problems[0];
    std::cout << to << " -> " << problems[0] << "\n";
  }
}

}  // namespace
}  // namespace gpuvpa
