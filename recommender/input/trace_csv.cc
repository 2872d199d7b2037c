// Trace CSV replay. The row loop avoids allocation: fields are string_views into the mapped
// file, numbers go through std::from_chars, and a workload's allocation and GPU model are
// resolved only when they differ from the last row of that workload.
#include "recommender/input/trace_csv.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/base/names.h"
#include "core/base/number_text.h"
#include "core/base/text_lines.h"
#include "core/base/time_format.h"
#include "core/base/workload_key.h"
#include "core/gpu/gpu_allocation.h"
#include "recommender/input/admission.h"

namespace gpuvpa::recommender {
namespace {

enum Column : int {
  kTimestamp,
  kNamespace,
  kWorkloadKind,
  kWorkloadName,
  kContainer,
  kPod,
  kGpuModel,
  kAllocation,
  kVramBytes,
  kSmActive,
  kDevice,
  kCostCenter,
  kCudaOom,
  kColumnCount
};
constexpr int kRequiredColumns = kSmActive + 1;
constexpr std::array<std::string_view, kColumnCount> kColumnNames = {
    "timestamp", "namespace",   "workload_kind", "workload_name", "container",
    "pod",       "gpu_model",   "allocation",    "vram_bytes",    "sm_active",
    "device",    "cost_center", "cuda_oom"};
constexpr size_t kMaxFields = 32;
// Samples parsed before they go into the store together, grouped by workload (a trace
// interleaves every workload at each timestamp: one at a time, each sample misses cache). A
// batch holds about kSamplesPerWorkload samples of every workload, within these bounds (the
// upper one bounds the replay's memory: 48 bytes a sample).
constexpr size_t kMinIngestBatch = 1 << 16;
constexpr size_t kMaxIngestBatch = 1 << 20;
constexpr size_t kSamplesPerWorkload = 16;
// The columns that name a series: rows with the same text in these are the same series.
constexpr std::array<int, 9> kSeriesColumns = {kNamespace,  kWorkloadKind, kWorkloadName,
                                               kContainer,  kPod,          kGpuModel,
                                               kAllocation, kDevice,       kCostCenter};
constexpr char kRunSeparator = '\x1f';  // a unit separator: in no valid field

}  // namespace

struct TraceReplayer::Columns {
  std::array<int, kColumnCount> index;  // field position of each column, -1 when absent
  size_t field_count = 0;
};

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
constexpr double kMiB = 1024.0 * 1024.0;
// A unit mismatch shows in many rows, a data error in a few: this many rows (and this share of
// all rows) in the other unit's range stop the run.
constexpr size_t kUnitEvidenceMinRows = 10;
constexpr double kUnitEvidenceMinShare = 0.01;
// Less than this much VRAM in every row is not a GPU workload's bytes: a CUDA context alone
// holds hundreds of MiB. MiB values exported as bytes land here.
constexpr double kSmallestPlausibleVramPeakBytes = kMiB;

std::string ExpectedColumns() {
  std::string out = "required: ";
  for (int c = 0; c < kColumnCount; ++c) {
    if (c == kRequiredColumns)
      out += "; optional: ";
    else if (c > 0)
      out += ", ";
    out += kColumnNames[c];
  }
  return out;
}

Status HeaderError(std::string_view problem, std::string_view header) {
  std::string message = "trace header: " + std::string(problem) + " (" + ExpectedColumns() + ")";
  // The Alibaba openb pod list is an allocation trace, not a sample trace.
  if (header.find("gpu_milli") != std::string_view::npos ||
      header.find("cpu_milli") != std::string_view::npos)
    message += "; this looks like an openb pod list: load it with `gpuvpa import-openb`";
  return InvalidArgumentError(message);
}

}  // namespace

TraceReplayer::TraceReplayer(FleetStore& store, const GpuCatalog& catalog,
                             CostCenterRules cost_centers, TraceReplayOptions options)
    : store_(store), catalog_(catalog), cost_centers_(std::move(cost_centers)), options_(options) {
  if (!options_.now_s) options_.now_s = UnixNowSeconds();
}

Result<TraceReplayReport> TraceReplayer::ReplayText(std::string_view csv) {
  return Replay(csv, false);
}

