// The shipped Kubernetes manifests, as a new user gets them: every kustomization renders with
// current kubectl (1.32 here) without a warning and passes the schema check (Kubernetes API types,
// KEDA's and the Prometheus Operator's CRD schemas, the GVPA CRD's own schema); no container runs
// as root or with privileges; RBAC grants exactly the list the issue allows; every Secret the pods
// mount is made by make-secrets.sh; the configuration parses with the components' own parsers;
// every flag in a container's args is one its binary knows.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "core/base/time_format.h"
#include "core/config/config.h"
#include "core/cost/allocation.h"
#include "core/cost/ledger.h"
#include "recommender/daemon/daemon_config.h"
#include "scaler/config/scaler_config.h"
#include "scaler/metadata/scaled_object_config.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/process.h"
#include "test/support/temp_dir.h"
#include "updater/plan/policy.h"

namespace gpuvpa {
namespace {

const std::filesystem::path kDeploy = std::filesystem::path(GPUVPA_SOURCE_DIR) / "deploy";
const std::filesystem::path kKube = kDeploy / "kubernetes";

std::string Shell(const std::string& cmd, int* rc) { return testing::RunShell(cmd, rc); }

// `kubectl kustomize` (1.21 or later), which must print no warning (kubectl 1.32 warns on every
// deprecated kustomization field).
std::string Kustomize(const std::string& dir) {
  int rc = 0;
  std::string warnings;
  const std::string out =
      testing::KubeTestCluster::Kustomize((kKube / dir).string(), &rc, &warnings);
  EXPECT_EQ(rc, 0) << dir << ": " << warnings;
  EXPECT_EQ(warnings, "") << dir;
  return out;
}

std::vector<YAML::Node> Docs(const std::string& text) {
  std::vector<YAML::Node> docs;
  for (const YAML::Node& d : YAML::LoadAll(text))
    if (d.IsMap()) docs.push_back(d);
  return docs;
}

const std::vector<std::string> kOverlays = {"overlays/report-only", "overlays/nonprod-auto",
                                            "overlays/postgres-ledger"};

std::string ManifestCheckDir() {
  return std::string(GPUVPA_SOURCE_DIR) + "/build-tools/manifest-check";
}

// Runs the schema check on `yaml` (plus extra files); its output, exit status in rc.
std::string SchemaCheck(const testing::ScopedTempDir& tmp, const std::string& yaml, int* rc,
                        const std::string& extra = "") {
  const std::string file = tmp.Path("rendered.yaml");
  std::ofstream(file) << yaml;
  return Shell("GPUVPA_MANIFEST_CHECK_DIR='" + ManifestCheckDir() + "' node '" + GPUVPA_SOURCE_DIR +
                   "/test/deploy/validate_manifests.mjs' '" + file + "' " + extra,
               rc);
}

TEST(ManifestsTest, EveryKustomizationRendersAndPassesTheSchemaCheck) {
  testing::ScopedTempDir tmp;
  const std::string crd =
      "'" + (kKube / "base" / "crd-gpuverticalpodautoscaler.yaml").string() + "'";
  for (const std::string dir :
       {"overlays/report-only", "overlays/nonprod-auto", "overlays/postgres-ledger", "monitoring",
        "examples", "node-agent"}) {
    const std::string rendered = Kustomize(dir);
    int rc = 0;
    // The examples' GpuVerticalPodAutoscaler is checked against the CRD's schema.
    const std::string out = SchemaCheck(tmp, rendered, &rc, dir == "examples" ? crd : "");
    EXPECT_EQ(rc, 0) << dir << ":\n" << out;
    EXPECT_NE(out.find(" objects valid"), std::string::npos) << out;
    EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  }
  // The check itself fails on what the API would refuse.
  std::string broken = Kustomize("overlays/report-only");
  const size_t at = broken.find("replicas: 2");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 11, "replicas: two");
  int rc = 0;
  const std::string out = SchemaCheck(tmp, broken, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("replicas must be integer"), std::string::npos) << out;
}

TEST(ManifestsTest, TheOverlaysDifferInThePolicyModeAndTheReportOnlyCeiling) {
  std::map<std::string, std::string> mode;
  std::map<std::string, int> ceilings;
  for (const std::string& overlay : kOverlays) {
    for (const YAML::Node& doc : Docs(Kustomize(overlay))) {
      if (doc["kind"].as<std::string>() == "Deployment" &&
          doc["metadata"]["name"].as<std::string>() == "gpuvpa-updater")
        for (const YAML::Node& a : doc["spec"]["template"]["spec"]["containers"][0]["args"])
          if (a.as<std::string>().rfind("--max-mode", 0) == 0) {
            EXPECT_EQ(a.as<std::string>(), "--max-mode=Report") << overlay;
            ++ceilings[overlay];
          }
      if (doc["kind"].as<std::string>() != "ConfigMap" ||
          doc["metadata"]["name"].as<std::string>() != "gpuvpa-updater-policy")
        continue;
      Result<updater::UpdaterPolicy> policy =
          updater::ParseUpdaterPolicy(doc["data"]["policy.yaml"].as<std::string>());
      ASSERT_TRUE(policy.ok()) << overlay << ": " << policy.status().message();
      mode[overlay] = std::string(updater::UpdateModeName(policy->default_mode));
      EXPECT_TRUE(policy->production.Matches("payments-prod", {})) << overlay;
      EXPECT_TRUE(policy->production.Matches("team-a", {{"environment", "production"}})) << overlay;
    }
  }
  EXPECT_EQ(mode["overlays/report-only"], "Report");
  EXPECT_EQ(mode["overlays/nonprod-auto"], "Auto");
  EXPECT_EQ(ceilings["overlays/report-only"], 1) << "the updater runs with --max-mode=Report";
  EXPECT_EQ(ceilings["overlays/nonprod-auto"], 0);
}

TEST(ManifestsTest, NoContainerRunsAsRootOrWithPrivileges) {
  for (const std::string& overlay : kOverlays) {
    int pods = 0, containers = 0;
    for (const YAML::Node& doc : Docs(Kustomize(overlay))) {
      const std::string kind = doc["kind"].as<std::string>();
      if (kind != "Deployment" && kind != "StatefulSet" && kind != "DaemonSet" && kind != "Job")
        continue;
      ++pods;
      const std::string name = doc["metadata"]["name"].as<std::string>();
      const YAML::Node pod = doc["spec"]["template"]["spec"];
      EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>(false)) << name;
      EXPECT_NE(pod["securityContext"]["runAsUser"].as<int>(0), 0) << name;
      EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(""),
                "RuntimeDefault")
          << name;
      EXPECT_FALSE(pod["hostNetwork"].as<bool>(false)) << name;
      EXPECT_FALSE(pod["hostPID"].as<bool>(false)) << name;
      // Only the updater calls the Kubernetes API.
      EXPECT_EQ(pod["automountServiceAccountToken"].as<bool>(true), name == "gpuvpa-updater")
          << name;
      for (const std::string list : {"containers", "initContainers"}) {
        for (const YAML::Node& c : pod[list]) {
          ++containers;
          const std::string who = name + "/" + c["name"].as<std::string>();
          const YAML::Node sc = c["securityContext"];
          EXPECT_TRUE(sc["runAsNonRoot"].as<bool>(false)) << who;
          EXPECT_NE(sc["runAsUser"].as<int>(1), 0) << who;
          EXPECT_FALSE(sc["privileged"].as<bool>(false)) << who;
          EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true)) << who;
          EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false)) << who;
          ASSERT_TRUE(sc["capabilities"]["drop"].IsSequence()) << who;
          EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(""), "ALL") << who;
          EXPECT_FALSE(sc["capabilities"]["add"]) << who;
          EXPECT_TRUE(c["resources"]["requests"]["cpu"] && c["resources"]["requests"]["memory"])
              << who;
          EXPECT_TRUE(c["resources"]["limits"]["memory"]) << who;
          EXPECT_TRUE(c["readinessProbe"] && c["livenessProbe"]) << who;
        }
      }
    }
    EXPECT_EQ(pods, 3) << overlay << ": recommender, updater, scaler";
    EXPECT_EQ(containers, 3) << overlay;
  }
}

