// The GpuVerticalPodAutoscaler resource (deploy/kubernetes/crd-gpuverticalpodautoscaler.yaml):
// its spec parsed once into a typed value (errors name the field and the value), and its status
// built from the planner's actions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "updater/plan/container_decision.h"
#include "updater/plan/planner.h"

namespace gpuvpa::updater {

struct Gvpa {
  std::string ns;
  std::string name;
  std::string uid;
  int64_t generation = 0;
  std::string target_kind;  // Deployment, StatefulSet, Job
  std::string target_name;
  UpdateMode mode = UpdateMode::kReport;
  std::vector<GvpaContainerPolicy> containers;
  std::optional<GvpaRollback> rollback;
  nlohmann::json conditions = nlohmann::json::array();  // as stored

  // The policy for a container ("*" when it has none of its own), or null.
  const GvpaContainerPolicy* PolicyFor(const std::string& container) const;
};

Result<Gvpa> ParseGvpa(const nlohmann::json& object);

// A Kubernetes quantity ("12Gi", "500M", "1.5e9", 1073741824) in bytes.
Result<double> ParseQuantityBytes(const nlohmann::json& value);
// Bytes as a binary quantity, rounded up to MiB ("12Gi", "1536Mi").
std::string FormatQuantityBytes(double bytes);

struct GvpaStatusInput {
  std::vector<PlannedAction> actions;  // one per container with a recommendation
  std::string applied;                 // the allocation applied last ("" if none)
  nlohmann::json last_applied;         // status.lastApplied to keep (null: none)
  std::optional<GvpaRollback> rollback;
  std::string now;  // RFC 3339
};

// The status subresource's content: per container recommendation, summary (printer columns)
// and conditions (lastTransitionTime kept while a condition's status does not change).
nlohmann::json BuildGvpaStatus(const Gvpa& gvpa, const GvpaStatusInput& input);

}  // namespace gpuvpa::updater
