// Where tesselctl finds the admin API: the pod that holds the scheduler's leader Lease.
// tessel-scheduler's identity in the Lease is "<host name>_<suffix>", and in a Deployment the
// host name is the pod's name; the endpoint is that pod's IP and its container port named
// "admin" (else 10260). An explicit --server skips all of this.
//
//   ASSIGN_OR_RETURN(std::string endpoint, FindLeaderEndpoint(client, "kube-system", "tessel-scheduler"));
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/kube/client.h"

namespace tessel::ctl {

inline constexpr int kDefaultAdminPort = 10260;

absl::StatusOr<std::string> FindLeaderEndpoint(kube::KubeClient& client, std::string_view lease_namespace,
                                               std::string_view lease_name);

}  // namespace tessel::ctl
