// `tesselctl snapshot`: the cluster as tessel-bench replay (and `tesselctl simulate`) reads it,
// a v1 List of nodes, pods, priority classes, PodGroups, Queues, PodDisruptionBudgets and the
// volume kinds (claims, volumes, storage classes, CSINodes) plus Namespaces, each item with its
// apiVersion and kind. Kinds the cluster does not serve (a CRD not installed) are left out.
//
// Anonymized, namespaces, pods and nodes are renamed consistently (ns-1, pod-1, node-1 in order
// of first appearance) wherever the snapshot names them (see Anonymize in snapshot.cc); other
// names (queues, PodGroups, priority classes) stay.
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
