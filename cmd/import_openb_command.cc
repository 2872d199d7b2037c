// gpuvpa import-openb: the Alibaba openb trace into the ledger.
#include "cmd/commands.h"
#include "core/base/atomic_file.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/config/config.h"
#include "core/cost/ledger.h"
#include "core/cost/openb_import.h"

namespace gpuvpa::cmd {

int RunImportOpenbCommand(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err) {
  std::string pods_path;
  std::string nodes_path;
  LedgerFlags ledger_flags;
  std::string config_path;
  auto app = NewCommandApp("gpuvpa", "import-openb",
                           "Load the Alibaba openb pod/node trace into the ledger as allocated "
                           "GPU time (usage unmeasured).");
  app->add_option("--pods", pods_path, "openb_pod_list_*.csv")->required();
  app->add_option("--nodes", nodes_path, "openb_node_list_gpu_node.csv")->required();
  AddLedgerFlags(*app, ledger_flags, "the ledger to append to (default: the config's)");
  app->add_option("--config", config_path, "gpuvpa config (prices, cost centers)");
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  Result<GpuvpaConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) {
    err << "gpuvpa import-openb: " << config.status().message() << "\n";
    return kExitFailure;
  }
  Result<std::string> pods = ReadWholeFile(pods_path);
  Result<std::string> nodes = pods.ok() ? ReadWholeFile(nodes_path) : pods;
  if (!nodes.ok()) {
    err << "gpuvpa import-openb: " << nodes.status().message() << "\n";
    return kExitFailure;
  }
  Result<OpenbImport> import = BuildOpenbImport(*pods, *nodes, *config);
  if (!import.ok()) {
    err << "gpuvpa import-openb: " << import.status().message() << "\n";
    return kExitFailure;
  }
  Result<std::unique_ptr<Ledger>> ledger = OpenLedger(WithConfigDefaults(ledger_flags, *config));
  if (!ledger.ok()) {
    err << "gpuvpa import-openb: " << ledger.status().message() << "\n";
    return kExitFailure;
  }
  Result<size_t> added = (*ledger)->Append(import->actions);
  if (!added.ok()) {
    err << "gpuvpa import-openb: " << added.status().message() << "\n";
    return kExitFailure;
  }
  out << "import-openb: " << import->pods << " pods: " << import->actions.size()
      << " holding GPU time (" << *added << " new rows), " << import->skipped_unscheduled
      << " never scheduled, " << import->skipped_no_gpu << " without GPU; blended price $"
      << import->blended_usd_per_gpu_hour << "/GPU-h\n";
  return 0;
}

}  // namespace gpuvpa::cmd
