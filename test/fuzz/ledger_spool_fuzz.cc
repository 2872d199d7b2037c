// libFuzzer: a ledger spool file as a crash or a disk error may leave it (torn and merged
// lines). Reading it never crashes or fails, every line is either read or counted as dropped,
// and an append after whatever is there is read back.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/cost/ledger_spool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gpuvpa-spool-fuzz-" + std::to_string(::getpid());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  size_t dropped = 0;
  gpuvpa::LedgerSpool spool(path);
  gpuvpa::Result<std::vector<gpuvpa::LedgerAction>> rows = spool.Read(&dropped);
  if (!rows.ok()) std::abort();  // per-line recovery: a file that can be read is never refused
  size_t lines = 0;
  for (size_t i = 0; i < size; ++i) lines += data[i] == '\n';
  if (size > 0 && data[size - 1] != '\n') ++lines;
  if (dropped > lines) std::abort();
  gpuvpa::LedgerAction row;
  row.action_id = "fuzz/appended";
  row.namespace_name = "ns";
  row.workload = "w";
  row.cost_center = "cc";
  if (!spool.Append(std::vector<gpuvpa::LedgerAction>{row}).ok()) std::abort();
  gpuvpa::Result<std::vector<gpuvpa::LedgerAction>> again = spool.Read(&dropped);
  if (!again.ok() || again->empty() || again->back().action_id != row.action_id) std::abort();
  return 0;
}
