// jemalloc's options, built into each binary that links it (gpuvpa_link_jemalloc in the top
// CMakeLists.txt); jemalloc reads this symbol when it starts, and the MALLOC_CONF environment
// variable still overrides it. Transparent huge pages for its extents and metadata: without
// them jemalloc lost to glibc on passes over large heaps in TLB misses (BM_RecommendAll/100000
// linked with it: 60 -> 130 ms, which is why the recommender keeps glibc's malloc); with them
// the updater's 10,000-GVPA cycles were faster still (updater_cycle_bench 10000, one run each:
// 4.19 / 1.91 / 2.11 s without, 3.43 / 1.68 / 1.90 s with).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}
