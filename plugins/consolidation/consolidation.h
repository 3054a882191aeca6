// Consolidation (PostFilter): when a pod that asks for GPUs fits nowhere, and preemption did not
// help, although enough GPUs are free across nodes, move running pods that opted in (movable:
// scheduler/preemption/disruption.h) so that one node holds it. The plan comes from
// scheduler/preemption/moves.h: on a node, the fewest movable pods whose removal lets the pod fit
// (preemption's dry run and reprieve), accepted only if every one of them fits on another node
// at once, and no PodDisruptionBudget would refuse one of its evictions (a plan is carried out
// whole or not started); the best plan moves the fewest pods, then the fewest GPUs. Its pods are
// evicted through the Eviction API (an eviction the API server still refuses tries the next
// plan) and told why (event "Moved", condition DisruptionTarget reason
// ConsolidationByScheduler, naming the pod they made room for); the pod is nominated to the
// node, so nothing else takes the room. The moved pods' controllers recreate them and the
// scheduler places them as any pod.
//
// DRA: a waiting pod's own ResourceClaims count one GPU per device (Pod::dra_charge) and an
// extended resource a DeviceClass serves counts as its request; the nodes' free DRA devices count
// as free GPUs (scheduler/preemption/dra_room.h). A moved pod's own claims (made from a template
// for it, or for its extended resources) are made anew when it comes back, so the plan places it
// with them unallocated; a pod holding a claim it does not own (named, or reserved for other pods
// too) is not moved (the claim stays allocated on its node).
//
// No thrashing: a pod is moved only after it ran `minRunSeconds` (its PriorityClass or Queue may
// set another minimum), and at most `maxMovesPerPod` times within `moveWindowSeconds`, counted
// per workload (its controller; a Job's completion index) across recreations. Gang members are
// not moved (a move would restart the whole gang). A pod with preemptionPolicy: Never moves
// nobody.
//
// A plan sought in vain for a pod is not sought again for 30 s (the cluster changes at every
// pod that ends; the search costs dry runs on up to 16 nodes).
//
// Args: minRunSeconds (>= 0, default 600), maxMovesPerPod (>= 0, default 1; 0 moves nothing),
// moveWindowSeconds (1..86400, the 24 h the scheduler remembers moves; default 3600),
// minPodGpus (0..1024, default 2): the fewest GPUs a waiting pod asks for to be made room for
// (physical-GPU equivalents, DRA devices included; 0: any pod with a GPU request or DRA claim,
// fractions included).
#pragma once

#include "absl/container/flat_hash_map.h"
#include "scheduler/framework/registry.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/preemption/moves.h"

namespace tessel::consolidation {

struct ConsolidationArgs {
  int64_t min_run_seconds = 600;
  int32_t max_moves_per_pod = 1;
  int64_t move_window_seconds = 3600;
  int64_t min_pod_gpus = 2;
};

class Consolidation final : public PostFilterPlugin, public NoFitPostFilterPlugin, public GangPostFilterPlugin {
 public:
  static constexpr std::string_view kName = "Consolidation";
  // The reason on its victims (scheduler_preemption_victims{reason="Consolidation"}).
  static constexpr std::string_view kReason = "Consolidation";
  using Args = ConsolidationArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<Consolidation>> New(Args args, Handle& handle);
  Consolidation(Handle& handle, Args args) : handle_(handle), args_(args) {}
  std::string_view Name() const override { return kName; }
  PostFilterResult PostFilter(CycleState& state, const Pod& pod,
                              const NodeStatusMap& filtered) override;
  // Moves for a whole gang (preemption::PlanGangMoves), asked by the gang cycle when gang
  // preemption found no room: the members are nominated to their nodes by the caller.
  GangPostFilterResult PostFilterGang(const PendingGang& gang) override;

 private:
  // Preemption's context with the movable pods as victims, under the minimum run time and the
  // move limit at `now`; `rules` must outlive it.
  preemption::Context MoveContext(const Framework* fw, const preemption::DisruptionRules& rules,
                                  absl::Time now) const;

  Handle& handle_;
  const Args args_;
  preemption::MovableIndex index_;  // the scheduling thread's, like the cycle
  // When a plan was last sought in vain for a pod in a node tier, or for a gang: not again within
  // kRetryAfter (a full cluster wakes its waiting pods at every change; each search costs dry
  // runs). Keyed by the pod's key and its tier (-1: untiered), or by the gang's key and -2.
  using VainKey = std::pair<std::string, int64_t>;
  absl::flat_hash_map<VainKey, absl::Time> last_in_vain_;
};

}  // namespace tessel::consolidation
