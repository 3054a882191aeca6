// resource.k8s.io/v1 JSON <-> the DRA objects of dra/objects.h. Decoding never throws: a
// malformed object is an InvalidArgument naming the object and the field, e.g.
//   ResourceSlice node-1-gpus: spec.devices[0].capacity.memory.value: quantity "lots" is not valid: ...
// Fields this release of Tessel does not allocate with (list-valued attributes, derived
// attributes, compatibility groups) are refused by name rather than ignored.
//
//   absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(json);
//   nlohmann::json status = EncodeClaimStatus(*claim->allocation, claim->reserved_for);
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/dra/objects.h"

namespace tessel::dra {

// What can be read of a slice that does not decode: its driver, pool, generation (the newest
// there can be when unreadable) and slice count, seen from every node, with `why` in
// ResourceSlice::undecodable; nullopt without a driver and a pool name.
std::optional<ResourceSlice> SliceIdentity(const nlohmann::json& object, std::string why);
absl::StatusOr<ResourceSlice> DecodeResourceSlice(const nlohmann::json& object);
absl::StatusOr<DeviceClass> DecodeDeviceClass(const nlohmann::json& object);
absl::StatusOr<ResourceClaim> DecodeResourceClaim(const nlohmann::json& object);
absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const nlohmann::json& object);

// status.allocation as the API server takes it.
nlohmann::json EncodeAllocation(const AllocationResult& allocation);
// A ResourceClaim status: {"allocation": ..., "reservedFor": [...]}, for the status write.
nlohmann::json EncodeClaimStatus(const AllocationResult& allocation,
                                 const std::vector<ConsumerReference>& reserved_for);

}  // namespace tessel::dra