// (apiGroup, resource, verb, namespace-scoped?) as the issue lists them.
using Grant = std::tuple<std::string, std::string, std::string, bool>;

// Every (group, resource, verb) a Role or ClusterRole grants.
void AddGrants(const YAML::Node& role, std::set<Grant>* granted) {
  const bool namespaced = role["kind"].as<std::string>() == "Role";
  for (const YAML::Node& rule : role["rules"])
    for (const YAML::Node& g : rule["apiGroups"])
      for (const YAML::Node& r : rule["resources"])
        for (const YAML::Node& v : rule["verbs"])
          granted->insert(
              {g.as<std::string>(), r.as<std::string>(), v.as<std::string>(), namespaced});
}

TEST(ManifestsTest, RbacGrantsNothingBeyondTheUpdatersList) {
  const std::set<Grant> allowed = [] {
    std::set<Grant> g;
    for (const char* r : {"deployments", "statefulsets"})
      for (const char* v : {"get", "list", "watch", "patch"}) g.insert({"apps", r, v, false});
    g.insert({"", "events", "create", false});
    for (const char* r : {"namespaces", "pods"})
      for (const char* v : {"get", "list", "watch"}) g.insert({"", r, v, false});
    for (const char* v : {"get", "create", "update"})
      g.insert({"coordination.k8s.io", "leases", v, true});
    for (const char* v : {"get", "list", "watch"})
      g.insert({"gpuvpa.io", "gpuverticalpodautoscalers", v, false});
    for (const char* v : {"patch", "update"})
      g.insert({"gpuvpa.io", "gpuverticalpodautoscalers/status", v, false});
    return g;
  }();
  for (const std::string& overlay : kOverlays) {
    // Report only: no write verb on any workload.
    std::set<Grant> expected = allowed;
    if (overlay == "overlays/report-only" || overlay == "overlays/postgres-ledger")
      for (const char* r : {"deployments", "statefulsets"})
        expected.erase({"apps", r, "patch", false});
    std::set<Grant> granted;
    std::set<std::string> bound_subjects;
    for (const YAML::Node& doc : Docs(Kustomize(overlay))) {
      const std::string kind = doc["kind"].as<std::string>();
      if (kind == "RoleBinding" || kind == "ClusterRoleBinding")
        for (const YAML::Node& s : doc["subjects"])
          bound_subjects.insert(s["kind"].as<std::string>() + "/" + s["name"].as<std::string>());
      if (kind != "Role" && kind != "ClusterRole") continue;
      EXPECT_FALSE(doc["aggregationRule"]) << "no aggregated roles";
      for (const YAML::Node& rule : doc["rules"]) {
        EXPECT_FALSE(rule["nonResourceURLs"]) << YAML::Dump(rule);
        EXPECT_FALSE(rule["resourceNames"] && kind == "ClusterRole") << YAML::Dump(rule);
      }
      AddGrants(doc, &granted);
    }
    for (const Grant& g : granted)
      EXPECT_TRUE(expected.count(g))
          << overlay << ": grants " << std::get<2>(g) << " on " << std::get<0>(g) << "/"
          << std::get<1>(g) << (std::get<3>(g) ? " (namespaced)" : " (cluster-wide)");
    EXPECT_EQ(granted, expected) << overlay << ": the updater needs every grant of the list";
    EXPECT_EQ(bound_subjects, std::set<std::string>{"ServiceAccount/gpuvpa-updater"})
        << overlay << ": only the updater is bound to a role";
  }
  // The daemon tests run with what the manifests bind, so the list is also enough.
  const testing::KubeUser user = testing::KubeTestCluster::UserFromManifests("gpuvpa-updater");
  EXPECT_EQ(user.name, "system:serviceaccount:gpuvpa:gpuvpa-updater");
  EXPECT_EQ(user.rules.size(), 6u);
}

