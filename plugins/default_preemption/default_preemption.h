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
// Which nodes are tried follows kube-scheduler: from a per-pod offset until
// max(nodes x minCandidateNodesPercentage / 100, minCandidateNodesAbsolute) candidates are found
// (scheduler/preemption/preemption.h), and only nodes that hold a pod the preemptor may evict or
// a terminating pod (scheduler/preemption/victim_index.h, kept here in step with the snapshot; a
// preemptor that outranks every running pod is answered without a walk); a node's dry run is
// kept while the node and the pods nominated there stay the same (candidate_memo.h). In
// reference mode (FrameworkOptions::reference) every node is tried, for the differential test.
//
// A gang (the gang cycle's PendingGang) is made room for as one: preemption::PlanGangPreemption
// places every member needed on the nodes it frees, within one tier of the gang's flavors at a
// time (framework/node_tiers.h), under the same candidate limits; its victims are evicted in
// budget order and the members nominated by the cycle. Without this plugin in a profile's
// postFilter, neither pods nor gangs preempt.
//
// Args (kube-scheduler's DefaultPreemptionArgs): minCandidateNodesPercentage (0..100, default
// 10), minCandidateNodesAbsolute (>= 0, default 100); not both 0.
#pragma once

#include "scheduler/framework/registry.h"
#include "scheduler/preemption/preemption.h"

namespace tessel::default_preemption {

struct DefaultPreemptionArgs {
  int32_t min_candidate_nodes_percentage = 10;
  int32_t min_candidate_nodes_absolute = 100;
};

class DefaultPreemption final : public PostFilterPlugin, public GangPostFilterPlugin {
 public:
  static constexpr std::string_view kName = "DefaultPreemption";
  using Args = DefaultPreemptionArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<DefaultPreemption>> New(Args args, Handle& handle);
  DefaultPreemption(Handle& handle, preemption::CandidateLimits limits)
      : handle_(handle), limits_(limits) {}
  std::string_view Name() const override { return kName; }
  PostFilterResult PostFilter(CycleState& state, const Pod& pod,
                              const NodeStatusMap& filtered) override;
  GangPostFilterResult PostFilterGang(const PendingGang& gang) override;
  // How often a dry run's answer was kept from an earlier attempt (zeros in reference mode).
  preemption::CandidateMemo::Stats memo_stats() const { return memo_.stats(); }

 private:
  Handle& handle_;
  const preemption::CandidateLimits limits_;
  preemption::VictimIndex index_;  // the scheduling thread's, like the cycle
  preemption::CandidateMemo memo_;   // likewise
};

}  // namespace tessel::default_preemption
