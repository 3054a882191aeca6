// VolumeRestrictions (PreFilter, Filter), the ReadWriteOncePod rule of kube-scheduler's plugin:
// a claim with access mode ReadWriteOncePod is used by one pod at a time, so a pod that uses one
// fits no node while another pod (bound, or assumed by this scheduler) uses the same claim.
// The rejection is Unschedulable, not unresolvable: preemption may evict the other pod (its
// dry run removes pods through the PreFilter extensions, which keep the count).
// Not done: the rules for in-tree inline volumes (GCE PD, AWS EBS, RBD, iSCSI) on one node.
//
// The count reads every node's pods, so the plugin is not node-local; pods without such a
// claim skip it and stay cacheable.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::volume_restrictions {

inline constexpr std::string_view kReasonReadWriteOncePodConflict =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

class VolumeRestrictions final : public PreFilterPlugin, public FilterPlugin, public PreFilterExtensions {
 public:
  static constexpr std::string_view kName = "VolumeRestrictions";
  static absl::StatusOr<std::unique_ptr<VolumeRestrictions>> New(Handle& handle);  // takes no args
  explicit VolumeRestrictions(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return kName; }
  // The other user leaving frees the claim; a claim changing may change its access modes.
  uint32_t EventsToRegister() const override { return kAssignedPodDelete | kStorageChange; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  const PreFilterExtensions* Extensions() const override { return this; }
  Status AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                const NodeInfo& node) const override;
  Status RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                   const NodeInfo& node) const override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;

 private:
  Handle& handle_;
};

}  // namespace tessel::volume_restrictions