// One replay's state: the current row's fields, the header's columns, what was found.
struct TraceReplayer::Pass {
  std::array<std::string_view, kMaxFields> fields;
  Columns cols;
  TraceReplayReport report;
  std::vector<TraceIssue> store_issues;
  bool have_time = false;
  size_t line_no = 1;
  // Unit evidence: how many rows look like the other unit, and the largest values seen.
  size_t sm_percent_like_rows = 0;
  double sm_largest = 0;
  size_t vram_rows = 0;
  double vram_largest = 0;
  double latest_allowed_s = 0;
  double sm_scale = 1;
  double vram_scale = 1;

  std::string_view field(int c) const {
    return cols.index[c] < 0 ? std::string_view() : fields[static_cast<size_t>(cols.index[c])];
  }
  void reject(std::string_view column, std::string message) {
    ++report.malformed;
    if (report.issues.size() < kMaxReportedIssues)
      report.issues.push_back({line_no, std::string(column), std::move(message)});
  }
  void reject_value(int c, const std::string& why) {
    reject(kColumnNames[c],
           std::string(kColumnNames[c]) + " \"" + std::string(field(c)) + "\" " + why);
  }
};

Result<TraceReplayReport> TraceReplayer::Replay(std::string_view csv, bool release_consumed) {
  if (csv.starts_with(kUtf8Bom)) csv.remove_prefix(kUtf8Bom.size());
  size_t pos = 0;
  Pass pass;
  GPUVPA_RETURN_IF_ERROR(ReadHeader(csv, pos, pass));
  pending_.clear();
  pass.latest_allowed_s = *options_.now_s + options_.max_future_skew_s;
  pass.sm_scale = options_.sm_unit == SmUnit::kPercent ? 0.01 : 1.0;
  pass.vram_scale = options_.vram_unit == VramUnit::kMebibytes ? kMiB : 1.0;
  // Pages already replayed go back in steps of kReleaseStep (only ever whole pages behind the
  // current row: nothing of them is read again; issues and caches hold copies).
  constexpr size_t kReleaseStep = 16 << 20;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t released = 0;
  while (pos < csv.size()) {
    if (release_consumed && pos - released >= kReleaseStep) {
      const size_t upto = pos / page * page;
      ::madvise(const_cast<char*>(csv.data()) + released, upto - released, MADV_DONTNEED);
      released = upto;
    }
    ++pass.line_no;
    std::string_view line;
    const size_t n = NextLineFields(csv, pos, line, pass.fields);
    if (line.empty()) continue;
    ++pass.report.rows;
    if (n != pass.cols.field_count) {
      pass.reject("row", "expected " + std::to_string(pass.cols.field_count) + " fields, found " +
                             (n > kMaxFields ? "more than " + std::to_string(kMaxFields)
                                             : std::to_string(n)));
      continue;
    }
    ReplayRow(pass);
  }
  FlushPending(pass);
  return Finish(pass);
}

Status TraceReplayer::ReadHeader(std::string_view csv, size_t& pos, Pass& pass) {
  std::string_view header;
  Columns& cols = pass.cols;
  cols.index.fill(-1);
  cols.field_count = NextLineFields(csv, pos, header, pass.fields);
  if (cols.field_count > kMaxFields)
    return HeaderError("more than " + std::to_string(kMaxFields) + " columns", header);
  for (size_t f = 0; f < cols.field_count; ++f) {
    int c = 0;
    while (c < kColumnCount && kColumnNames[c] != pass.fields[f]) ++c;
    if (c == kColumnCount)
      return HeaderError("unknown column \"" + std::string(pass.fields[f]) + "\"", header);
    if (cols.index[c] >= 0)
      return HeaderError("column \"" + std::string(pass.fields[f]) + "\" appears twice", header);
    cols.index[c] = static_cast<int>(f);
  }
  for (int c = 0; c < kRequiredColumns; ++c) {
    if (cols.index[c] < 0)
      return HeaderError("lacks required column \"" + std::string(kColumnNames[c]) + "\"", header);
  }
  // A series is known by the text of its columns as the row has it: runs of adjacent fields (one
  // run, commas included, when they are next to each other), so a known series is recognised
  // without copying its text. The text means the same only under the same header.
  series_runs_.clear();
  std::vector<int> positions;
  for (const int c : kSeriesColumns)
    if (cols.index[c] >= 0) positions.push_back(cols.index[c]);
  std::sort(positions.begin(), positions.end());
  for (const int f : positions) {
    if (!series_runs_.empty() && series_runs_.back().second + 1 == f)
      series_runs_.back().second = f;
    else
      series_runs_.push_back({f, f});
  }
  if (!std::equal(cols.index.begin(), cols.index.end(), series_columns_.begin(),
                  series_columns_.end())) {
    ForgetSeries();
    series_columns_.assign(cols.index.begin(), cols.index.end());
  }
  return OkStatus();
}

