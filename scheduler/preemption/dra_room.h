// DRA devices in the arithmetic of moves (moves.h) and consolidation: what a pod's own
// ResourceClaims hold, which pods' claims are their own (a move frees them: the pod's
// replacement gets a new claim from the template, or a new extended-resource claim), and how many
// DRA devices each node has free. Read from the objects the informers keep (raw JSON, as the
// quota charge reads them: this floor does not decode DRA objects). A DRA device counts as one
// GPU (1000 milli), whatever its class, as the quota charge counts it (Pod::dra_charge).
//
//   if (ClaimsAllOwn(pod, objects)) ... moving `pod` frees DraDeviceMilli(pod)
//   StringKeyedMap<int64_t> free = DraFreeMilliByNode(objects);
#pragma once

#include <cstdint>

#include "scheduler/api/objects.h"
#include "scheduler/state/cluster_objects.h"
#include "scheduler/util/strings.h"

namespace tessel::preemption {

// The devices the pod's spec.resourceClaims ask for (Pod::dra_charge, every resource), x 1000.
// Its extended-resource claim is not in it: its request (nvidia.com/gpu) says as much.
int64_t DraDeviceMilli(const Pod& pod);

// GPU-equivalent milli the pod asks for: its GPU request (an extended resource DRA may serve
// included) and the devices of its own DRA claims (DraDeviceMilli).
int64_t AskedGpuMilli(const Pod& pod);

// Whether every claim in the pod's spec.resourceClaims is its own: made from a template for
// this pod (it is the claim's controlling owner) and reserved for no other pod. A named claim
// (resourceClaimName) is not, nor a claim not made yet or not found. True without claims.
bool ClaimsAllOwn(const Pod& pod, const ClusterObjects& objects);

// Whether the pod may get devices through DRA: it has claims, or it asks for an extended
// resource a DeviceClass serves (spec.extendedResourceName, or the class's implicit name).
bool UsesDra(const Pod& pod, const ClusterObjects& objects);

// Free DRA devices x 1000 by node name: the devices of the ResourceSlices published for one node
// (spec.nodeName; a pool in its newest generation) less those allocated claims hold. Devices of
// slices for several nodes (nodeSelector, allNodes) are left out: no node has them to itself.
StringKeyedMap<int64_t> DraFreeMilliByNode(const ClusterObjects& objects);

}  // namespace tessel::preemption
