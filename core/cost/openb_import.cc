// openb trace import.
#include "core/cost/openb_import.h"

#include <charconv>
#include <map>

#include "core/base/atomic_file.h"
#include "core/base/text_lines.h"
#include "core/cost/usage_row.h"

namespace gpuvpa {
namespace {

// A header-addressed CSV without quoting (the openb files have none).
class SimpleCsv {
 public:
  static Result<SimpleCsv> Parse(std::string_view text, std::string_view what) {
    SimpleCsv csv;
    size_t pos = 0;
    bool header = true;
    while (pos < text.size()) {
      const std::string_view line = NextLine(text, pos);
      if (line.empty()) continue;
      std::vector<std::string_view> fields;
      for (size_t start = 0;;) {
        const size_t comma = line.find(',', start);
        fields.push_back(line.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      if (header) {
        csv.header_ = fields;
        header = false;
      } else if (fields.size() != csv.header_.size()) {
        return InvalidArgumentError(
            std::string(what) + " line " + std::to_string(csv.rows_.size() + 2) + ": expected " +
            std::to_string(csv.header_.size()) + " fields, found " + std::to_string(fields.size()));
      } else {
        csv.rows_.push_back(std::move(fields));
      }
    }
    return csv;
  }
  Result<size_t> Column(std::string_view name, std::string_view what) const {
    for (size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return i;
    return InvalidArgumentError(std::string(what) + ": missing column \"" + std::string(name) +
                                "\"");
  }
  const std::vector<std::vector<std::string_view>>& rows() const { return rows_; }

 private:
  std::vector<std::string_view> header_;
  std::vector<std::vector<std::string_view>> rows_;
};

bool ParseInt(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<double> BlendedPrice(const SimpleCsv& nodes, const GpuvpaConfig& config) {
  Result<size_t> gpu_col = nodes.Column("gpu", "node list");
  Result<size_t> model_col = nodes.Column("model", "node list");
  if (!gpu_col.ok()) return gpu_col.status();
  if (!model_col.ok()) return model_col.status();
  std::map<std::string, int64_t, std::less<>> gpus_by_model;
  for (size_t i = 0; i < nodes.rows().size(); ++i) {
    int64_t gpus = 0;
    if (!ParseInt(nodes.rows()[i][*gpu_col], gpus) || gpus < 0)
      return InvalidArgumentError("node list line " + std::to_string(i + 2) + ": gpu \"" +
                                  std::string(nodes.rows()[i][*gpu_col]) + "\" is not a GPU count");
    gpus_by_model[std::string(nodes.rows()[i][*model_col])] += gpus;
  }
  // Integer micro-dollars per GPU-hour, so the blend does not depend on summation order.
  MicroUsd weighted = 0;
  int64_t total = 0;
  for (const auto& [model, gpus] : gpus_by_model) {
    if (gpus == 0) continue;
    Result<double> price = config.prices.GpuHourPrice(model, config.region);
    if (!price.ok())
      return Status(price.status().code(), "node inventory: " + price.status().message());
    Result<MicroUsd> micro = UsdToMicro(*price);
    int64_t product = 0;
    if (!micro.ok() || __builtin_mul_overflow(gpus, *micro, &product))
      return InvalidArgumentError("node inventory: blended price of " + model + " overflows");
    GPUVPA_RETURN_IF_ERROR(CheckedAdd(weighted, product, "node inventory blended price"));
    GPUVPA_RETURN_IF_ERROR(CheckedAdd(total, gpus, "node inventory GPU count"));
  }
  if (total == 0) return InvalidArgumentError("node list holds no GPUs");
  return static_cast<double>(weighted) / static_cast<double>(total) / 1e6;
}

}  // namespace

Result<OpenbImport> BuildOpenbImport(std::string_view pods_csv, std::string_view nodes_csv,
                                     const GpuvpaConfig& config) {
  Result<SimpleCsv> pods = SimpleCsv::Parse(pods_csv, "pod list");
  if (!pods.ok()) return pods.status();
  Result<SimpleCsv> nodes = SimpleCsv::Parse(nodes_csv, "node list");
  if (!nodes.ok()) return nodes.status();
  OpenbImport out;
  Result<double> blended = BlendedPrice(*nodes, config);
  if (!blended.ok()) return blended.status();
  out.blended_usd_per_gpu_hour = *blended;

  std::map<std::string_view, size_t> col;
  for (std::string_view name :
       {"name", "num_gpu", "gpu_milli", "gpu_spec", "qos", "scheduled_time", "deletion_time"}) {
    Result<size_t> c = pods->Column(name, "pod list");
    if (!c.ok()) return c.status();
    col[name] = *c;
  }
  for (size_t i = 0; i < pods->rows().size(); ++i) {
    const auto& row = pods->rows()[i];
    ++out.pods;
    const std::string line = "pod list line " + std::to_string(i + 2);
    int64_t num_gpu = 0;
    int64_t milli = 0;
    if (!ParseInt(row[col["num_gpu"]], num_gpu) || num_gpu < 0)
      return InvalidArgumentError(line + ": num_gpu \"" + std::string(row[col["num_gpu"]]) +
                                  "\" is not a count");
    if (!ParseInt(row[col["gpu_milli"]], milli) || milli < 0 || milli > 1000)
      return InvalidArgumentError(line + ": gpu_milli \"" + std::string(row[col["gpu_milli"]]) +
                                  "\" is not 0..1000");
    if (num_gpu == 0 || milli == 0) {
      ++out.skipped_no_gpu;
      continue;
    }
    const std::string_view scheduled_text = row[col["scheduled_time"]];
    if (scheduled_text.empty()) {
      ++out.skipped_unscheduled;
      continue;
    }
    int64_t scheduled = 0;
    int64_t deleted = 0;
    if (!ParseInt(scheduled_text, scheduled) || !ParseInt(row[col["deletion_time"]], deleted) ||
        deleted < scheduled)
      return InvalidArgumentError(line + ": scheduled_time \"" + std::string(scheduled_text) +
                                  "\" / deletion_time \"" + std::string(row[col["deletion_time"]]) +
                                  "\" do not form a lifetime");
    const std::string_view spec = row[col["gpu_spec"]];
    const std::string model = spec.empty() ? std::string(kUnspecifiedGpuModel)
                                           : std::string(spec.substr(0, spec.find('|')));
    double price = *blended;
    if (!spec.empty()) {
      Result<double> p = config.prices.GpuHourPrice(model, config.region);
      if (!p.ok()) return Status(p.status().code(), line + ": " + p.status().message());
      price = *p;
    }
    UsageRowFields a;
    a.action_id = "openb/" + std::string(row[col["name"]]);
    a.time_s = scheduled;
    a.namespace_name = "openb-" + Lower(row[col["qos"]]);
    a.workload = std::string(row[col["name"]]);
    a.cost_center = ResolveCostCenter(config.cost_centers, a.namespace_name);
    a.gpu_model = model;
    a.allocation = milli == 1000 ? "nvidia.com/gpu=" + std::to_string(num_gpu)
                                 : "gpu-milli=" + std::to_string(milli);
    a.period_start_s = scheduled;
    a.period_end_s = deleted;
    int64_t milli_gpus = 0;
    if (__builtin_mul_overflow(num_gpu, milli, &milli_gpus) ||
        __builtin_mul_overflow(milli_gpus, deleted - scheduled, &a.allocated_gpu_time))
      return InvalidArgumentError(line + ": GPU time overflows");
    Result<MicroUsd> allocated = PriceGpuTime(a.allocated_gpu_time, price);
    if (!allocated.ok())
      return Status(allocated.status().code(), line + ": " + allocated.status().message());
    a.allocated = *allocated;  // usage unmeasured: an allocation trace
    a.evidence_json =
        R"({"source":"alibaba/clusterdata cluster-trace-gpu-v2023 openb_pod_list_default.csv"})";
    out.actions.push_back(AllocatedUsageRow(std::move(a)));
  }
  return out;
}

}  // namespace gpuvpa
