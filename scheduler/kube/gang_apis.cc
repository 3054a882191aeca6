// API discovery of the upstream gang APIs (see gang_apis.h).
#include "scheduler/kube/gang_apis.h"

#include <algorithm>

#include "nlohmann/json.hpp"
#include "scheduler/gang/gang_api.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

using nlohmann::json;

GangApis GangApisFromGroup(const json& group) {
  std::vector<std::string> served;
  if (group.is_object()) {
    if (auto it = group.find("versions"); it != group.end() && it->is_array()) {
      for (const json& v : *it) {
        if (v.is_object()) served.push_back(JsonString(v, "groupVersion"));
      }
    }
  }
  auto serves = [&](std::string_view gv) { return std::find(served.begin(), served.end(), gv) != served.end(); };
  GangApis apis;
  for (std::string_view v : gang::kSchedulingPodGroupVersions) {  // newest first
    if (serves(v)) {
      apis.pod_group = std::string(v);
      break;
    }
  }
  apis.workload_v1alpha1 = serves(gang::kWorkloadApiVersion);
  return apis;
}

absl::StatusOr<GangApis> DiscoverGangApis(KubeClient& client) {
  absl::StatusOr<Response> resp = client.Do({.path = "/apis/scheduling.k8s.io"});
  if (!resp.ok()) return resp.status();
  if (resp->code == 404) return GangApis{};
  if (!resp->ok()) return resp->ToStatus("discovery GET /apis/scheduling.k8s.io");
  const json group = json::parse(resp->body, nullptr, false);
  if (group.is_discarded() || !group.is_object()) {
    return absl::DataLossError("discovery GET /apis/scheduling.k8s.io: reply is not JSON");
  }
  return GangApisFromGroup(group);
}

std::string Describe(const GangApis& apis) {
  std::string out = apis.pod_group.empty()
                        ? StrCat("the server serves no scheduling.k8s.io PodGroup (",
                                 StrJoin(gang::kSchedulingPodGroupVersions, ", "),
                                 "): pods' spec.schedulingGroup is not read (Kubernetes 1.37: feature gate "
                                 "GenericWorkload and --runtime-config=scheduling.k8s.io/v1beta1=true)")
                        : StrCat("PodGroups (spec.schedulingGroup) are read as ", apis.pod_group);
  if (apis.workload_v1alpha1) StrAppend(&out, "; Workloads (spec.workloadRef) as ", gang::kWorkloadApiVersion);
  return out;
}

}  // namespace tessel::kube
