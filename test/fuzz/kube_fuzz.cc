// libFuzzer: what gpuvpa reads from a Kubernetes API server or a kubeconfig, which a hostile or
// broken peer controls: GpuVerticalPodAutoscaler objects (and the status built from them), the
// applied-change annotation, Status error bodies, quantities, Lease times and kubeconfig YAML.
// The first byte picks the input. Nothing may crash or throw; what is accepted must be
// possible (no negative bytes, a floor no lower than zero).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/kube/kube_client.h"
#include "core/kube/kube_config.h"
#include "updater/kube/gvpa.h"
#include "updater/kube/leader_election.h"
#include "updater/kube/workload_change.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      const json o = json::parse(text, nullptr, false);
      gpuvpa::Result<gpuvpa::updater::Gvpa> g = gpuvpa::updater::ParseGvpa(o);
      if (!g.ok()) break;
      for (const auto& c : g->containers)
        if ((c.min_vram_bytes && !(*c.min_vram_bytes >= 0)) ||
            (c.max_vram_bytes && !(*c.max_vram_bytes >= 0)))
          std::abort();
      if (g->rollback && !(g->rollback->vram_floor_bytes >= 0)) std::abort();
      gpuvpa::updater::GvpaStatusInput in;
      in.now = "2026-12-03T00:00:00Z";
      in.rollback = g->rollback;
      (void)gpuvpa::updater::BuildGvpaStatus(*g, in).dump();
      break;
    }
    case 1: {
      const json o = json::parse(text, nullptr, false);
      (void)gpuvpa::updater::AppliedChange::FromJson(o);
      break;
    }
    case 2: {
      const int code = size > 1 ? 400 + data[1] % 200 : 500;
      const gpuvpa::Status s = gpuvpa::KubeApiError(code, text, "fuzz");
      if (s.ok()) std::abort();
      break;
    }
    case 3: {
      const json o = json::parse(text, nullptr, false);
      if (o.is_discarded()) break;
      gpuvpa::Result<double> b = gpuvpa::updater::ParseQuantityBytes(o);
      if (b.ok() && !(*b >= 0 && std::isfinite(*b))) std::abort();
      break;
    }
    case 4: {
      gpuvpa::Result<double> t = gpuvpa::updater::ParseMicroTime(text);
      if (t.ok() && !std::isfinite(*t)) std::abort();
      break;
    }
    case 5:
      (void)gpuvpa::ParseKubeconfig(text, "/fuzz/kubeconfig");
      break;
  }
  return 0;
}
