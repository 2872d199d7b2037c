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
#include <optional>

#include "core/gpu_allocation.h"
#include "core/text_lines.h"
#include "core/time_format.h"
#include "core/workload_key.h"

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

size_t SplitFields(std::string_view line, std::array<std::string_view, kMaxFields>& out) {
  size_t n = 0;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    if (n == kMaxFields) return n + 1;  // too many: the caller reports it
    if (comma == std::string_view::npos) {
      out[n++] = line.substr(start);
      return n;
    }
    out[n++] = line.substr(start, comma - start);
    start = comma + 1;
  }
}

bool ParseDouble(std::string_view s, double& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

struct TraceReplayer::Columns {
  std::array<int, kColumnCount> index;  // field position of each column, -1 when absent
  size_t field_count = 0;
};

TraceReplayer::TraceReplayer(FleetStore& store, const GpuCatalog& catalog,
                             CostCenterRules cost_centers)
    : store_(store), catalog_(catalog), cost_centers_(std::move(cost_centers)) {}

Result<TraceReplayReport> TraceReplayer::ReplayText(std::string_view csv) {
  size_t pos = 0;
  const std::string_view header = NextLine(csv, pos);
  std::array<std::string_view, kMaxFields> fields;
  Columns cols;
  cols.index.fill(-1);
  cols.field_count = SplitFields(header, fields);
  if (cols.field_count > kMaxFields)
    return InvalidArgumentError("trace header has more than " + std::to_string(kMaxFields) +
                                " columns");
  for (size_t f = 0; f < cols.field_count; ++f) {
    int c = 0;
    while (c < kColumnCount && kColumnNames[c] != fields[f]) ++c;
    if (c == kColumnCount)
      return InvalidArgumentError("trace header: unknown column \"" + std::string(fields[f]) +
                                  "\"");
    if (cols.index[c] >= 0)
      return InvalidArgumentError("trace header: column \"" + std::string(fields[f]) +
                                  "\" appears twice");
    cols.index[c] = static_cast<int>(f);
  }
  for (int c = 0; c < kRequiredColumns; ++c) {
    if (cols.index[c] < 0)
      return InvalidArgumentError("trace header lacks required column \"" +
                                  std::string(kColumnNames[c]) + "\" (header: \"" +
                                  std::string(header) + "\")");
  }

  TraceReplayReport report;
  bool have_time = false;
  size_t line_no = 1;
  auto field = [&](int c) -> std::string_view {
    return cols.index[c] < 0 ? std::string_view() : fields[static_cast<size_t>(cols.index[c])];
  };
  auto reject = [&](std::string_view column, std::string message) {
    ++report.malformed;
    if (report.issues.size() < kMaxReportedIssues)
      report.issues.push_back({line_no, std::string(column), std::move(message)});
  };
  auto reject_value = [&](int c, const std::string& why) {
    reject(kColumnNames[c],
           std::string(kColumnNames[c]) + " \"" + std::string(field(c)) + "\" " + why);
  };

  while (pos < csv.size()) {
    ++line_no;
    const std::string_view line = NextLine(csv, pos);
    if (line.empty()) continue;
    ++report.rows;
    const size_t n = SplitFields(line, fields);
    if (n != cols.field_count) {
      reject("row",
             "expected " + std::to_string(cols.field_count) + " fields, found " +
                 (n > kMaxFields ? "more than " + std::to_string(kMaxFields) : std::to_string(n)));
      continue;
    }

    Result<double> time = ParseTimestamp(field(kTimestamp));
    if (!time.ok()) {
      reject(kColumnNames[kTimestamp], time.status().message());
      continue;
    }
    bool empty_id = false;
    for (int c :
         {kNamespace, kWorkloadKind, kWorkloadName, kContainer, kPod, kGpuModel, kAllocation}) {
      if (field(c).empty()) {
        reject(kColumnNames[c], std::string(kColumnNames[c]) + " is empty");
        empty_id = true;
        break;
      }
    }
    if (empty_id) continue;
    GpuSample sample;
    sample.time_s = *time;
    if (!ParseDouble(field(kVramBytes), sample.vram_bytes) || sample.vram_bytes < 0) {
      reject_value(kVramBytes, "is not a non-negative number of bytes");
      continue;
    }
    if (!ParseDouble(field(kSmActive), sample.sm_ratio) || sample.sm_ratio < 0 ||
        sample.sm_ratio > 1) {
      reject_value(kSmActive, "is not a ratio in 0..1");
      continue;
    }
    if (const std::string_view oom = field(kCudaOom); !oom.empty()) {
      if (oom == "1" || oom == "true") {
        sample.cuda_oom = true;
      } else if (oom != "0" && oom != "false") {
        reject_value(kCudaOom, "is not 0, 1, true or false");
        continue;
      }
    }
    if (const std::string_view device = field(kDevice); !device.empty()) {
      int d = 0;
      auto [ptr, ec] = std::from_chars(device.data(), device.data() + device.size(), d);
      if (ec != std::errc() || ptr != device.data() + device.size() || d < 0) {
        reject_value(kDevice, "is not a GPU index");
        continue;
      }
    }
    const std::string_view cost_center = field(kCostCenter);

    AssignWorkloadKey(key_buffer_, field(kNamespace), field(kWorkloadKind), field(kWorkloadName),
                      field(kContainer));
    std::optional<uint32_t> row = store_.Find(key_buffer_);
    // Resolve the identity only when this workload's raw fields changed (or the row was not
    // filled by this replayer: restored from a checkpoint, or moved by ForgetStale).
    const bool cached = row && *row < row_cache_.size() && row_cache_[*row].key == key_buffer_ &&
                        row_cache_[*row].allocation == field(kAllocation) &&
                        row_cache_[*row].gpu_model == field(kGpuModel) &&
                        row_cache_[*row].cost_center == cost_center;
    if (!cached) {
      Result<const GpuModel*> model = catalog_.FindModel(field(kGpuModel));
      if (!model.ok()) {
        reject(kColumnNames[kGpuModel], model.status().message());
        continue;
      }
      Result<GpuAllocation> allocation = ParseGpuAllocation(field(kAllocation));
      if (!allocation.ok()) {
        reject(kColumnNames[kAllocation], allocation.status().message());
        continue;
      }
      Result<AllocationUnit> unit = ResolveAllocationUnit(*allocation, **model);
      if (!unit.ok()) {
        reject(kColumnNames[kAllocation], unit.status().message());
        continue;
      }
      v1::WorkloadIdentity id;
      id.set_namespace_name(std::string(field(kNamespace)));
      id.set_owner_kind(std::string(field(kWorkloadKind)));
      id.set_owner_name(std::string(field(kWorkloadName)));
      id.set_container(std::string(field(kContainer)));
      id.set_gpu_model((*model)->name);
      id.set_allocation(allocation->ToString());
      id.set_cost_center(cost_center.empty() ? ResolveCostCenter(cost_centers_, field(kNamespace))
                                             : std::string(cost_center));
      row = store_.Track(id, *unit);
      if (row_cache_.size() <= *row) row_cache_.resize(*row + 1);
      row_cache_[*row] = {key_buffer_, std::string(field(kAllocation)),
                          std::string(field(kGpuModel)), std::string(cost_center)};
    }

    store_.AddSample(*row, sample);
    ++report.accepted;
    if (!have_time) {
      report.first_time_s = report.last_time_s = sample.time_s;
      have_time = true;
    }
    report.first_time_s = std::min(report.first_time_s, sample.time_s);
    report.last_time_s = std::max(report.last_time_s, sample.time_s);
  }
  return report;
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
      ReplayText(std::string_view(static_cast<const char*>(data), size));
  ::munmap(data, size);
  return report;
}

}  // namespace gpuvpa::recommender