// The node agent is the one pod with host access, and it has exactly what reading per-process
// GPU figures needs, in a namespace of its own (gpuvpa's stays restricted): the host's PID
// namespace (NVML reports host pids), the kubelet's pod-resources folder read-only, root for the
// kubelet's root-only socket but no capability, GPU nodes only and off them while the GPU operator
// changes the MIG layout; RBAC: get and list pods, bound to its own service account only.
TEST(ManifestsTest, TheNodeAgentHasTheHostAccessItNeedsAndNoMore) {
  int daemonsets = 0;
  std::set<Grant> granted;
  std::set<std::string> bound, privileged_namespaces;
  for (const YAML::Node& doc : Docs(Kustomize("node-agent"))) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRoleBinding" || kind == "RoleBinding")
      for (const YAML::Node& sub : doc["subjects"])
        bound.insert(sub["namespace"].as<std::string>() + "/" + sub["name"].as<std::string>());
    if (kind == "ClusterRole" || kind == "Role") AddGrants(doc, &granted);
    if (kind == "Namespace" &&
        doc["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].as<std::string>("") ==
            "privileged")
      privileged_namespaces.insert(doc["metadata"]["name"].as<std::string>());
    if (kind != "DaemonSet") {
      EXPECT_TRUE(kind == "Namespace" || kind == "ServiceAccount" || kind == "ClusterRole" ||
                  kind == "ClusterRoleBinding" || kind == "NetworkPolicy")
          << kind;
      continue;
    }
    ++daemonsets;
    const YAML::Node pod = doc["spec"]["template"]["spec"];
    EXPECT_TRUE(pod["hostPID"].as<bool>(false));
    EXPECT_FALSE(pod["hostNetwork"].as<bool>(false));
    EXPECT_FALSE(pod["hostIPC"].as<bool>(false));
    EXPECT_EQ(pod["runtimeClassName"].as<std::string>(""), "nvidia");
    EXPECT_EQ(pod["nodeSelector"]["nvidia.com/gpu.present"].as<std::string>(""), "true");
    EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(""),
              "RuntimeDefault");
    // Scheduled where the operator's client label is "true" or absent, never while paused.
    std::set<std::string> terms;
    for (const YAML::Node& term :
         pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"])
      for (const YAML::Node& e : term["matchExpressions"]) {
        std::string t = e["key"].as<std::string>() + " " + e["operator"].as<std::string>();
        for (const YAML::Node& v : e["values"]) t += " " + v.as<std::string>();
        terms.insert(t);
      }
    EXPECT_EQ(terms, (std::set<std::string>{"nvidia.com/gpu.deploy.client In true",
                                            "nvidia.com/gpu.deploy.client DoesNotExist"}));
    // The one hostPath: the pod-resources folder, mounted read-only.
    std::set<std::string> host_paths;
    for (const YAML::Node& v : pod["volumes"])
      if (v["hostPath"]) host_paths.insert(v["name"].as<std::string>());
    EXPECT_EQ(host_paths, std::set<std::string>{"pod-resources"});
    ASSERT_EQ(pod["containers"].size(), 1u);
    const YAML::Node c = pod["containers"][0];
    for (const YAML::Node& m : c["volumeMounts"])
      if (host_paths.count(m["name"].as<std::string>())) {
        EXPECT_EQ(m["mountPath"].as<std::string>(), "/var/lib/kubelet/pod-resources");
        EXPECT_TRUE(m["readOnly"].as<bool>(false));
      }
    const YAML::Node sc = c["securityContext"];
    EXPECT_FALSE(sc["privileged"].as<bool>(true));
    EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
    EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
    ASSERT_TRUE(sc["capabilities"]["drop"].IsSequence());
    EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(""), "ALL");
    EXPECT_FALSE(sc["capabilities"]["add"]) << "NVML needs no capability";
    std::map<std::string, std::string> env;
    for (const YAML::Node& e : c["env"])
      env[e["name"].as<std::string>()] =
          e["value"] ? e["value"].as<std::string>()
                     : e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
    EXPECT_EQ(env["NODE_NAME"], "spec.nodeName");
    EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "all");
    EXPECT_TRUE(c["readinessProbe"] && c["livenessProbe"]);
    EXPECT_TRUE(c["resources"]["limits"]["memory"]);
  }
  EXPECT_EQ(daemonsets, 1);
  EXPECT_EQ(granted, (std::set<Grant>{{"", "pods", "get", false}, {"", "pods", "list", false}}));
  EXPECT_EQ(bound, std::set<std::string>{"gpuvpa-node-agent/gpuvpa-node-agent"});
  EXPECT_EQ(privileged_namespaces, std::set<std::string>{"gpuvpa-node-agent"})
      << "hostPID and hostPath need Pod Security's privileged level: a namespace of its own";
}

