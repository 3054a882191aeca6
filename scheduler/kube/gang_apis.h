// Which versions of the upstream gang APIs the API server serves, found by API discovery, so
// that the live scheduler watches the newest version of each and no version the server lacks:
//   - the scheduling.k8s.io PodGroup that pods name in spec.schedulingGroup: v1beta1 on
//     Kubernetes 1.37 (GenericWorkload gate and --runtime-config=scheduling.k8s.io/v1beta1=true),
//     v1alpha3 there as alpha, v1alpha2 on 1.36;
//   - the scheduling.k8s.io/v1alpha1 Workload that pods name in spec.workloadRef (1.35 only).
// Served versions are read at start; a version enabled later is read after a restart.
//
//   GangApis apis = DiscoverGangApis(*client).value_or(GangApis{});
//   FeedOptions{.gang_apis = apis};
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/kube/client.h"

namespace tessel::kube {

struct GangApis {
  std::string pod_group;           // the PodGroup apiVersion to read; "" when none is served
  bool workload_v1alpha1 = false;  // scheduling.k8s.io/v1alpha1 Workload is served
};

// From the group's discovery document (an APIGroup: versions[].groupVersion).
GangApis GangApisFromGroup(const nlohmann::json& group);
// GET /apis/scheduling.k8s.io (a 404 is a server that serves none of them).
absl::StatusOr<GangApis> DiscoverGangApis(KubeClient& client);
// One line for the log: what is read, or why spec.schedulingGroup is not.
std::string Describe(const GangApis& apis);

}  // namespace tessel::kube