void TraceReplayer::ReplayRow(Pass& pass) {
  // Rows come in time order and many share a timestamp: parse each distinct text once.
  const std::string_view timestamp = pass.field(kTimestamp);
  if (timestamp.empty() || timestamp != last_timestamp_text_) {
    Result<double> parsed = ParseTimestamp(timestamp);
    if (!parsed.ok()) {
      pass.reject(kColumnNames[kTimestamp], parsed.status().message());
      return;
    }
    last_timestamp_text_.assign(timestamp);
    last_timestamp_s_ = *parsed;
  }
  const double time = last_timestamp_s_;
  switch (CheckSampleTime(time, pass.latest_allowed_s)) {
    case SampleTime::kBefore2000:
      pass.reject_value(kTimestamp, "is before 2000-01-01");
      return;
    case SampleTime::kInTheFuture:
      pass.reject_value(kTimestamp, "is in the future (later than now " +
                                        FormatTimestamp(*options_.now_s) + " + " +
                                        FormatNumber(options_.max_future_skew_s) + " s)");
      return;
    case SampleTime::kOk:
      break;
  }
  if (time < options_.window_from_s || time >= options_.window_until_s) {
    ++pass.report.outside_window;
    return;
  }
  // The raw identity text: seen before, it resolves to its series without the checks below
  // that depend on that text alone (they passed then).
  if (store_.layout_version() != series_layout_) {
    ForgetSeries();
    series_layout_ = store_.layout_version();
  }
  for (size_t r = 0; r < series_runs_.size(); ++r) {
    const std::string_view first = pass.fields[static_cast<size_t>(series_runs_[r].first)];
    const std::string_view last = pass.fields[static_cast<size_t>(series_runs_[r].second)];
    series_spans_[r] = std::string_view(
        first.data(), static_cast<size_t>(last.data() + last.size() - first.data()));
  }
  const uint32_t known = FindSeries();
  if (known == UINT32_MAX) {
    for (int c :
         {kNamespace, kWorkloadKind, kWorkloadName, kContainer, kPod, kGpuModel, kAllocation}) {
      if (pass.field(c).empty()) {
        pass.reject(kColumnNames[c], std::string(kColumnNames[c]) + " is empty");
        return;
      }
    }
    if (Status s = ValidateObjectName("pod", pass.field(kPod)); !s.ok()) {
      pass.reject(kColumnNames[kPod], s.message());
      return;
    }
  }
  GpuSample sample;
  sample.time_s = time;
  int device = -1;
  if (!ParseValues(pass, sample, device)) return;
  // A known series is the common case: no call for it.
  const std::optional<uint32_t> row =
      known != UINT32_MAX ? std::optional<uint32_t>(series_[known].row) : ResolveRow(pass);
  if (!row) return;
  const WorkloadState& st = store_.state(*row);
  if (!FitsAllocation(sample.vram_bytes, st.unit)) {
    pass.reject_value(kVramBytes, "is more than the " + st.identity.gpu_model() + "'s " +
                                      FormatNumber(st.unit.vram_limit_bytes) +
                                      " bytes of device memory");
    return;
  }
  ++pass.vram_rows;
  pass.vram_largest = std::max(pass.vram_largest, sample.vram_bytes);
  uint32_t series;
  if (known != UINT32_MAX) {
    previous_series_ = known;
    series = series_[known].series;
  } else {
    series = TrackSeries(pass, *row, device);
  }
  Enqueue(pass, {*row, series, pass.line_no, sample});
}

