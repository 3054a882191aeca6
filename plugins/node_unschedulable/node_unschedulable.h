// NodeUnschedulable (Filter): cordoned nodes (spec.unschedulable) take no new pods unless the
// pod tolerates node.kubernetes.io/unschedulable; nodes whose Ready condition is not True take
// none unless the pod tolerates node.kubernetes.io/not-ready.
#pragma once

#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::node_unschedulable {

inline constexpr std::string_view kUnschedulableReason = "node(s) were unschedulable";
inline constexpr std::string_view kNotReadyReason = "node(s) were not ready";

class NodeUnschedulable final : public FilterPlugin, public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "NodeUnschedulable";
  static absl::StatusOr<std::unique_ptr<NodeUnschedulable>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  bool AppendFilterKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendTolerations(pod.tolerations, key);
    return true;
  }
};

}  // namespace tessel::node_unschedulable
