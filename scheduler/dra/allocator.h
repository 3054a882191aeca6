// The DRA allocator: devices for a pod's ResourceClaims on one node, with kube-scheduler's
// semantics (k8s.io/dynamic-resource-allocation/structured), written for Tessel. A pure
// function of its input: the node, the pod's claims, the node's devices (pools.h), the
// DeviceClasses, and what allocated claims already hold.
//
// Every request of every claim is allocated: `exactly` with ExactCount (count devices) or All
// (every matching device on the node, which then must all be free), `firstAvailable` (the first
// subrequest that can be satisfied wins); devices must satisfy the class's and the request's CEL
// selectors, the claim's matchAttribute / distinctAttribute constraints, and the request's
// tolerations of NoSchedule / NoExecute device taints. Admin access takes a device whoever holds
// it and consumes nothing (as upstream, a device one claim takes with admin access is in use for
// the claims after it in this allocation). Partitionable devices draw on their pool's shared counters; a device
// that allows multiple allocations is shared while its consumable capacity lasts (after the
// capacity's request policy rounded each request). Claims that are already allocated are kept,
// if the node can use their devices.
//
// The search is a backtracking search over devices in pool / slice / device order, trying device
// combinations (not permutations) within a request. It can go on past the first complete
// allocation to enumerate up to `max_alternatives` of them, and a DeviceChoice (device_choice.h)
// picks one; without a choice the first one found is taken, as kube-scheduler does.
//
//   NodeDevices devices = GatherNodeDevices(node, slices);
//   absl::StatusOr<AllocationOutcome> out = Allocate(
//       {.node = node, .claims = {&claim}, .devices = devices, .classes = classes, .allocated = held},
//       {.matcher = &matcher, .new_share_id = ids});
//   if (out.ok() && !out->fits()) { /* out->reason: "claim team-a/train, request gpu: ..." */ }
//
// An error (not an unfitting node) is a selector that fails to compile or evaluate; it names the
// class or claim, the selector and the device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/api/objects.h"
#include "scheduler/dra/device_choice.h"
#include "scheduler/dra/device_matcher.h"
#include "scheduler/dra/objects.h"
#include "scheduler/dra/pools.h"

namespace tessel::dra {

using DeviceClasses = std::map<std::string, DeviceClass, std::less<>>;

struct AllocationInput {
  const Node& node;
  std::vector<const ResourceClaim*> claims;  // the pod's claims, each once
  const NodeDevices& devices;                // GatherNodeDevices(node, slices)
  const DeviceClasses& classes;
  const AllocatedDevices& allocated;  // what every allocated claim holds
};

struct AllocatorOptions {
  const DeviceMatcher* matcher = nullptr;  // required
  const DeviceChoice* choice = nullptr;    // nullptr: the first allocation found
  int max_alternatives = 1;                // complete allocations to find before choosing
  // Devices tried before the search gives up (the node then does not fit, with that reason).
  int64_t max_steps = 100000;
  // A new UID for each share of a device that allows multiple allocations (the chosen
  // allocation's shares only). Required when such a device is allocated.
  std::function<std::string()> new_share_id;
};

struct AllocationOutcome {
  std::vector<AllocationResult> allocations;  // one per claim, when it fits
  std::vector<Pick> picks;                    // the devices newly allocated
  std::string reason;  // why the claims do not fit on the node; empty when they do
  int alternatives = 0;  // complete allocations the choice compared
  bool fits() const { return reason.empty(); }
};

absl::StatusOr<AllocationOutcome> Allocate(const AllocationInput& input, const AllocatorOptions& options);

// Up to `limit` complete allocations in search order (the first is kube-scheduler's), without
// share IDs; empty when there is none. For policies and tests.
absl::StatusOr<std::vector<Alternative>> EnumerateAllocations(const AllocationInput& input,
                                                              const AllocatorOptions& options,
                                                              int limit);

}  // namespace tessel::dra
