// query_range response parsing: the simdjson parser the recommender uses, against nlohmann
// (the scaler's former parser) on the same body. Throughput in bytes/s of response body.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/metrics/prometheus_api.h"

namespace {

// A DCGM-shaped query_range answer: `series` series of `points` points each.
std::string RangeBody(int series, int points) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  char buf[64];
  for (int s = 0; s < series; ++s) {
    body += s == 0 ? "" : ",";
    body += R"({"metric":{"__name__":"DCGM_FI_DEV_FB_USED","Hostname":"node-)" +
            std::to_string(s / 8) + R"(","UUID":"GPU-)" + std::to_string(s) + R"(","gpu":")" +
            std::to_string(s % 8) +
            R"(","modelName":"NVIDIA H100 80GB HBM3","namespace":"ns","pod":"w-)" +
            std::to_string(s) + R"(-0","container":"main"},"values":[)";
    for (int p = 0; p < points; ++p) {
      std::snprintf(buf, sizeof buf, "%s[%d,\"%d\"]", p == 0 ? "" : ",", 1700000000 + 60 * p,
                    20000 + (s * 31 + p * 7) % 50000);
      body += buf;
    }
    body += "]}";
  }
  return body + "]}}";
}

void BM_SimdjsonQueryRange(benchmark::State& state) {
  const std::string body = RangeBody(static_cast<int>(state.range(0)), 360);
  size_t points = 0;
  for (auto _ : state) {
    auto r = gpuvpa::ParsePrometheusResponse(body, 200, gpuvpa::PrometheusResultType::kMatrix, "b");
    if (!r.ok()) state.SkipWithError("parse failed");
    points = 0;
    for (const auto& s : r->series) points += s.points.size();
    benchmark::DoNotOptimize(points);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["points"] = static_cast<double>(points);
}
BENCHMARK(BM_SimdjsonQueryRange)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_NlohmannQueryRange(benchmark::State& state) {
  const std::string body = RangeBody(static_cast<int>(state.range(0)), 360);
  for (auto _ : state) {
    nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
    size_t points = 0;
    for (const auto& s : doc["data"]["result"])
      for (const auto& v : s["values"]) {
        points += std::stod(v[1].get<std::string>()) >= 0;
      }
    benchmark::DoNotOptimize(points);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_NlohmannQueryRange)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
