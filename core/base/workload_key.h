// Workload-container identity as one string key: namespace, owner kind, owner name, container.
#pragma once

#include <string>
#include <string_view>

namespace gpuvpa {

// Joins the four parts with a separator that cannot occur in Kubernetes names, reusing `out`'s
// buffer (the hot path of trace replay builds one key per row).
void AssignWorkloadKey(std::string& out, std::string_view namespace_name,
                       std::string_view owner_kind, std::string_view owner_name,
                       std::string_view container);

// "namespace/Kind/name/container", for people.
std::string WorkloadDisplayName(std::string_view namespace_name, std::string_view owner_kind,
                                std::string_view owner_name, std::string_view container);

}  // namespace gpuvpa
