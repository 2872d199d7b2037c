// Policy checks on the shipped Kubernetes manifests: every container runs as non-root, without
// privilege escalation, on a read-only root filesystem with no capabilities, and no workload
// gets a service-account token it does not need.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "scaler/metadata/scaled_object_config.h"

namespace gpuvpa {
namespace {

const std::filesystem::path kManifests =
    std::filesystem::path(GPUVPA_SOURCE_DIR) / "deploy" / "kubernetes";

std::vector<YAML::Node> LoadAll() {
  std::vector<YAML::Node> docs;
  for (const auto& entry : std::filesystem::directory_iterator(kManifests)) {
    if (entry.path().extension() != ".yaml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string()))
      if (doc && doc.IsMap()) docs.push_back(doc);
  }
  return docs;
}

TEST(ManifestsTest, EveryDocumentParsesAndNamesItsKind) {
  const std::vector<YAML::Node> docs = LoadAll();
  ASSERT_GE(docs.size(), 5u);
  for (const YAML::Node& doc : docs) {
    EXPECT_TRUE(doc["apiVersion"] && doc["kind"] && doc["metadata"]["name"]) << YAML::Dump(doc);
  }
}

TEST(ManifestsTest, ContainersRunAsNonRootWithLeastPrivilege) {
  int containers = 0;
  for (const YAML::Node& doc : LoadAll()) {
    if (doc["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node pod = doc["spec"]["template"]["spec"];
    EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>()) << doc["metadata"]["name"];
    EXPECT_FALSE(pod["automountServiceAccountToken"].as<bool>(true))
        << "the scaler never calls the API";
    for (const YAML::Node& c : pod["containers"]) {
      ++containers;
      const YAML::Node sc = c["securityContext"];
      EXPECT_TRUE(sc["runAsNonRoot"].as<bool>(false)) << c["name"];
      EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true)) << c["name"];
      EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false)) << c["name"];
      EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(""), "ALL") << c["name"];
      EXPECT_TRUE(c["resources"]["limits"]["memory"]) << c["name"];
    }
  }
  EXPECT_GT(containers, 0);
}

TEST(ManifestsTest, TheExampleScaledObjectIsAcceptedByTheScalersOwnParser) {
  int triggers = 0;
  for (const YAML::Node& doc : LoadAll()) {
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
  EXPECT_GT(triggers, 0);
}

}  // namespace
}  // namespace gpuvpa
