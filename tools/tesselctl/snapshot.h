// `tesselctl snapshot`: the cluster as tessel-bench replay (and `tesselctl simulate`) reads it,
// a v1 List of nodes, pods, priority classes, PodGroups, Queues, PodDisruptionBudgets, the
// volume kinds (claims, volumes, storage classes, CSINodes), Namespaces and the Dynamic Resource
// Allocation kinds (resource.k8s.io/v1 ResourceSlices, DeviceClasses, ResourceClaims), each item
// with its apiVersion and kind. Kinds the cluster does not serve (a CRD not installed, DRA before
// Kubernetes 1.34) are left out.
//
// Anonymized, namespaces, pods, nodes, ResourceClaims, ResourceSlices and DRA pools are renamed
// consistently (ns-1, pod-1, node-1, claim-1, slice-1, pool-1 in order of first appearance)
// wherever the snapshot names them (see Anonymize in snapshot.cc); other names (queues, PodGroups, priority classes, device
// classes, drivers, devices) stay.
//
//   ASSIGN_OR_RETURN(nlohmann::json list, TakeSnapshot(client));
//   Anonymize(list);
#pragma once

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/client.h"

namespace tessel::ctl {

absl::StatusOr<nlohmann::json> TakeSnapshot(kube::KubeClient& client);
void Anonymize(nlohmann::json& list);

}  // namespace tessel::ctl
