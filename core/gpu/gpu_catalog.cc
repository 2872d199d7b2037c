// Built-in GPU catalog and product-name matching.
#include "core/gpu/gpu_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

namespace gpuvpa {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Profiles in catalog order: 1g, 1g with 2x memory, 2g, 3g, 4g, 7g (slices 1/1, 2/1, 2/2, 4/3,
// 4/4, 8/7 memory/compute).
std::vector<MigProfile> Profiles(const std::array<const char*, 6>& names,
                                 const std::array<double, 6>& usable_bytes) {
  static constexpr std::array<int, 6> kMem = {1, 2, 2, 4, 4, 8};
  static constexpr std::array<int, 6> kCompute = {1, 1, 2, 3, 4, 7};
  std::vector<MigProfile> out;
  for (size_t i = 0; i < names.size(); ++i) {
    out.push_back(MigProfile{names[i], kCompute[i], kMem[i], usable_bytes[i]});
  }
  return out;
}

std::vector<GpuModel> BuiltInModels() {
  // Usable MIG memory: A100-40GB and A100-80GB as reported by nvidia-smi (MiB); H100-80GB has
  // the A100-80GB layout; H200 in GiB as in DESIGN.md.
  const std::array<double, 6> a100_40 = {4864 * kMiB,  9856 * kMiB,  9856 * kMiB,
                                         19968 * kMiB, 19968 * kMiB, 40192 * kMiB};
  const std::array<double, 6> a100_80 = {9856 * kMiB,  19968 * kMiB, 19968 * kMiB,
                                         40192 * kMiB, 40192 * kMiB, 80384 * kMiB};
  const std::array<double, 6> h200 = {16.00 * kGiB, 32.25 * kGiB, 32.25 * kGiB,
                                      69.50 * kGiB, 69.50 * kGiB, 139.75 * kGiB};
  return {
      {"A100-40GB", 40 * kGiB,
       Profiles({"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}, a100_40)},
      {"A100-80GB", 80 * kGiB,
       Profiles({"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}, a100_80)},
      {"H100-80GB", 80 * kGiB,
       Profiles({"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}, a100_80)},
      {"H200-141GB", 141 * 1e9,
       Profiles({"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}, h200)},
      {"L40S-48GB", 48 * kGiB, {}},
      {"L4-24GB", 24 * kGiB, {}},
      {"A30-24GB", 24 * kGiB, {}},
      {"A10-24GB", 24 * kGiB, {}},
      {"T4-16GB", 16 * kGiB, {}},
      {"V100-16GB", 16 * kGiB, {}},
      {"V100-32GB", 32 * kGiB, {}},
      {"P100-16GB", 16 * kGiB, {}},
  };
}

std::string UpperAlnum(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    else
      out.push_back(' ');
  }
  return out;
}

// Families longest first so "A100" is not read as "A10" and "L40S" not as "L4".
constexpr std::array<const char*, 10> kFamilies = {"L40S", "A100", "H100", "H200", "V100",
                                                   "P100", "A30",  "A10",  "L4",   "T4"};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Finds `token` in `text` as a whole word or followed by memory digits (A100 in "A100 SXM4").
size_t FindFamily(const std::string& text, std::string_view token) {
  for (size_t pos = text.find(token); pos != std::string::npos; pos = text.find(token, pos + 1)) {
    bool left_ok = pos == 0 || !IsWordChar(text[pos - 1]);
    size_t end = pos + token.size();
    bool right_ok = end == text.size() || !IsWordChar(text[end]) || text[end] == 'G' ||
                    (text[end] == 'M' && end + 1 < text.size() &&
                     std::isdigit(static_cast<unsigned char>(text[end + 1])));
    if (left_ok && right_ok) return pos;
  }
  return std::string::npos;
}

// Memory size in the name: "M32" right after the family (Alibaba's "V100M32"), else a number
// followed by "GB" ("80GB", "80 GB") that is not glued to letters before it ("SXM4" is not).
int FindMemoryGb(const std::string& text, size_t family_end) {
  // A memory size has a few digits; longer runs are not one (and must not overflow an int).
  constexpr int kMaxMemoryGb = 100000;
  auto digits_at = [&](size_t i, size_t& end) {
    int value = 0;
    for (end = i; end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])); ++end)
      value = value > kMaxMemoryGb ? value : value * 10 + (text[end] - '0');
    return value > kMaxMemoryGb ? 0 : value;
  };
  size_t end = 0;
  if (family_end < text.size() && text[family_end] == 'M') {
    const int value = digits_at(family_end + 1, end);
    if (end > family_end + 1) return value;
  }
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const int value = digits_at(i, end);
    size_t k = end;
    while (k < text.size() && text[k] == ' ') ++k;
    if (text.compare(k, 2, "GB") == 0 &&
        (i == 0 || !std::isalpha(static_cast<unsigned char>(text[i - 1]))))
      return value;
    i = end;
  }
  return 0;
}

}  // namespace

double MigProfile::SliceFraction() const {
  return std::max(static_cast<double>(memory_slices) / kMigMemorySlices,
                  static_cast<double>(compute_slices) / kMigComputeSlices);
}

Result<const MigProfile*> GpuModel::FindMigProfile(std::string_view profile) const {
  for (const MigProfile& p : mig_profiles) {
    if (p.name == profile) return &p;
  }
  std::string known;
  for (const MigProfile& p : mig_profiles) known += (known.empty() ? "" : ", ") + p.name;
  return InvalidArgumentError("unknown MIG profile \"" + std::string(profile) + "\" for GPU " +
                              name +
                              (known.empty() ? " (no MIG support)" : " (known: " + known + ")"));
}

const GpuCatalog& GpuCatalog::BuiltIn() {
  static const GpuCatalog catalog(BuiltInModels());
  return catalog;
}

GpuCatalog::GpuCatalog(std::vector<GpuModel> models) : models_(std::move(models)) {}

Result<const GpuModel*> GpuCatalog::FindModel(std::string_view name) const {
  for (const GpuModel& m : models_) {
    if (m.name == name) return &m;
  }
  const std::string text = UpperAlnum(name);
  for (const char* family : kFamilies) {
    const size_t at = FindFamily(text, family);
    if (at == std::string::npos) continue;
    const int memory_gb = FindMemoryGb(text, at + std::strlen(family));
    const GpuModel* only = nullptr;
    int candidates = 0;
    for (const GpuModel& m : models_) {
      if (m.name.rfind(std::string(family) + "-", 0) != 0) continue;
      ++candidates;
      only = &m;
      if (memory_gb > 0 && m.name == std::string(family) + "-" + std::to_string(memory_gb) + "GB")
        return &m;
    }
    if (candidates == 1 && memory_gb == 0) return only;
    break;
  }
  return InvalidArgumentError("unknown GPU model \"" + std::string(name) + "\"");
}

}  // namespace gpuvpa
