// The ResourceClaim that serves a pod's extended resources through DRA (Kubernetes'
// DRAExtendedResource; scheduler/framework/dra_extended.h says which resources): one claim per pod,
// made by the scheduler at PreBind, with one request per container and resource, named and
// counted as kube-scheduler 1.37 does it, so that the kubelet reads the same mapping:
//   - each regular container and each sidecar (an init container with restartPolicy Always)
//     asking for the resource gets a request `container-<i>-request-<j>` of that many devices of
//     the class (i: the container's index among init containers then containers; j: the
//     resource's index among the container's requested resource names, sorted);
//   - a plain init container runs before them and alone: it first reuses the requests of the
//     long-lived containers from its index on, and asks only for what they do not cover; of the
//     init containers' own requests only the largest is made, and all of them map to it.
// The claim carries the annotation resource.kubernetes.io/extended-resource-claim: "true" and the
// pod as its controlling owner (the garbage collector deletes it with the pod), and the pod's
// status.extendedResourceClaimStatus maps each container and resource to its request.
//
//   ExtendedResourceClaim c = ExtendedResourceRequests(pod, {{"nvidia.com/gpu", "gpu.nvidia.com"}});
//   nlohmann::json create = EncodeExtendedResourceClaim(pod, c);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/dra/objects.h"

namespace tessel::dra {

inline constexpr std::string_view kExtendedResourceClaimAnnotation = "resource.kubernetes.io/extended-resource-claim";

// One status.extendedResourceClaimStatus.requestMappings entry.
struct ExtendedResourceMapping {
  std::string container_name;
  std::string resource_name;
  std::string request_name;
  bool operator==(const ExtendedResourceMapping&) const = default;
};

struct ExtendedResourceClaim {
  std::vector<DeviceRequest> requests;  // sorted by name
  std::vector<ExtendedResourceMapping> mappings;
};

// The requests for `served` (resource name -> DeviceClass name: the pod's resources left to DRA
// on one node). A container's amount that is not a whole number of devices asks for nothing.
ExtendedResourceClaim ExtendedResourceRequests(const Pod& pod, const std::map<std::string, std::string, std::less<>>& served);

// The claim as the scheduler creates it (POST; metadata.generateName <pod>-extended-resources-).
nlohmann::json EncodeExtendedResourceClaim(const Pod& pod, const ExtendedResourceClaim& claim);
// The pod's status.extendedResourceClaimStatus for the created claim `claim_name`.
nlohmann::json EncodeExtendedResourceClaimStatus(const ExtendedResourceClaim& claim, std::string_view claim_name);

// Whether `claim` is the one the scheduler made for `pod`'s extended resources: the annotation
// says so and the pod (this UID) is its controlling owner.
bool IsExtendedResourceClaimOf(const ResourceClaim& claim, const Pod& pod);

}  // namespace tessel::dra