// Inlined into ReplayRow, as is Enqueue: split for reading, not for calls (the replay is the
// recommender's hot path; bench/recommender_bench.cc BM_TraceReplay*).
[[gnu::always_inline]] inline bool TraceReplayer::ParseValues(Pass& pass, GpuSample& sample,
                                                              int& device) {
  double vram = 0;
  if (!ParseFiniteDouble(pass.field(kVramBytes), vram) || vram < 0) {
    pass.reject_value(kVramBytes, "is not a non-negative number");
    return false;
  }
  sample.vram_bytes = vram * pass.vram_scale;
  double sm = 0;
  if (!ParseFiniteDouble(pass.field(kSmActive), sm) || sm < 0 || sm * pass.sm_scale > 1) {
    if (options_.sm_unit == SmUnit::kRatio && sm > 1 && sm <= 100) {
      ++pass.sm_percent_like_rows;
      pass.sm_largest = std::max(pass.sm_largest, sm);
    }
    pass.reject_value(kSmActive, options_.sm_unit == SmUnit::kPercent
                                     ? "is not a percentage in 0..100"
                                     : "is not a ratio in 0..1");
    return false;
  }
  sample.sm_ratio = sm * pass.sm_scale;
  if (const std::string_view oom = pass.field(kCudaOom); !oom.empty()) {
    if (oom == "1" || oom == "true") {
      sample.cuda_oom = true;
    } else if (oom != "0" && oom != "false") {
      pass.reject_value(kCudaOom, "is not 0, 1, true or false");
      return false;
    }
  }
  if (const std::string_view text = pass.field(kDevice); !text.empty()) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), device);
    if (ec != std::errc() || ptr != text.data() + text.size() || device < 0) {
      pass.reject_value(kDevice, "is not a GPU index");
      return false;
    }
  }
  return true;
}

std::optional<uint32_t> TraceReplayer::ResolveRow(Pass& pass) {
  const std::string_view cost_center = pass.field(kCostCenter);
  AssignWorkloadKey(key_buffer_, pass.field(kNamespace), pass.field(kWorkloadKind),
                    pass.field(kWorkloadName), pass.field(kContainer));
  std::optional<uint32_t> row = store_.Find(key_buffer_);
  // Resolve the identity only when this workload's raw fields changed (or the row was not
  // filled by this replayer: restored from a checkpoint, or moved by ForgetStale).
  if (row && *row < row_cache_.size() && row_cache_[*row].key == key_buffer_ &&
      row_cache_[*row].allocation == pass.field(kAllocation) &&
      row_cache_[*row].gpu_model == pass.field(kGpuModel) &&
      row_cache_[*row].cost_center == cost_center)
    return row;
  Result<const GpuModel*> model = catalog_.FindModel(pass.field(kGpuModel));
  if (!model.ok()) {
    pass.reject(kColumnNames[kGpuModel], model.status().message());
    return std::nullopt;
  }
  Result<GpuAllocation> allocation = ParseGpuAllocation(pass.field(kAllocation));
  if (!allocation.ok()) {
    pass.reject(kColumnNames[kAllocation], allocation.status().message());
    return std::nullopt;
  }
  const WorkloadFields fields{pass.field(kNamespace),
                              pass.field(kWorkloadKind),
                              pass.field(kWorkloadName),
                              pass.field(kContainer),
                              {},
                              cost_center.empty()
                                  ? ResolveCostCenter(cost_centers_, pass.field(kNamespace))
                                  : std::string(cost_center)};
  std::string refused_field;
  Result<AdmittedWorkload> admitted = AdmitWorkload(fields, **model, *allocation, &refused_field);
  if (!admitted.ok()) {
    pass.reject(refused_field, admitted.status().message());
    return std::nullopt;
  }
  // A new identity for a tracked workload changes how its samples are accounted: the samples
  // parsed before it go in first, under the old one.
  if (row) FlushPending(pass);
  row = store_.Track(std::move(admitted->identity), admitted->unit);
  if (row_cache_.size() <= *row) row_cache_.resize(*row + 1);
  row_cache_[*row] = {key_buffer_, std::string(pass.field(kAllocation)),
                      std::string(pass.field(kGpuModel)), std::string(cost_center)};
  // Entries made from this row's earlier text no longer hold.
  if (row_track_generation_.size() <= *row) row_track_generation_.resize(*row + 1);
  ++row_track_generation_[*row];
  return row;
}