TEST(ManifestsTest, EveryMountedSecretIsMadeByMakeSecretsAndEveryConfigMapIsShipped) {
  testing::ScopedTempDir tmp;
  int rc = 0;
  // With the database's URL, as the postgres-ledger overlay's README step makes it.
  std::ofstream(tmp.Path("ledger-url")) << "postgresql://gpuvpa_writer@db.example/gpuvpa\n";
  const std::string out =
      Shell("bash '" + (kKube / "make-secrets.sh").string() + "' --ledger-url-file '" +
                tmp.Path("ledger-url") + "' '" + tmp.Path("secrets") + "'",
            &rc);
  ASSERT_EQ(rc, 0) << out;
  std::set<std::string> made;
  for (const YAML::Node& s : YAML::LoadAllFromFile(tmp.Path("secrets") + "/secrets.yaml")) {
    if (!s.IsMap()) continue;
    made.insert(s["metadata"]["namespace"].as<std::string>() + "/" +
                s["metadata"]["name"].as<std::string>());
    if (s["type"].as<std::string>() == "kubernetes.io/tls") {
      for (const char* key : {"ca.crt", "tls.crt", "tls.key"}) EXPECT_TRUE(s["data"][key]) << key;
    }
  }
  EXPECT_TRUE(made.count("gpuvpa/gpuvpa-updater-change-key")) << "the updater's change key";
  EXPECT_TRUE(made.count("gpuvpa/gpuvpa-cost-api")) << "the cost API's token";
  EXPECT_TRUE(made.count("agents/gpuvpa-scaler-client")) << "KEDA's client for the examples";
  EXPECT_EQ(out.find("PRIVATE KEY"), std::string::npos) << "keys are never printed";
  for (const std::string& overlay : kOverlays) {
    std::set<std::string> config_maps;
    const std::vector<YAML::Node> docs = Docs(Kustomize(overlay));
    for (const YAML::Node& doc : docs)
      if (doc["kind"].as<std::string>() == "ConfigMap")
        config_maps.insert(doc["metadata"]["name"].as<std::string>());
    for (const YAML::Node& doc : docs) {
      if (!doc["spec"] || !doc["spec"]["template"]) continue;
      const std::string ns = doc["metadata"]["namespace"].as<std::string>();
      for (const YAML::Node& v : doc["spec"]["template"]["spec"]["volumes"]) {
        if (v["secret"] && !v["secret"]["optional"].as<bool>(false)) {
          EXPECT_TRUE(made.count(ns + "/" + v["secret"]["secretName"].as<std::string>()))
              << v["secret"]["secretName"];
        }
        if (v["configMap"]) {
          EXPECT_TRUE(config_maps.count(v["configMap"]["name"].as<std::string>()))
              << v["configMap"]["name"];
        }
      }
    }
  }
  // The certificates chain to the CA and name the Services (decoded with base64, checked
  // with openssl).
  for (const YAML::Node& s : YAML::LoadAllFromFile(tmp.Path("secrets") + "/secrets.yaml")) {
    if (!s.IsMap()) continue;
    const std::string name = s["metadata"]["name"].as<std::string>();
    if (name == "gpuvpa-ledger-db") {  // the URL file's first line, as it was given
      std::ofstream(tmp.Path("url.b64")) << s["data"]["url"].as<std::string>();
      EXPECT_EQ(Shell("base64 -d '" + tmp.Path("url.b64") + "'", &rc),
                "postgresql://gpuvpa_writer@db.example/gpuvpa");
      continue;
    }
    if (name == "gpuvpa-cost-api") {  // 32 random bytes as hex: a token for a header
      std::ofstream(tmp.Path("token.b64")) << s["data"]["token"].as<std::string>();
      const std::string token = Shell("base64 -d '" + tmp.Path("token.b64") + "'", &rc);
      EXPECT_TRUE(token.size() == 64 &&
                  token.find_first_not_of("0123456789abcdef") == std::string::npos)
          << token.size();
      continue;
    }
    if (s["type"].as<std::string>() != "kubernetes.io/tls") {
      // The change key: at least 32 bytes, as gpuvpa-updater --change-key-file requires.
      std::ofstream(tmp.Path(name + ".b64")) << s["data"]["change.key"].as<std::string>();
      const std::string length = Shell("base64 -d '" + tmp.Path(name + ".b64") + "' | wc -c", &rc);
      EXPECT_GE(std::stoi(length), 32) << name;
      continue;
    }
    for (const char* key : {"ca.crt", "tls.crt"})
      std::ofstream(tmp.Path(name + "." + key + ".b64")) << s["data"][key].as<std::string>();
  }
  const std::string dir = "'" + tmp.Path("") + "'";
  const std::string verify = Shell(
      "cd " + dir +
          " && for f in *.b64; do base64 -d \"$f\" > \"${f%.b64}\"; done && "
          "openssl verify -CAfile gpuvpa-recommender-tls.ca.crt gpuvpa-recommender-tls.tls.crt "
          "gpuvpa-scaler-client.tls.crt gpuvpa-updater-client-tls.tls.crt && openssl x509 -noout "
          "-ext subjectAltName -in gpuvpa-recommender-tls.tls.crt",
      &rc);
  EXPECT_EQ(rc, 0) << verify;
  EXPECT_NE(verify.find("DNS:gpuvpa-recommender.gpuvpa.svc"), std::string::npos) << verify;
}

