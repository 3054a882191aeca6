// NodeVolumeLimits (PreFilter, Filter), kube-scheduler's CSI volume limits: a node takes a pod
// only if, for every CSI driver, the distinct volumes its pods attach plus the pod's new ones
// stay within what the driver can attach there.
//
// A pod's volumes are its claims (generic ephemeral ones included). A claim bound to a PV with a
// spec.csi source counts as that driver's volume spec.csi.volumeHandle; a claim not bound yet
// (or whose PV is not known yet) counts as one volume of its StorageClass's provisioner. Other
// sources (in-tree, local, no class) are not counted. A volume several pods share counts once,
// and a pod's volume already attached on the node adds nothing.
//
// Limits per driver: the node's CSINode spec.drivers[].allocatable.count, else its
// status.allocatable "attachable-volumes-csi-<driver>" (the older way); a driver with neither
// is not limited. Rejection: Unschedulable "node(s) exceed max volume count" (preemption may
// free volumes by evicting pods). Not done: in-tree volumes under CSI migration, inline CSI
// volumes, and the hashed allocatable key of driver names over 40 characters.
//
// Filter reads the node's other pods and cluster-wide objects, so it is not node-local; pods
// without claims skip it and stay cacheable.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::node_volume_limits {

inline constexpr std::string_view kReasonMaxVolumeCountExceeded = "node(s) exceed max volume count";

class NodeVolumeLimits final : public PreFilterPlugin, public FilterPlugin {
 public:
  static constexpr std::string_view kName = "NodeVolumeLimits";
  static absl::StatusOr<std::unique_ptr<NodeVolumeLimits>> New(Handle& handle);  // takes no args
  explicit NodeVolumeLimits(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return kName; }
  // A pod leaving frees its volumes; a CSINode, PV, claim or class changing changes the count;
  // a node update may change its allocatable limits.
  uint32_t EventsToRegister() const override {
    return kAssignedPodDelete | kStorageChange | kNodeAdd | kNodeUpdate;
  }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;

 private:
  Handle& handle_;
};

}  // namespace tessel::node_volume_limits