uint32_t TraceReplayer::TrackSeries(Pass& pass, uint32_t row, int device) {
  const uint32_t series = store_.TrackDevice(row, pass.field(kPod), device);
  if (row_track_generation_.size() <= row) row_track_generation_.resize(row + 1);
  SeriesKey();
  auto [it, added] = series_index_.try_emplace(series_key_, static_cast<uint32_t>(series_.size()));
  if (added) {
    series_.push_back({row, series, 0, UINT32_MAX, series_text_.size(), series_key_.size()});
    series_text_.append(series_key_);
  }
  SeriesEntry& e = series_[it->second];
  e.row = row;
  e.series = series;
  e.track_generation = row_track_generation_[row];
  if (previous_series_ != UINT32_MAX) series_[previous_series_].next = it->second;
  previous_series_ = it->second;
  return series;
}

[[gnu::always_inline]] inline void TraceReplayer::Enqueue(Pass& pass, const PendingSample& sample) {
  pending_.push_back(sample);
  // A sample that moves the decay reference goes in alone, after everything before it, as in a
  // sample-by-sample replay: every pending sample shares the store's current reference.
  if (store_.clock().WouldShift(sample.sample.time_s)) {
    pending_.pop_back();
    FlushPending(pass);
    pending_.push_back(sample);
    FlushPending(pass);
  } else if (pending_.size() >=
             std::clamp(kSamplesPerWorkload * store_.size(), kMinIngestBatch, kMaxIngestBatch)) {
    FlushPending(pass);
  }
}

Result<TraceReplayReport> TraceReplayer::Finish(Pass& pass) {
  TraceReplayReport& report = pass.report;
  // The first issues by line, wherever they were found.
  report.issues.insert(report.issues.end(), pass.store_issues.begin(), pass.store_issues.end());
  std::stable_sort(report.issues.begin(), report.issues.end(),
                   [](const TraceIssue& a, const TraceIssue& b) { return a.line < b.line; });
  if (report.issues.size() > kMaxReportedIssues) report.issues.resize(kMaxReportedIssues);

  const size_t evidence_floor =
      std::max(kUnitEvidenceMinRows,
               static_cast<size_t>(kUnitEvidenceMinShare * static_cast<double>(report.rows)));
  if (pass.sm_percent_like_rows >= evidence_floor)
    return FailedPreconditionError(
        "column sm_active looks like percent, not a ratio: " +
        std::to_string(pass.sm_percent_like_rows) + " of " + std::to_string(report.rows) +
        " rows are in 1..100 (largest " + FormatNumber(pass.sm_largest) +
        "); nothing was saved. If the column is a percentage (DCGM_FI_DEV_GPU_UTIL), pass "
        "--sm-unit percent");
  if (options_.vram_unit == VramUnit::kBytes && pass.vram_rows >= kUnitEvidenceMinRows &&
      pass.vram_largest > 0 && pass.vram_largest < kSmallestPlausibleVramPeakBytes)
    return FailedPreconditionError(
        "column vram_bytes looks like MiB, not bytes: the largest of " +
        std::to_string(pass.vram_rows) + " values is " + FormatNumber(pass.vram_largest) +
        " (under 1 MiB; a CUDA context alone holds hundreds of MiB); nothing was saved. If the "
        "column is MiB (DCGM_FI_DEV_FB_USED), pass --vram-unit mib");
  return std::move(report);
}

void TraceReplayer::ForgetSeries() {
  series_.clear();
  series_text_.clear();
  series_index_.clear();
  previous_series_ = UINT32_MAX;
}