TEST(ManifestsTest, ConfigParsesWithTheComponentsOwnParsersAndEveryFlagIsKnown) {
  const std::map<std::string, std::string> binaries = {
      {"/usr/local/bin/gpuvpa-recommender", std::string(GPUVPA_BIN_DIR) + "/gpuvpa-recommender"},
      {"/usr/local/bin/gpuvpa-updater", std::string(GPUVPA_BIN_DIR) + "/gpuvpa-updater"},
      {"/usr/local/bin/gpuvpa-scaler", std::string(GPUVPA_BIN_DIR) + "/gpuvpa-scaler"},
      {"/usr/local/bin/gpuvpa-node-agent", std::string(GPUVPA_BIN_DIR) + "/gpuvpa-node-agent"}};
  std::vector<std::string> dirs = kOverlays;
  dirs.push_back("node-agent");
  for (const std::string& overlay : dirs) {
    for (const YAML::Node& doc : Docs(Kustomize(overlay))) {
      const std::string kind = doc["kind"].as<std::string>();
      if (kind == "ConfigMap" && doc["metadata"]["name"].as<std::string>() == "gpuvpa-config") {
        Result<GpuvpaConfig> config = ParseConfig(doc["data"]["gpuvpa.yaml"].as<std::string>());
        ASSERT_TRUE(config.ok()) << config.status().message();
        Result<recommender::DaemonConfig> daemon =
            recommender::ParseDaemonConfig(config->recommender_yaml, "gpuvpa.yaml");
        EXPECT_TRUE(daemon.ok()) << daemon.status().message();
      }
      if (kind == "ConfigMap" &&
          doc["metadata"]["name"].as<std::string>() == "gpuvpa-scaler-config") {
        Result<scaler::ScalerConfig> config =
            scaler::ParseScalerConfig(doc["data"]["scaler.yaml"].as<std::string>(), "scaler.yaml");
        EXPECT_TRUE(config.ok()) << config.status().message();
      }
      if (!doc["spec"] || !doc["spec"]["template"]) continue;
      for (const YAML::Node& c : doc["spec"]["template"]["spec"]["containers"]) {
        const std::string binary = binaries.at(c["command"][0].as<std::string>());
        std::string help_cmd = "'" + binary + "'";
        if (c["command"].size() > 1) help_cmd += " " + c["command"][1].as<std::string>();
        int rc = 0;
        const std::string help = Shell(help_cmd + " --help", &rc);
        ASSERT_EQ(rc, 0) << help;
        for (const YAML::Node& a : c["args"]) {
          const std::string arg = a.as<std::string>();
          const std::string flag = arg.substr(0, arg.find('='));
          EXPECT_NE(help.find(flag + " "), std::string::npos)
              << binary << " does not know " << flag;
        }
      }
    }
  }
}

