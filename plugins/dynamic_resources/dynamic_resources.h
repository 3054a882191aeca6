// DynamicResources (PreFilter): the place of kube-scheduler's plugin of that name, which
// allocates Dynamic Resource Allocation (DRA, resource.k8s.io) claims. Tessel does not allocate
// DRA claims yet, so a pod that names one (spec.resourceClaims, which its containers' and the
// pod's resources.claims refer to) is never bound: bound without an allocation, the kubelet
// would never start it. It waits, unresolvable, with PodScheduled=False and a message that names
// the claim; nothing in the cluster can change that, so no event requeues it.
//
//   Status st = plugin.PreFilter(state, pod);  // Skip without claims, Unresolvable with them
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::dynamic_resources {

inline constexpr std::string_view kNotAllocated =
    "Tessel does not allocate Dynamic Resource Allocation (DRA) claims yet, so it does not bind "
    "the pod";

// The rejection for a pod with claims: every claim by name and what it refers to, then
// kNotAllocated.
std::string Reason(const Pod& pod);

class DynamicResources final : public PreFilterPlugin {
 public:
  static constexpr std::string_view kName = "DynamicResources";
  static absl::StatusOr<std::unique_ptr<DynamicResources>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return 0; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
};

}  // namespace tessel::dynamic_resources