void TraceReplayer::SeriesKey() {
  series_key_.clear();
  for (size_t r = 0; r < series_runs_.size(); ++r) {
    series_key_.append(series_spans_[r]);
    series_key_.push_back(kRunSeparator);
  }
}

uint32_t TraceReplayer::FindSeries() {
  auto holds = [&](uint32_t i) {
    const SeriesEntry& e = series_[i];
    return e.row < row_track_generation_.size() &&
           row_track_generation_[e.row] == e.track_generation;
  };
  // The guess: the entry that followed the previous row's last time, compared run by run with
  // the row's own text.
  if (previous_series_ != UINT32_MAX) {
    const uint32_t guess = series_[previous_series_].next;
    if (guess != UINT32_MAX) {
      const SeriesEntry& e = series_[guess];
      size_t size = series_runs_.size();
      for (size_t r = 0; r < series_runs_.size(); ++r) size += series_spans_[r].size();
      bool same = size == e.key_size;
      const char* text = series_text_.data() + e.key_offset;
      for (size_t r = 0; r < series_runs_.size() && same; ++r) {
        const std::string_view span = series_spans_[r];
        same =
            std::memcmp(text, span.data(), span.size()) == 0 && text[span.size()] == kRunSeparator;
        text += span.size() + 1;
      }
      if (same && holds(guess)) return guess;
    }
  }
  SeriesKey();
  const auto it = series_index_.find(series_key_);
  if (it == series_index_.end() || !holds(it->second)) return UINT32_MAX;
  if (previous_series_ != UINT32_MAX) series_[previous_series_].next = it->second;
  return it->second;
}

void TraceReplayer::FlushPending(Pass& pass) {
  if (pending_.empty()) return;
  TraceReplayReport& report = pass.report;
  std::vector<TraceIssue>& store_issues = pass.store_issues;
  bool& have_time = pass.have_time;
  // A counting sort by workload row, stable: each workload's samples keep their trace order,
  // and one workload's histograms stay in cache while its samples go in. Workloads touch
  // disjoint state (the decay reference is shared, and no pending sample moves it), so the
  // store ends exactly as a sample-by-sample replay leaves it.
  row_starts_.assign(store_.size() + 1, 0);
  for (const PendingSample& p : pending_) ++row_starts_[p.row + 1];
  for (size_t r = 1; r < row_starts_.size(); ++r) row_starts_[r] += row_starts_[r - 1];
  pending_order_.resize(pending_.size());
  for (uint32_t i = 0; i < pending_.size(); ++i) pending_order_[row_starts_[pending_[i].row]++] = i;
  for (const uint32_t i : pending_order_) {
    const PendingSample& p = pending_[i];
    const IngestOutcome outcome = store_.Ingest(p.row, p.series, p.sample);
    if (outcome == IngestOutcome::kAlreadyIngested) {
      ++report.already_ingested;
      continue;
    }
    if (outcome == IngestOutcome::kInvalid) {
      ++report.malformed;
      if (store_issues.size() < kMaxReportedIssues)
        store_issues.push_back(
            {p.line, "row", "sample refused by the store (not finite or out of range)"});
      continue;
    }
    ++report.accepted;
    if (!have_time) {
      report.first_time_s = report.last_time_s = p.sample.time_s;
      have_time = true;
    }
    report.first_time_s = std::min(report.first_time_s, p.sample.time_s);
    report.last_time_s = std::max(report.last_time_s, p.sample.time_s);
  }
  pending_.clear();
}

Result<TraceReplayReport> TraceReplayer::ReplayFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("trace file not found: " + path);
    return ErrnoError("open trace " + path, errno);
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError("stat trace " + path, err);
  }
  const auto size = static_cast<size_t>(sb.st_size);
  if (size == 0) {
    ::close(fd);
    return InvalidArgumentError("trace " + path + " is empty (a header row is required)");
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (data == MAP_FAILED) return ErrnoError("mmap trace " + path, err);
  ::madvise(data, size, MADV_SEQUENTIAL);
  Result<TraceReplayReport> report =
      Replay(std::string_view(static_cast<const char*>(data), size), true);
  ::munmap(data, size);
  return report;
}

}  // namespace gpuvpa::recommender
