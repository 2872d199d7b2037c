// Owner reports of a plan, grouped by cost center, then namespace: a self-contained HTML page
// (inline SVG charts, no network), Markdown for a pull request, JSON (schema
// "gpuvpa.plan-report/v1", documented in updater/README.md) and CSV (RFC 4180).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cost/money.h"
#include "updater/plan/planner.h"

namespace gpuvpa::updater {

inline constexpr std::string_view kReportSchema = "gpuvpa.plan-report/v1";

// What the charts of one workload show: its VRAM peak and SM histograms (weights normalised to
// sum 1) and a week of activity by hour.
struct WorkloadCharts {
  struct Bar {
    double from = 0;  // bucket start and end, in bytes (VRAM) or ratio (SM)
    double to = 0;
    double weight = 0;
  };
  std::vector<Bar> vram;
  std::vector<Bar> sm;
  int64_t latest_hour = -1;  // Unix hour of the last cell; -1: no activity known
  // Oldest first; the share of samples that were active in each hour, NaN for an hour without
  // a sample.
  std::vector<double> hourly_active_ratio;
};

// The charts a recommendation carries (v1::Recommendation.charts), normalised for drawing (an
// hour without a sample is NaN); nothing when it carries none.
std::optional<WorkloadCharts> ChartsOf(const v1::Recommendation& recommendation);

// The charts of each action's evidence, by action index (ReportInput::charts).
std::vector<std::optional<WorkloadCharts>> ChartsOf(const std::vector<PlannedAction>& actions);

struct ReportInput {
  std::vector<PlannedAction> actions;
  std::vector<std::optional<WorkloadCharts>> charts;  // by action index, or empty
  int64_t generated_at_s = 0;
  int64_t as_of_s = 0;              // the evidence runs to this time
  std::string source;               // where the recommendations came from
  ScaleToZeroPolicy scale_to_zero;  // what proposed ScaledObjects point at
};

struct NamespaceGroup {
  std::string name;
  std::vector<size_t> actions;  // indices into ReportInput::actions, largest saving first
};

struct CostCenterGroup {
  std::string name;
  MicroUsd idle_tax = 0;  // VRAM basis, over the history, where priced
  MicroUsd monthly_before = 0;
  MicroUsd monthly_after = 0;
  size_t changes = 0;
  std::vector<NamespaceGroup> namespaces;

  MicroUsd monthly_savings() const { return monthly_before - monthly_after; }
};

// Cost centers and namespaces in name order. Sums are checked: an overflow is an error.
Result<std::vector<CostCenterGroup>> GroupByCostCenter(const std::vector<PlannedAction>& actions);

// The sum of the groups (name empty, namespaces none): the plan's totals. Checked sums.
Result<CostCenterGroup> TotalOf(const std::vector<CostCenterGroup>& groups);

// One YAML document of a change, with the command that applies it.
struct ChangeDocument {
  std::string title;    // what it does, and whether it changes an object or creates one
  std::string file;     // the name the command reads it from
  std::string command;  // kubectl patch (a change) or kubectl apply (a new object)
  std::string yaml;     // exactly one document
};

// The exact change to apply, one document each: a strategic-merge patch of the owner's pod
// template (resource names and, for a GPU model change, the node selector), and for
// scale-to-zero on a known queue a KEDA ScaledObject on gpuvpa's scaler (none without a known
// queue: the proposal is then an idle-timeout scale-down). Empty when nothing changes.
std::vector<ChangeDocument> ChangeDocuments(const PlannedAction& action,
                                            const ScaleToZeroPolicy& scale_to_zero);
// The documents joined as a multi-document stream, each headed by its command as a comment.
std::string YamlChange(const PlannedAction& action, const ScaleToZeroPolicy& scale_to_zero);

// "ns/Kind/name/container"
std::string ActionDisplayName(const PlannedAction& action);
// What the action does, target included: "MIG instance nvidia.com/mig-1g.10gb=1",
// "shared GPU nvidia.com/gpu.shared=1/4 + idle-timeout scale-down (no known queue)".
std::string ActionLabel(const PlannedAction& action);
// For a scale-to-zero without a known queue: what to do instead (an idle timeout) and how to
// get a ScaledObject proposed; "" for any other action.
std::string IdleScaleDownAdvice(const PlannedAction& action);
// When more than kUnallocatedWarningRatio of the workloads have no cost center: a warning for
// the top of every report (the labels are probably not exported by kube-state-metrics); else "".
std::string UnallocatedWarning(const std::vector<PlannedAction>& actions);
// The SM need, per GPU and in total for a multi-GPU pod: "12 % of a GPU", "1 % of each of 4
// GPUs (0.04 GPU in total)".
std::string SmNeedText(const PlannedAction& action);

Result<std::string> RenderHtmlReport(const ReportInput& input);
// For a pull-request comment: under GitHub's 65,536-character limit whatever the fleet (a
// summary, a narrow table of the changes, details in collapsed blocks while they fit; the rest
// is named as being in the other formats).
inline constexpr size_t kMarkdownReportBudget = 60'000;
Result<std::string> RenderMarkdownReport(const ReportInput& input);
Result<std::string> RenderJsonReport(const ReportInput& input);
std::string RenderCsvReport(const ReportInput& input);

}  // namespace gpuvpa::updater