TEST(ManifestsTest, TheExampleScaledObjectsAreAcceptedByTheScalersOwnParser) {
  int triggers = 0;
  for (const YAML::Node& doc : Docs(Kustomize("examples"))) {
    if (doc["kind"].as<std::string>() != "ScaledObject") continue;
    for (const YAML::Node& trigger : doc["spec"]["triggers"]) {
      ++triggers;
      const std::string type = trigger["type"].as<std::string>();
      EXPECT_TRUE(type == "external" || type == "external-push") << type;
      scaler::TriggerMetadata metadata;  // what KEDA forwards: the trigger's metadata verbatim,
      for (const auto& kv : trigger["metadata"]) {  // *FromEnv resolved from the workload's env
        const std::string key = kv.first.as<std::string>();
        metadata[key] =
            key == "addressFromEnv" ? "redis.queues.svc:6379" : kv.second.as<std::string>();
      }
      Result<scaler::ScaledObjectConfig> config =
          scaler::ParseScaledObjectConfig(doc["metadata"]["name"].as<std::string>(),
                                          doc["metadata"]["namespace"].as<std::string>(), metadata);
      ASSERT_TRUE(config.ok()) << config.status().message();
      EXPECT_EQ(config->cost_center, "ai-agents");
      EXPECT_EQ(config->max_replicas, doc["spec"]["maxReplicaCount"].as<int>())
          << "keep the two caps in step";
    }
  }
  EXPECT_EQ(triggers, 2);
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

// The image: every base pinned by digest, a non-root user, a build context without .git or
// build folders, and a runtime stage that installs the package of every library the binaries
// load (ldd and dpkg on this machine, which builds with the same Debian release).
TEST(DockerfileTest, PinnedNonRootAndTheRuntimeStageHasEveryLibraryTheBinariesLoad) {
  std::ifstream in(kDeploy / "Dockerfile");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const size_t base = text.find("ARG BASE=");
  ASSERT_NE(base, std::string::npos);
  const std::string base_line = text.substr(base, text.find('\n', base) - base);
  EXPECT_NE(base_line.find("@sha256:"), std::string::npos) << base_line;
  EXPECT_EQ(base_line.size(), std::string("ARG BASE=").size() +
                                  std::string("debian:bookworm-slim@sha256:").size() + 64)
      << base_line;
  std::istringstream lines(text);
  int from_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("FROM ", 0) != 0) continue;
    ++from_lines;
    EXPECT_EQ(line.rfind("FROM ${BASE}", 0), 0u) << "every stage from the pinned base: " << line;
  }
  EXPECT_EQ(from_lines, 2);
  EXPECT_NE(text.find("USER 65532:65532"), std::string::npos);
  EXPECT_NE(text.find("setup-deps.sh --build-only"), std::string::npos)
      << "the build stage installs no test servers";

  std::ifstream ignore(std::filesystem::path(GPUVPA_SOURCE_DIR) / ".dockerignore");
  std::set<std::string> ignored;
  for (std::string line; std::getline(ignore, line);) ignored.insert(line);
  for (const char* must : {".git", "build*", "out", "**/node_modules"})
    EXPECT_TRUE(ignored.count(must)) << must;

  int rc = 0;
  const std::string bin = GPUVPA_BIN_DIR;
  const std::string packages = Shell(
      "for b in '" + bin + "/gpuvpa' '" + bin + "/gpuvpa-recommender' '" + bin +
          "/gpuvpa-updater' '" + bin + "/gpuvpa-scaler' '" + bin +
          "/gpuvpa-node-agent'; do ldd \"$b\"; done | awk '/=>/{print $3}' "
          "| sort -u | while read -r f; do dpkg -S \"$(readlink -f \"$f\")\" 2>/dev/null || dpkg "
          "-S \"$f\"; done | cut -d: -f1 | sort -u",
      &rc);
  ASSERT_EQ(rc, 0) << packages;
  const std::set<std::string> in_base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"};
  std::istringstream list(packages);
  int checked = 0;
  for (std::string pkg; std::getline(list, pkg);) {
    if (pkg.empty() || in_base.count(pkg)) continue;
    // Sanitizer runtimes (this test also runs in the ASan build); the image has none.
    if (pkg.rfind("libasan", 0) == 0 || pkg.rfind("libubsan", 0) == 0) continue;
    ++checked;
    EXPECT_NE(text.find(" " + pkg + " "), std::string::npos)
        << "the runtime stage does not install " << pkg;
  }
  EXPECT_GT(checked, 5);
}

}  // namespace
}  // namespace gpuvpa

