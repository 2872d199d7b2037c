// jemalloc's options, built into every binary that links it (jemalloc reads this symbol when it
// starts; the MALLOC_CONF environment variable still overrides it). Transparent huge pages for
// its extents and metadata: without them the recommender's fleet store, which walks 100,000
// workloads' histograms per pass, took 2x glibc's time in TLB misses (BM_RecommendAll/100000
// 60 -> 130 ms, BM_TraceReplayFleet/100000 0.7 -> 1.2 s); with them it matches glibc and holds
// slightly less memory (BM_MemoryPerWorkload), while the updater keeps jemalloc's gain.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}
