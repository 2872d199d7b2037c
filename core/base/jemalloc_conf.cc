// jemalloc's options, built into each binary that links it (gpuvpa_link_jemalloc in the top
// CMakeLists.txt); jemalloc reads this symbol when it starts, and the MALLOC_CONF environment
// variable still overrides it. Transparent huge pages for its extents and metadata: without
// them, a pass over 100,000 workloads' histograms took twice glibc's time in TLB misses
// (BM_RecommendAll/100000 linked with jemalloc: 60 -> 130 ms); with them it matched glibc.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}
