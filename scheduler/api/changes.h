// Whether an object update changes anything scheduling reads. Informers deliver every write:
// node heartbeats (resourceVersion, condition timestamps) and a pod's own status writes are most
// of them, and none can make a parked pod schedulable, so they must not requeue anything.
#pragma once

#include "scheduler/api/objects.h"

namespace tessel {

// Labels, taints, unschedulable, allocatable, capacity, readiness: what Filter plugins read.
bool NodeSchedulingChanged(const Node& before, const Node& after);

// The spec fields, labels and annotations a cycle reads (requests, selectors, affinity,
// tolerations, priority, gates, ...); not resourceVersion, phase or nominatedNodeName.
bool PodSchedulingChanged(const Pod& before, const Pod& after);

}  // namespace tessel
