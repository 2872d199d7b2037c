// Leader election through a coordination.k8s.io/v1 Lease, as client-go's leaderelection does:
// the holder renews `renewTime` well inside `leaseDurationSeconds`; another candidate takes the
// lease only after the holder's renewTime is older than the duration, with an update that
// carries the read resourceVersion, so two candidates never both win (the loser gets a 409).
// A leader that cannot renew steps down before its lease can expire elsewhere.
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/kube/kube_client.h"

namespace gpuvpa::updater {

struct LeaseOptions {
  std::string ns = "gpuvpa";
  std::string name = "gpuvpa-updater";
  std::string identity;          // this replica (pod name)
  double duration_s = 15;        // leaseDurationSeconds
  double renew_deadline_s = 10;  // a leader that has not renewed for this long steps down
};

class LeaderElector {
 public:
  LeaderElector(KubeClient& client, LeaseOptions options)
      : client_(client), options_(std::move(options)) {}

  // Acquires or renews the lease; returns whether this replica leads now. API errors are
  // returned too, and leadership lapses after the renew deadline without a renewal.
  Result<bool> TryAcquireOrRenew(double now_s);
  // Gives the lease up (holderIdentity cleared) if held, so a successor need not wait.
  Status Release();
  bool leading(double now_s) const {
    return leading_ && now_s - last_renew_s_ < options_.renew_deadline_s;
  }
  uint64_t transitions_seen() const { return transitions_; }

 private:
  KubeClient& client_;
  LeaseOptions options_;
  bool leading_ = false;
  double last_renew_s_ = -1e18;
  uint64_t transitions_ = 0;
};

// The Lease's MicroTime format: "2026-12-03T15:04:05.000000Z".
std::string FormatMicroTime(double unix_s);
Result<double> ParseMicroTime(const std::string& text);

}  // namespace gpuvpa::updater
