// Workload-container keys.
#include "core/base/workload_key.h"

namespace gpuvpa {
namespace {
constexpr char kKeySeparator = '\x1f';  // ASCII unit separator
}  // namespace

void AssignWorkloadKey(std::string& out, std::string_view namespace_name,
                       std::string_view owner_kind, std::string_view owner_name,
                       std::string_view container) {
  out.clear();
  out.append(namespace_name).push_back(kKeySeparator);
  out.append(owner_kind).push_back(kKeySeparator);
  out.append(owner_name).push_back(kKeySeparator);
  out.append(container);
}

std::string WorkloadDisplayName(std::string_view namespace_name, std::string_view owner_kind,
                                std::string_view owner_name, std::string_view container) {
  std::string out;
  out.append(namespace_name).append("/").append(owner_kind).append("/").append(owner_name);
  out.append("/").append(container);
  return out;
}

}  // namespace gpuvpa
