// DefaultPreemption (PostFilter): when a pod fits nowhere, evict lower-priority pods so that it
// fits somewhere, as kube-scheduler's defaultpreemption does. The victims are chosen by
// scheduler/preemption (shared with gang preemption); this plugin evicts them through the
// Eviction API (ClusterApi::Evict, so PodDisruptionBudgets hold) and nominates the node.
//
// A candidate whose evictions a PodDisruptionBudget refuses (HTTP 429) is dropped and the next
// best one tried; victims covered by a budget are evicted first, so a refusal usually comes
// before anything else on that node was evicted. The pod waits for its victims to leave with
// status.nominatedNodeName set; meanwhile no pod of lower or equal priority takes that room.
//
// Args: none.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::default_preemption {

class DefaultPreemption final : public PostFilterPlugin {
 public:
  static constexpr std::string_view kName = "DefaultPreemption";
  static absl::StatusOr<std::unique_ptr<DefaultPreemption>> New(const YAML::Node& args, Handle& handle);
  explicit DefaultPreemption(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return kName; }
  PostFilterResult PostFilter(CycleState& state, const Pod& pod,
                              const NodeStatusMap& filtered) override;

 private:
  Handle& handle_;
};

}  // namespace tessel::default_preemption
