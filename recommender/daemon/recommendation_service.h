// gpuvpa.v1.RecommendationService over the daemon's snapshots: List and Get read the current
// snapshot; Watch sends the matching recommendations, then what changed after each poll, until
// the client leaves or the daemon stops (then the stream ends with OK).
#pragma once

#include "proto/gpuvpa.grpc.pb.h"
#include "recommender/daemon/recommender_daemon.h"

namespace gpuvpa::recommender {

class RecommendationServiceImpl final : public v1::RecommendationService::Service {
 public:
  explicit RecommendationServiceImpl(RecommenderDaemon& daemon) : daemon_(daemon) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListRecommendationsRequest* request,
                    v1::ListRecommendationsResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRecommendationRequest* request,
                   v1::Recommendation* response) override;
  grpc::Status Watch(grpc::ServerContext* context, const v1::ListRecommendationsRequest* request,
                     grpc::ServerWriter<v1::RecommendationUpdate>* writer) override;

 private:
  RecommenderDaemon& daemon_;
};

}  // namespace gpuvpa::recommender
