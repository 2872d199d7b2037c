// RecommendationService handlers.
#include "recommender/daemon/recommendation_service.h"

#include <map>

#include "core/base/names.h"
#include "core/base/workload_key.h"

namespace gpuvpa::recommender {
namespace {

bool Matches(const v1::ListRecommendationsRequest& f, const v1::Recommendation& r) {
  const v1::WorkloadIdentity& id = r.identity();
  return (f.namespace_name().empty() || f.namespace_name() == id.namespace_name()) &&
         (f.cost_center().empty() || f.cost_center() == id.cost_center()) &&
         (f.owner_name().empty() || f.owner_name() == id.owner_name());
}

}  // namespace

grpc::Status RecommendationServiceImpl::List(grpc::ServerContext*,
                                             const v1::ListRecommendationsRequest* request,
                                             v1::ListRecommendationsResponse* response) {
  // Charts are computed only for readers that ask; the first such List after a quiet spell
  // waits for them up to this long (the updater's deadline is 10 s).
  constexpr std::chrono::seconds kChartsWait{5};
  const auto snap =
      request->include_charts() ? daemon_.SnapshotWithCharts(kChartsWait) : daemon_.snapshot();
  response->set_revision(snap->revision);
  for (const auto& [key, rec] : snap->by_key) {
    if (!Matches(*request, rec)) continue;
    v1::Recommendation* out = response->add_recommendations();
    *out = rec;
    if (auto charts = snap->charts_by_key.find(key);
        request->include_charts() && charts != snap->charts_by_key.end())
      *out->mutable_charts() = charts->second;
  }
  return grpc::Status::OK;
}

grpc::Status RecommendationServiceImpl::Get(grpc::ServerContext*,
                                            const v1::GetRecommendationRequest* request,
                                            v1::Recommendation* response) {
  for (const auto& [field, value] : {std::pair{"namespace_name", request->namespace_name()},
                                     std::pair{"owner_kind", request->owner_kind()},
                                     std::pair{"owner_name", request->owner_name()},
                                     std::pair{"container", request->container()}})
    if (value.empty())
      return {grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + " is required"};
  std::string key;
  AssignWorkloadKey(key, request->namespace_name(), request->owner_kind(), request->owner_name(),
                    request->container());
  const auto snap = daemon_.snapshot();
  auto it = snap->by_key.find(key);
  if (it == snap->by_key.end())
    return {grpc::StatusCode::NOT_FOUND,
            "no recommendation for " +
                QuoteForError(WorkloadDisplayName(request->namespace_name(), request->owner_kind(),
                                                  request->owner_name(), request->container()))};
  *response = it->second;
  return grpc::Status::OK;
}

grpc::Status RecommendationServiceImpl::Watch(
    grpc::ServerContext* context, const v1::ListRecommendationsRequest* request,
    grpc::ServerWriter<v1::RecommendationUpdate>* writer) {
  std::map<std::string, std::string> sent;  // key → serialized recommendation last sent
  std::map<std::string, v1::WorkloadIdentity> identities;
  uint64_t revision = 0;
  bool first = true;
  while (!context->IsCancelled()) {
    const auto snap = first ? daemon_.snapshot()
                            : daemon_.WaitForChange(revision, std::chrono::milliseconds(500));
    if (daemon_.stopping()) break;
    if (!first && snap->revision == revision) continue;
    v1::RecommendationUpdate update;
    update.set_revision(snap->revision);
    std::map<std::string, std::string> now;
    for (const auto& [key, rec] : snap->by_key) {
      if (!Matches(*request, rec)) continue;
      std::string bytes = rec.SerializeAsString();
      auto it = sent.find(key);
      if (it == sent.end() || it->second != bytes) *update.add_changed() = rec;
      identities[key] = rec.identity();
      now.emplace(key, std::move(bytes));
    }
    for (const auto& [key, bytes] : sent)
      if (!now.count(key)) {
        *update.add_removed() = identities[key];
        identities.erase(key);
      }
    sent = std::move(now);
    revision = snap->revision;
    if (first || update.changed_size() > 0 || update.removed_size() > 0)
      if (!writer->Write(update)) break;
    first = false;
  }
  return grpc::Status::OK;
}

}  // namespace gpuvpa::recommender
