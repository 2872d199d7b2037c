// DCGM-shaped history for the benches that read a real Prometheus: one DCGM_FI_DEV_FB_USED and
// one DCGM_FI_PROF_SM_ACTIVE series per GPU at 60 s (8 GPUs per host, one pod per GPU, pods
// w<g>-0 of StatefulSets in namespaces ns-<g % 50>), optionally with kube_namespace_labels
// naming a cost center per namespace; backfilled with promtool into a TSDB directory.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace gpuvpa::bench {

struct DcgmHistory {
  int gpus = 1;
  double start_s = 0;             // the first sample (Unix seconds, a multiple of 60)
  int steps = 1;                  // samples per series, 60 s apart
  bool namespace_labels = false;  // kube_namespace_labels{label_cost_center="team-<ns % 10>"}
};

inline constexpr int kDcgmHistoryNamespaces = 50;

// OpenMetrics text at `path`; false when it cannot be written.
inline bool WriteDcgmHistory(const std::string& path, const DcgmHistory& h) {
  std::ofstream om(path);
  char line[512];
  for (const char* metric : {"DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_SM_ACTIVE"}) {
    om << "# TYPE " << metric << " gauge\n";
    for (int g = 0; g < h.gpus; ++g) {
      for (int s = 0; s < h.steps; ++s) {
        const double v =
            metric[8] == 'D' ? 10000 + (g * 37 + s * 11) % 60000 : ((g * 13 + s * 7) % 100) / 100.0;
        std::snprintf(line, sizeof line,
                      "%s{gpu=\"%d\",UUID=\"GPU-%d\",modelName=\"NVIDIA H100 80GB HBM3\","
                      "Hostname=\"node-%d\",namespace=\"ns-%d\",pod=\"w%d-0\",container=\"c\"} "
                      "%g %.0f\n",
                      metric, g % 8, g, g / 8, g % kDcgmHistoryNamespaces, g, v,
                      h.start_s + s * 60.0);
        om << line;
      }
    }
  }
  if (h.namespace_labels) {
    om << "# TYPE kube_namespace_labels gauge\n";
    for (int ns = 0; ns < kDcgmHistoryNamespaces; ++ns)
      for (int s = 0; s < h.steps; ++s) {
        std::snprintf(line, sizeof line,
                      "kube_namespace_labels{namespace=\"ns-%d\",label_cost_center=\"team-%d\"} 1 "
                      "%.0f\n",
                      ns, ns % 10, h.start_s + s * 60.0);
        om << line;
      }
  }
  om << "# EOF\n";
  return static_cast<bool>(om.flush());
}

// promtool tsdb create-blocks-from openmetrics `om_path` into `tsdb_dir` (its log beside it);
// the OpenMetrics file is removed afterwards. False, with `error` set, when promtool fails.
inline bool BackfillDcgmHistory(const std::string& om_path, const std::string& tsdb_dir,
                                std::string* error) {
  const std::string log = tsdb_dir + ".promtool.log";
  const std::string cmd = "promtool tsdb create-blocks-from openmetrics '" + om_path + "' '" +
                          tsdb_dir + "' > '" + log + "' 2>&1";
  const bool ok = std::system(cmd.c_str()) == 0;
  std::remove(om_path.c_str());
  if (!ok) *error = "promtool failed; see " + log;
  return ok;
}

}  // namespace gpuvpa::bench
