// The /metrics writer against prometheus-cpp's own TextSerializer: byte for byte on every
// metric type, label escaping, special values and timestamps.
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <limits>

#include "core/net/metrics_page.h"

namespace gpuvpa {
namespace {

TEST(MetricsTextTest, WritesWhatPrometheusCppsSerializerWrites) {
  prometheus::Registry r;
  RegisterBuildInfo(r, "test");
  auto& gauges =
      prometheus::BuildGauge().Name("g_ratio").Help("a help with a \\ backslash").Register(r);
  const double values[] = {0,        1,         -1,
                           0.1,      1.0 / 3,   123456789012345678.0,
                           1e-300,   6.02e23,   2.5e-7,
                           1e16,     1e15,      -0.0,
                           HUGE_VAL, -HUGE_VAL, std::numeric_limits<double>::quiet_NaN()};
  int i = 0;
  for (double v : values)
    gauges.Add({{"i", std::to_string(i++)}, {"esc", "a\"b\\c\nd"}, {"utf8", "Zürich ✓"}}).Set(v);
  prometheus::BuildGauge().Name("no_labels").Help("").Register(r).Add({}).Set(42);
  prometheus::BuildGauge().Name("empty_family").Help("nothing yet").Register(r);
  prometheus::BuildCounter()
      .Name("c_total")
      .Help("a counter")
      .Register(r)
      .Add({{"k", "v"}})
      .Increment(7);
  auto& h = prometheus::BuildHistogram().Name("h_seconds").Help("a histogram").Register(r);
  auto& one = h.Add({{"path", "/x"}}, prometheus::Histogram::BucketBoundaries{0.005, 0.1, 1, 10});
  for (double v : {0.001, 0.05, 0.5, 5.0, 50.0}) one.Observe(v);
  h.Add({}, prometheus::Histogram::BucketBoundaries{1}).Observe(2);
  auto& s = prometheus::BuildSummary().Name("s_bytes").Help("a summary").Register(r);
  auto& q = s.Add({{"a", "b"}}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.99, 0.001}});
  for (int k = 1; k <= 100; ++k) q.Observe(k);

  std::vector<prometheus::MetricFamily> families = r.Collect();
  // A timestamp, as a collectable may set one.
  families.back().metric.back().timestamp_ms = 1700000000123;
  const std::string ours = MetricsText(families);
  const std::string theirs = prometheus::TextSerializer().Serialize(families);
  EXPECT_EQ(ours, theirs);
  EXPECT_NE(ours.find("esc=\"a\\\"b\\\\c\\nd\""), std::string::npos) << ours;
  EXPECT_NE(ours.find("h_seconds_bucket{path=\"/x\",le=\"+Inf\"} 5"), std::string::npos) << ours;
}

}  // namespace
}  // namespace gpuvpa
