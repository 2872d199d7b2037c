// libFuzzer: a metrics file given to `gpuvpa recommend` (a DCGM exporter / kube-state-metrics
// scrape, a promtool dump): parsed, joined and ingested, then recommended. Nothing the input says
// may crash the process or put an impossible number in a recommendation (non-finite, negative,
// or above what the allocation can hold).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/gpu/gpu_catalog.h"
#include "core/metrics/exposition_text.h"
#include "recommender/input/dcgm_ingest.h"
#include "recommender/logic/recommender.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuvpa::Result<gpuvpa::ExpositionParse> parsed =
      gpuvpa::ParseExpositionText(text, {gpuvpa::TimestampUnit::kAuto, 1.7e9});
  if (!parsed.ok()) return 0;
  gpuvpa::recommender::FleetStore store;
  gpuvpa::recommender::DcgmIngestOptions options;
  options.now_s = 1.8e9;
  options.names.node_agent.enabled = true;  // the node agent's series too
  gpuvpa::recommender::DcgmIngester ingester(store, gpuvpa::GpuCatalog::BuiltIn(), options);
  (void)ingester.Ingest(parsed->series);
  gpuvpa::recommender::RecommenderOptions rec_options;
  rec_options.min_history_s = 0;
  for (const auto& r : gpuvpa::recommender::Recommender(rec_options).RecommendAll(store)) {
    const double limit = store.state(r.row).unit.vram_limit_bytes;
    for (double v : {r.vram_target_bytes, r.vram_upper_bytes, r.vram_lower_bytes, r.sm_p90_ratio,
                     r.allocated_gpu_hours, r.idle_tax_gpu_hours_vram})
      if (!std::isfinite(v) || v < 0) std::abort();
    if (limit > 0 && r.vram_target_bytes > limit) std::abort();
    if (r.sm_p90_ratio > 1) std::abort();
  }
  return 0;
}
