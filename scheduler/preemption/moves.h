// Moves: room for a pod that fits nowhere although the free room adds up, made by moving running
// pods that opted in (disruption.h) to other nodes. Shared machinery with preemption: on a node,
// the movable pods whose removal lets the pod fit are chosen by preemption's dry run and reprieve
// (SelectVictimsOnNode with Context::victim_rule), so no more are moved than needed; a set is a
// plan only if every pod it moves fits on another node at once, with the pod placed and the
// other moves made (each, largest first, on the fullest node that takes it, as packing would),
// and only if no PodDisruptionBudget would refuse one of its evictions (a plan is carried out
// whole or not started). The consolidation plugin (plugins/consolidation) evicts the best plan's
// pods and nominates the node; their controllers recreate them and the scheduler places them as
// any pod: where the plan found room for a moved pod proves that it has some, it is no promise.
// DRA devices count as GPUs (dra_room.h: a pod's own claims, the nodes' free devices, with
// Context::objects); a moved pod that uses DRA is placed again as its replacement, a new pod whose
// own claims are unallocated (the DynamicResources plugin's RemovePod of the running pod).
//
//   Context ctx = ...; ctx.victim_rule = movable;        // who may move
//   absl::StatusOr<std::vector<MovePlan>> best_first =
//       FindMovePlans(ctx, state, pod, rejected, {.max_plans = 3, .min_gpu_milli = 1000});
//   if (!best_first.ok()) ...  // no search made: why in its message
//   (*best_first)[0].node, (*best_first)[0].moves[i].pod
#pragma once

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/preemption/preemption.h"

namespace tessel::preemption {

struct MovePlan {
  std::string node;                     // where the waiting pod goes
  std::vector<PreemptionVictim> moves;  // the pods evicted to move, as they run now
  int64_t moved_gpu_milli = 0;          // GPU-equivalent milli the moves restart
};

// The cost of the moves: fewest moves, fewest moved GPU milli, then node name. True when `a`
// is the better plan.
bool BetterPlan(const MovePlan& a, const MovePlan& b);

// What the screen before any dry run reads, kept in step with the snapshot's change log (as
// VictimIndex is), so an attempt that finds nothing costs no walk over the cluster: the free GPU
// milli of every node and their sum; per node the GPU milli of its movable pods
// (Context::victim_rule; the time-bound may_disrupt_now is left to the dry run); the nodes with
// movable pods by free GPU milli, most first; every node fullest first (Fullness). Who is movable
// may change with the PriorityClasses and Queues: a new `rules_version` reads every node again.
// Sync costs O(pods on the nodes that changed). Used by one scheduling thread (like the cycle).
//
//   MovableIndex index;
//   index.Sync(ctx, rules.movable_version());
//   index.free_gpu_milli();  for (const auto& [neg_free, pos] : index.most_free()) ...
class MovableIndex {
 public:
  void Sync(const Context& ctx, const std::string& rules_version);

  struct Node {
    int64_t generation = std::numeric_limits<int64_t>::min();
    int64_t free_gpu_milli = 0;
    bool shared = false;  // time-sliced or MPS GPUs: a replica holds a fraction of one
    int64_t movable_pods = 0;
    int64_t movable_gpu_milli = 0;
    std::pair<int64_t, int64_t> fullness;
  };
  int64_t free_gpu_milli() const { return free_total_; }
  int64_t shared_nodes() const { return shared_nodes_; }
  const Node& at(uint32_t pos) const { return nodes_[pos]; }
  // Nodes with movable pods as (-free GPU milli, position): most free first, then snapshot order
  // (closest to fitting first, for a pod that holds the same GPU milli on each of them).
  const std::set<std::pair<int64_t, uint32_t>>& most_free() const { return most_free_; }
  // Every node, fullest first (Fullness: the fewest free GPU milli, then the least free CPU;
  // ties in snapshot order): where a moved pod takes the first node that fits it.
  std::vector<const NodeInfo*> FullestFirst(const Snapshot& snapshot) const;

 private:
  void Read(const Context& ctx, uint32_t pos);

  std::string rules_version_;
  uint64_t epoch_ = 0;
  size_t log_pos_ = 0;
  int64_t free_total_ = 0;
  int64_t shared_nodes_ = 0;
  std::vector<Node> nodes_;
  std::set<std::pair<int64_t, uint32_t>> most_free_;
  std::set<std::pair<std::pair<int64_t, int64_t>, uint32_t>> fullest_;
};

// Moves for a gang that falls short: gang preemption's plan (PlanGangPreemption: member after
// member, the best node and the fewest victims there) with the movable pods as the victims, on
// the nodes that could hold a member now or once their movable pods are gone; it stands only if
// every moved pod then fits on a node no member takes, all at once, every member still fits
// beside the moves, and no PodDisruptionBudget would refuse a move. nullopt when the cluster's
// free GPUs (less the nominated pods') cannot cover the members, or no such plan exists.
// `ctx.nominations` should leave out the gang's own.
struct GangMovePlan {
  std::vector<GangMemberTarget> targets;  // where each placed member goes
  std::vector<PreemptionVictim> moves;
};
std::optional<GangMovePlan> PlanGangMoves(Context ctx, const std::vector<PodRef>& members,
                                          const std::vector<const CycleState*>& states, int32_t need,
                                          const std::string& topology_key, MovableIndex* index = nullptr);

// What a search for move plans is asked for.
struct MoveSearch {
  size_t max_plans = 3;       // plans returned at most, best first
  int64_t min_gpu_milli = 1;  // a pod asking fewer GPU milli (its DRA devices included) is not helped
};

// Up to `search.max_plans` plans for `pod`, best first (BetterPlan). No search is made, and a
// FailedPrecondition error says why, when the pod may not make room (EligibleToPreempt) or asks
// fewer GPUs than `search.min_gpu_milli`. No plan (an empty list: a search in vain) when the free
// GPUs of the whole cluster, less the nominated pods', do not cover the pod (moves add no room). A node
// whose fewest movable pods would violate a PodDisruptionBudget gives no plan. Nodes that
// `rejected` marks UnschedulableAndUnresolvable, and nodes whose free GPU room plus their
// movable pods' cannot hold the pod's GPUs, are not tried; of the others, the 16 closest to
// fitting. `index`, Synced by the caller with the same rules, may be null (every node is read).
absl::StatusOr<std::vector<MovePlan>> FindMovePlans(const Context& ctx, const CycleState& state, const Pod& pod,
                                                    const NodeStatusMap& rejected, const MoveSearch& search,
                                                    MovableIndex* index = nullptr);

}  // namespace tessel::preemption