namespace gpuvpa {
namespace {

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The gpuvpa_* metric names in a PromQL expression (_bucket, _count, _sum folded to the
// histogram's name).
std::vector<std::string> GpuvpaMetricNames(const std::string& expr) {
  std::vector<std::string> names;
  for (size_t at = expr.find("gpuvpa_"); at != std::string::npos;
       at = expr.find("gpuvpa_", at + 1)) {
    size_t end = at;
    while (end < expr.size() &&
           (std::isalnum(static_cast<unsigned char>(expr[end])) || expr[end] == '_'))
      ++end;
    std::string name = expr.substr(at, end - at);
    for (const char* suffix : {"_bucket", "_count", "_sum"})
      if (name.size() > std::strlen(suffix) &&
          name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        name.resize(name.size() - std::strlen(suffix));
    names.push_back(name);
    at = end;
  }
  return names;
}

// Where the components register their metrics (a name is exported when it is quoted there).
std::string ExportingSources() {
  std::string exported;
  for (const char* dir : {"recommender/daemon", "updater/daemon", "scaler/service", "core/net"})
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(GPUVPA_SOURCE_DIR) / dir))
      if (entry.path().extension() == ".cc") exported += ReadAll(entry.path());
  return exported;
}

// Every metric the dashboard plots is one a component exports (so a rename breaks this test,
// not the dashboard); every panel has a query, a unit and the templated datasource; tables and
// single values are instant queries; the variables filter by cost center, namespace and
// workload.
TEST(DashboardTest, EveryPlottedMetricIsExportedAndEveryPanelHasAUnitAndTheVariables) {
  const nlohmann::json dashboard = nlohmann::json::parse(
      ReadAll(kKube / "monitoring" / "gpuvpa-dashboard.json"), nullptr, false);
  ASSERT_TRUE(dashboard.is_object());
  const std::string exported = ExportingSources();
  int metrics = 0;
  ASSERT_TRUE(dashboard["panels"].is_array());
  for (const nlohmann::json& panel : dashboard["panels"]) {
    ASSERT_FALSE(panel["targets"].empty()) << panel["title"];
    if (panel["datasource"]["type"] == "yesoreyeram-infinity-datasource") continue;  // below
    EXPECT_FALSE(panel["fieldConfig"]["defaults"].value("unit", "").empty()) << panel["title"];
    EXPECT_EQ(panel["datasource"]["uid"], "${datasource}") << panel["title"];
    for (const nlohmann::json& target : panel["targets"]) {
      EXPECT_EQ(target["datasource"]["uid"], "${datasource}") << panel["title"];
      if (panel["type"] == "table" || panel["type"] == "stat" || panel["type"] == "bargauge") {
        EXPECT_TRUE(target.value("instant", false)) << panel["title"] << ": an instant query";
      }
      for (const std::string& name : GpuvpaMetricNames(target["expr"])) {
        ++metrics;
        EXPECT_NE(exported.find("\"" + name + "\""), std::string::npos)
            << panel["title"] << ": " << name << " is exported by no component";
      }
    }
  }
  EXPECT_GT(metrics, 15);
  std::set<std::string> variables;
  for (const nlohmann::json& v : dashboard["templating"]["list"]) variables.insert(v["name"]);
  EXPECT_EQ(variables, (std::set<std::string>{"datasource", "costapi", "cost_center", "namespace",
                                              "workload"}));
}

// The panels that read the cost API (Infinity datasource): a query the API accepts, and every
// column a field of the API's answer for that query on the demo ledger.
TEST(DashboardTest, CostApiPanelsAskWhatTheApiServesAndReadFieldsItAnswers) {
  const nlohmann::json dashboard = nlohmann::json::parse(
      ReadAll(kKube / "monitoring" / "gpuvpa-dashboard.json"), nullptr, false);
  testing::ScopedTempDir temp;
  const std::string ledger_path = temp.Path("demo.db");
  std::filesystem::copy_file(std::string(GPUVPA_SOURCE_DIR) + "/test/data/ledger/demo-v2.db",
                             ledger_path);
  std::unique_ptr<Ledger> ledger = std::move(Ledger::Open(ledger_path)).value();
  int panels = 0;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    if (panel["datasource"]["type"] != "yesoreyeram-infinity-datasource") continue;
    ++panels;
    EXPECT_EQ(panel["datasource"]["uid"], "${costapi}") << panel["title"];
    EXPECT_FALSE(panel["fieldConfig"]["defaults"].value("unit", "").empty()) << panel["title"];
    for (const nlohmann::json& target : panel["targets"]) {
      EXPECT_EQ(target["datasource"]["uid"], "${costapi}");
      const std::string url = target["url"];
      EXPECT_TRUE(url == "/allocation" || url == "/allocation/compute") << url;
      std::string query;
      for (const nlohmann::json& p : target["url_options"]["params"])
        query += (query.empty() ? "" : "&") + p["key"].get<std::string>() + "=" +
                 p["value"].get<std::string>();
      // The demo week lies 2026-11-02..09: "30d" is asked as of 2026-11-20.
      Result<AllocationRequest> request =
          ParseAllocationRequest(query, static_cast<int64_t>(*ParseTimestamp("2026-11-20")));
      ASSERT_TRUE(request.ok()) << query << ": " << request.status().message();
      Result<std::string> body = AllocationResponse(*ledger, *request);
      ASSERT_TRUE(body.ok()) << body.status().message();
      const nlohmann::json answer = nlohmann::json::parse(*body);
      ASSERT_EQ(target["root_selector"], "$.data[0].*") << "one map: accumulate=true";
      ASSERT_EQ(answer["data"].size(), 1u);
      ASSERT_FALSE(answer["data"][0].empty());
      for (const nlohmann::json& column : target["columns"]) {
        const std::string selector = column["selector"];
        for (const auto& [name, allocation] : answer["data"][0].items()) {
          const nlohmann::json::json_pointer pointer("/" + [](std::string s) {
            std::replace(s.begin(), s.end(), '.', '/');
            return s;
          }(selector));
          ASSERT_TRUE(allocation.contains(pointer)) << selector << " is not in " << name;
          EXPECT_EQ(allocation[pointer].is_string(), column["type"] == "string") << selector;
        }
      }
    }
  }
  EXPECT_EQ(panels, 1);
}

// The kube-state-metrics allow-lists shipped for the install name exactly the cost-center keys
// the shipped config reads, for every kind whose annotations the recommender queries.
TEST(KubeStateMetricsTest, TheShippedAllowListsNameTheConfiguredCostCenterKeys) {
  std::string label_key, annotation_key;
  for (const YAML::Node& doc : Docs(Kustomize("overlays/report-only")))
    if (doc["kind"].as<std::string>() == "ConfigMap" &&
        doc["metadata"]["name"].as<std::string>() == "gpuvpa-config") {
      const YAML::Node config = YAML::Load(doc["data"]["gpuvpa.yaml"].as<std::string>());
      label_key = config["cost_centers"]["namespace_label_key"].as<std::string>();
      annotation_key = config["cost_centers"]["workload_annotation_key"].as<std::string>();
    }
  ASSERT_FALSE(label_key.empty());
  ASSERT_FALSE(annotation_key.empty());
  const std::string path = (kKube / "monitoring" / "kube-state-metrics-values.yaml").string();
  const YAML::Node values = YAML::LoadFile(path)["kube-state-metrics"];
  std::set<std::string> labels, annotations;
  for (const YAML::Node& v : values["metricLabelsAllowlist"]) labels.insert(v.as<std::string>());
  for (const YAML::Node& v : values["metricAnnotationsAllowlist"])
    annotations.insert(v.as<std::string>());
  EXPECT_EQ(labels, std::set<std::string>{"namespaces=[" + label_key + "]"});
  std::set<std::string> expected;
  for (const char* kind : {"deployments", "statefulsets", "daemonsets", "jobs", "cronjobs"})
    expected.insert(std::string(kind) + "=[" + annotation_key + "]");
  EXPECT_EQ(annotations, expected);
  // The flag form in the file's header says the same.
  const std::string text = ReadAll(path);
  EXPECT_NE(text.find("--metric-labels-allowlist=namespaces=[" + label_key + "]"),
            std::string::npos);
  EXPECT_NE(text.find("--metric-annotations-allowlist=deployments=[" + annotation_key + "]"),
            std::string::npos);
}

// The alert rules load in promtool (`promtool check rules`) and name only exported metrics.
TEST(AlertRulesTest, PromtoolChecksTheRulesAndEveryMetricIsExported) {
  testing::ScopedTempDir tmp;
  const std::vector<YAML::Node> docs = Docs(Kustomize("monitoring"));
  const std::string exported = ExportingSources();
  int rules = 0;
  std::set<std::string> alerts;
  for (const YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>() != "PrometheusRule") continue;
    EXPECT_TRUE(doc["metadata"]["labels"]["release"]) << "the selector label, set in one place";
    YAML::Node file;
    file["groups"] = doc["spec"]["groups"];
    std::ofstream(tmp.Path("rules.yaml")) << YAML::Dump(file);
    for (const YAML::Node& group : doc["spec"]["groups"])
      for (const YAML::Node& rule : group["rules"]) {
        ++rules;
        alerts.insert(rule["alert"].as<std::string>());
        for (const std::string& name : GpuvpaMetricNames(rule["expr"].as<std::string>()))
          EXPECT_NE(exported.find("\"" + name + "\""), std::string::npos)
              << rule["alert"] << ": " << name << " is exported by no component";
      }
  }
  ASSERT_GE(rules, 6);
  for (const char* must :
       {"GpuvpaRecommenderNotReady", "GpuvpaPrometheusUnreachable", "GpuvpaLedgerRowsRefused",
        "GpuvpaLedgerSpoolGrowing", "GpuvpaScalerErrors", "GpuvpaRollback"})
    EXPECT_TRUE(alerts.count(must)) << must;
  int rc = 0;
  const std::string out = Shell("promtool check rules '" + tmp.Path("rules.yaml") + "'", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("SUCCESS: " + std::to_string(rules) + " rules found"), std::string::npos)
      << out;
  // The check itself fails on a broken expression.
  std::string broken = ReadAll(tmp.Path("rules.yaml"));
  broken.replace(broken.find("> 600"), 5, "> > 600");
  std::ofstream(tmp.Path("broken.yaml")) << broken;
  Shell("promtool check rules '" + tmp.Path("broken.yaml") + "'", &rc);
  EXPECT_NE(rc, 0);
}

}  // namespace
}  // namespace gpuvpa
