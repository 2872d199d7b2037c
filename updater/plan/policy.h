// Update policy: which namespaces may have their GPU requests changed, and how. Modes per
// namespace are Off (nothing), Report (the default: proposals and reports only) and Auto (apply);
// a namespace the production selector matches is never Auto, whatever else says so. A workload
// opts out with an annotation. The thresholds say when a change is worth proposing at all.
//
// Policy file (YAML; unknown keys are errors naming the key):
//   default_mode: Report
//   namespaces: {ml-dev: Auto, research: Off}
//   production:                                   # added to the built-in selector
//     label_keys: [stage]                         # (updater/plan/production.h)
//     label_values: [live]
//     name_words: [live]
//     name_patterns: ["pay-*"]
//   opt_out_annotation: gpuvpa.io/opt-out        # on the workload or its pod template
//   min_change_ratio: 0.10
//   min_confidence: 1.0
//   allowed_gpu_models: [L4-24GB]                 # other models a workload may move to
//   shared_gpu_replicas: [2, 4]                   # the time-slicing replica counts nodes offer
//   scale_to_zero: {max_active_duty: 0.25, min_idle_hours_ratio: 0.5, min_idle_gap_hours: 2,
//                   scaler_address: "gpuvpa-scaler.gpuvpa.svc:9090", queue_address: "redis:6379"}
//   namespace_labels: {ml-prod: {environment: production}}   # what the cluster would say,
//   workload_annotations: {"ml-dev/Deployment/x": {gpuvpa.io/opt-out: "true"}}  # offline
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "updater/plan/production.h"

namespace gpuvpa::updater {

enum class UpdateMode { kOff, kReport, kAuto };
std::string_view UpdateModeName(UpdateMode mode);
Result<UpdateMode> ParseUpdateMode(std::string_view text);

struct ScaleToZeroPolicy {
  // Proposed only when the workload is active at most this share of its time, ...
  double max_active_duty = 0.25;
  // ... at least this share of its observed hours had no activity at all (a cold start of a
  // GPU pod takes minutes: only whole idle hours pay for it), ...
  double min_idle_hours_ratio = 0.5;
  // ... and it has been idle for this long at a stretch.
  double min_idle_gap_s = 2 * 3600.0;
  // What the proposed KEDA ScaledObject points at.
  std::string scaler_address = "gpuvpa-scaler.gpuvpa.svc:9090";
  std::string queue_address = "redis.queues.svc:6379";
};

struct UpdaterPolicy {
  UpdateMode default_mode = UpdateMode::kReport;
  std::map<std::string, UpdateMode, std::less<>> namespace_modes;
  // The ceiling no namespace, GVPA or policy entry goes above (gpuvpa-updater --max-mode; the
  // report-only install sets Report): Report means no workload is ever patched or rolled back.
  UpdateMode max_mode = UpdateMode::kAuto;
  ProductionSelector production;
  std::string opt_out_annotation = "gpuvpa.io/opt-out";
  // Propose a change only when the current capacity lies outside [lower, upper] or the monthly
  // cost moves by at least this share (VPA's 10 %).
  double min_change_ratio = 0.10;
  // VPA's confidence (days of history, bounded by samples): no proposal below it.
  double min_confidence = 1.0;
  std::vector<std::string> allowed_gpu_models;
  std::vector<int> shared_gpu_replicas = {2, 4};
  ScaleToZeroPolicy scale_to_zero;
  // What the cluster says about namespaces and workloads (filled from the API by the daemon;
  // from the policy file offline). Workload keys are "namespace/Kind/name".
  std::map<std::string, Labels, std::less<>> namespace_labels;
  std::map<std::string, Labels, std::less<>> workload_annotations;
};

// "namespace/Kind/name": how workload_annotations (and the updater's maps) key an owner.
std::string PolicyWorkloadKey(std::string_view namespace_name, std::string_view owner_kind,
                              std::string_view owner_name);

Result<UpdaterPolicy> ParseUpdaterPolicy(std::string_view yaml_text);
// An empty path gives the defaults.
Result<UpdaterPolicy> LoadUpdaterPolicy(const std::string& path);

// What the policy says for one workload.
struct PolicyDecision {
  UpdateMode mode = UpdateMode::kReport;
  bool production = false;
  bool opted_out = false;
  std::string reason;  // why the mode is what it is
};

PolicyDecision DecidePolicy(const UpdaterPolicy& policy, std::string_view namespace_name,
                            std::string_view owner_kind, std::string_view owner_name);

}  // namespace gpuvpa::updater
