// Prometheus text exposition and OpenMetrics text with or without sample timestamps: a
// dcgm-exporter or kube-state-metrics scrape, a `promtool tsdb dump` (milliseconds) or
// `dump-openmetrics` / backfill file (seconds, ends in "# EOF").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/metrics/labeled_series.h"

namespace gpuvpa {

enum class TimestampUnit {
  kAuto,          // seconds when the text is OpenMetrics (has a "# EOF" line), else milliseconds
  kSeconds,       // OpenMetrics
  kMilliseconds,  // Prometheus text format
};

struct ExpositionOptions {
  TimestampUnit timestamp_unit = TimestampUnit::kAuto;
  // The time of samples that carry no timestamp (a live scrape); unset: such samples are
  // malformed lines.
  std::optional<double> default_time_s;
};

struct ExpositionIssue {
  size_t line = 0;  // 1-based
  std::string message;
};

struct ExpositionParse {
  std::vector<LabeledSeries> series;    // one per distinct metric + label set, points in file order
  size_t samples = 0;                   // sample lines read into points
  size_t malformed = 0;                 // lines that are neither comments nor samples (skipped)
  size_t non_finite = 0;                // NaN / Inf sample values (skipped)
  std::vector<ExpositionIssue> issues;  // the first 20 malformed lines
  bool openmetrics = false;             // the text ended in "# EOF"
};

// Never fails on a bad line (it is counted and reported with its number); an error only when
// the text is not UTF-8-free-of-NUL text at all (a binary file).
Result<ExpositionParse> ParseExpositionText(std::string_view text,
                                            const ExpositionOptions& options = {});

}  // namespace gpuvpa
