// `gpuvpa recommend` end to end (read the trace, replay, recommend, write the output), in
// process, on the 7-workload demo week and on the demo fleet replicated 1,000 times over its
// first 43 minutes (7,000 workloads): items are trace rows, so the two cases' rows/s compare the
// per-row cost at both fleet sizes in one run. And writing the JSON alone, 7,000
// recommendations, through protobuf's printer and through ProtoJsonWriter side by side.
//
//   build/bin/recommend_command_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true      (one command line)
#include <benchmark/benchmark.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/api/proto_json.h"
#include "core/api/recommendation_json.h"
#include "core/gpu/gpu_catalog.h"
#include "recommender/cmd/commands.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "recommender/logic/recommendation.h"
#include "recommender/logic/recommender.h"
#include "recommender/model/fleet_store.h"

namespace gpuvpa::recommender {
namespace {

constexpr int kCopies = 1000;
constexpr const char* kReplicatedEnd = "2026-11-02T00:43:00Z";

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("gpuvpa-bench-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// The demo trace's rows before `end`, each written `copies` times with the workload and pod
// names suffixed by the copy's number: the same fleet `copies` times over.
std::string Replicate(const std::string& demo, const std::string& end, int copies) {
  std::istringstream in(demo);
  std::string header, line, out;
  std::getline(in, header);
  out = header + "\n";
  while (std::getline(in, line) && line.compare(0, end.size(), end) < 0) {
    // timestamp,namespace,workload_kind,workload_name,container,pod,...
    std::vector<size_t> commas;
    for (size_t i = 0; i < line.size() && commas.size() < 6; ++i)
      if (line[i] == ',') commas.push_back(i);
    for (int k = 0; k < copies; ++k) {
      const std::string suffix = "-" + std::to_string(k);
      out.append(line, 0, commas[3]);
      out += suffix;
      out.append(line, commas[3], commas[5] - commas[3]);
      out += suffix;
      out.append(line, commas[5]);
      out += '\n';
    }
  }
  return out;
}

struct Traces {
  std::string demo_path, fleet_path, demo_end, fleet_end;
  size_t demo_rows = 0, fleet_rows = 0;
  Traces() {
    DemoFleetOptions options;
    const std::string demo = GenerateDemoFleetTrace(options);
    demo_path = TempPath("demo.csv");
    fleet_path = TempPath("fleet.csv");
    const std::string fleet = Replicate(demo, kReplicatedEnd, kCopies);
    std::ofstream(demo_path) << demo;
    std::ofstream(fleet_path) << fleet;
    demo_rows = static_cast<size_t>(std::count(demo.begin(), demo.end(), '\n')) - 1;
    fleet_rows = static_cast<size_t>(std::count(fleet.begin(), fleet.end(), '\n')) - 1;
    demo_end = std::to_string(options.start_time_s + options.days * 86400.0);
    fleet_end = std::to_string(options.start_time_s + 43 * 60.0);
  }
  ~Traces() {
    std::filesystem::remove(demo_path);
    std::filesystem::remove(fleet_path);
  }
};

const Traces& SharedTraces() {
  static const Traces traces;
  return traces;
}

// Arg 0: 0 = the demo week, 1 = 7,000 workloads; arg 1: 0 = table, 1 = json.
void BM_RecommendCommand(benchmark::State& state) {
  const Traces& t = SharedTraces();
  const bool fleet = state.range(0) == 1;
  const std::string format = state.range(1) == 1 ? "json" : "table";
  const std::vector<std::string> args = {"--trace",  fleet ? t.fleet_path : t.demo_path,
                                         "--format", format,
                                         "--now",    fleet ? t.fleet_end : t.demo_end};
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream out, err;
    if (RunRecommendCommand(args, out, err) != 0) {
      state.SkipWithError(err.str().c_str());
      return;
    }
    bytes = out.str().size();
  }
  const size_t rows = fleet ? t.fleet_rows : t.demo_rows;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["output_bytes"] = static_cast<double>(bytes);
  state.SetLabel(std::string(fleet ? "7,000 workloads, 43 min" : "demo, 7 workloads, 7 days") +
                 ", " + format);
}
BENCHMARK(BM_RecommendCommand)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

// Arg 0: 0 = protobuf's printer, one recommendation at a time as before; 1 = ProtoJsonWriter.
void BM_RecommendationsJson(benchmark::State& state) {
  const Traces& t = SharedTraces();
  FleetStore store;
  TraceReplayOptions options;
  options.now_s = std::stod(t.fleet_end);
  TraceReplayer replayer(store, GpuCatalog::BuiltIn(), {}, options);
  if (!replayer.ReplayFile(t.fleet_path).ok()) {
    state.SkipWithError("replay failed");
    return;
  }
  RecommenderOptions recommender_options;
  recommender_options.min_history_s = 0;
  const std::vector<Recommendation> recs = Recommender(recommender_options).RecommendAll(store);
  std::vector<v1::Recommendation> protos;
  for (const Recommendation& rec : recs) protos.push_back(ToProto(rec, store));
  std::vector<const v1::Recommendation*> pointers;
  for (const auto& p : protos) pointers.push_back(&p);
  const bool writer = state.range(0) == 1;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    if (writer) {
      out = RecommendationsJson(pointers);
    } else {
      const auto print = ProtoJsonWriter::MatchedPrintOptions();
      out = "[";
      for (const auto* p : pointers) {
        std::string one;
        (void)google::protobuf::util::MessageToJsonString(*p, &one, print);
        out += (out.size() == 1 ? "\n  " : ",\n  ") + one;
      }
      out += "\n]\n";
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["recommendations"] = static_cast<double>(pointers.size());
  state.SetLabel(writer ? "ProtoJsonWriter" : "protobuf MessageToJsonString");
}
BENCHMARK(BM_RecommendationsJson)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuvpa::recommender

BENCHMARK_MAIN();
