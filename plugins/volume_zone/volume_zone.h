// VolumeZone (PreFilter, Filter), as kube-scheduler's plugin of that name: a pod's bound
// PersistentVolumes that carry zone or region labels (topology.kubernetes.io/zone and /region,
// and the older failure-domain.beta.kubernetes.io/zone and /region) fit only nodes with the same
// label values. A PV label may list several zones joined by "__" (kube's multi-zone form). A node
// with none of these labels passes (kube-scheduler's rule: it cannot tell). Unbound claims are
// VolumeBinding's; a missing claim or PV is a reason naming it.
//
// PreFilter collects the volumes' topology labels once (Skip when none); Filter compares them
// with the node's labels. The outcome depends on the storage objects, so the plugin is not
// node-local: the decision cache evaluates every node for a pod it does not skip.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::volume_zone {

inline constexpr std::string_view kReasonConflict = "node(s) had no available volume zone";

// The zone/region requirements of the pod's bound volumes: label -> allowed values, one entry
// per volume label.
using Requirements = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The node satisfies every requirement (or has no zone/region labels at all).
bool NodeSatisfies(const Requirements& requirements, const Node& node);

class VolumeZone final : public PreFilterPlugin, public FilterPlugin {
 public:
  static constexpr std::string_view kName = "VolumeZone";
  static absl::StatusOr<std::unique_ptr<VolumeZone>> New(Handle& handle);  // takes no args
  explicit VolumeZone(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kStorageChange | kNodeAdd | kNodeUpdate; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;

 private:
  Handle& handle_;
};

}  // namespace tessel::volume_zone
