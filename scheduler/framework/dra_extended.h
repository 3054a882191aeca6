// Extended resources backed by Dynamic Resource Allocation (Kubernetes' DRAExtendedResource, GA
// in 1.37): a DeviceClass with spec.extendedResourceName (or any class, under its implicit name
// deviceclass.resource.kubernetes.io/<class>) serves a pod's ordinary request such as
// nvidia.com/gpu: 1 with a DRA device, on nodes whose allocatable has none of that resource.
//
// The DynamicResources plugin's PreFilter finds which of the pod's extended resources a class
// serves and writes them into the cycle state; the plugins that fit extended resources against
// allocatable (NodeResourcesFit, GpuShare) leave those resources to it on the nodes where the
// device plugin does not advertise them, as kube-scheduler's NodeResourcesFit does. Without the
// DynamicResources plugin in the profile nothing is left to DRA.
//
//   if (ServedByDra(state, "nvidia.com/gpu", node)) return Status::Ok();  // DynamicResources fits it
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "scheduler/framework/cycle_state.h"
#include "scheduler/state/node_info.h"

namespace tessel {

// The prefix of every class's implicit extended resource name.
inline constexpr std::string_view kDeviceClassResourcePrefix = "deviceclass.resource.kubernetes.io/";

// The pod's extended resources a DeviceClass serves: resource name -> class name.
struct DraExtendedResources {
  std::map<std::string, std::string, std::less<>> class_of;
};
inline constexpr std::string_view kDraExtendedStateKey = "DynamicResources/extended-resources";

// What PreFilter wrote; null when no class serves any of the pod's resources.
const DraExtendedResources* DraExtendedOf(const CycleState& state);

// `resource` is left to DRA on `node`: a class serves it and the node's allocatable has none.
bool ServedByDra(const CycleState& state, std::string_view resource, const NodeInfo& node);
bool ServedByDra(const DraExtendedResources* served, std::string_view resource, const Resources& allocatable);

// For decision-cache keys (node_local.h): the served resources and their classes.
void AppendDraExtendedKey(const CycleState& state, std::string& key);

// A resource name that may be an extended resource served by DRA: a domain-prefixed name outside
// kubernetes.io (nvidia.com/gpu), or a class's implicit name.
bool MayBeDraExtendedResource(std::string_view name);

}  // namespace tessel
