// What a pod's own DRA claims charge its team queue, so that devices asked for through
// ResourceClaims count against quota as GPUs asked for through requests do (Kueue's
// deviceClassMappings, without a mapping to configure): each device counts 1 (1000 milli) of the
// resource its DeviceClass names, spec.extendedResourceName, else the class's implicit name
// deviceclass.resource.kubernetes.io/<class>. A queue whose nominalQuota has nvidia.com/gpu thus
// covers a claim of the class that serves nvidia.com/gpu, and a claim of 2 GPUs charges 2.
//   - a request for ExactCount n charges n; All charges the devices it was allocated (1 before);
//     a prioritized list (firstAvailable) charges the subrequest allocated, else its first;
//   - admin access charges nothing;
//   - a claim several pods share is charged to each of them (fail closed: never less).
// Read from the objects the informers keep (raw JSON: this floor does not decode DRA objects).
// The core computes it when a pod arrives and again when its claims or their classes change;
// the bind records it with the pod's other charge inputs (pod_charge.h).
//
//   pod.dra_charge = DraChargeOf(pod, *store.view());
#pragma once

#include "scheduler/api/objects.h"
#include "scheduler/state/cluster_objects.h"

namespace tessel {

Resources DraChargeOf(const Pod& pod, const ClusterObjects& objects);

}  // namespace tessel
