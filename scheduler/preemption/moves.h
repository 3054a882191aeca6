// Moves: room for a pod that fits nowhere although the free room adds up, made by moving running
// pods that opted in (disruption.h) to other nodes. Shared machinery with preemption: on a node,
// the movable pods whose removal lets the pod fit are chosen by preemption's dry run and reprieve
// (SelectVictimsOnNode with Context::victim_rule), so no more are moved than needed; a set is a
// plan only if every pod it moves fits on another node at once, with the pod placed and the
// other moves made (each, largest first, on the fullest node that takes it, as packing would).
// The consolidation plugin (plugins/consolidation) evicts the best plan's pods and nominates the
// node; their controllers recreate them and the scheduler places them as any pod.
//
//   Context ctx = ...; ctx.victim_rule = movable;        // who may move
//   std::vector<MovePlan> best_first = FindMovePlans(ctx, state, pod, rejected, /*max_plans=*/3);
//   best_first[0].node, best_first[0].moves[i].pod, best_first[0].moves[i].to
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler/preemption/preemption.h"

namespace tessel::preemption {

struct Move {
  PreemptionVictim pod;  // as it runs now
  std::string to;        // where the plan places it again
};

struct MovePlan {
  std::string node;  // where the waiting pod goes
  std::vector<Move> moves;
  int64_t moved_gpu_milli = 0;  // GPU-equivalent milli the moves restart
  int64_t pdb_violations = 0;
};

// kube-scheduler's first rule, then the cost of the moves: fewest PodDisruptionBudget violations,
// fewest moves, fewest moved GPU milli, then node name. True when `a` is the better plan.
bool BetterPlan(const MovePlan& a, const MovePlan& b);

// Where the pods of `candidate` (taken off candidate.node for `pod`) go once the pod runs there;
// nullopt when one of them fits nowhere else, or the pod no longer fits beside the moves.
// `state` is the pod's cycle state after PreFilter; `fullest_first` the snapshot's nodes by
// FullestFirst (computed here when null).
std::optional<MovePlan> PlanMoves(const Context& ctx, const CycleState& state, const Pod& pod,
                                  const Candidate& candidate,
                                  const std::vector<const NodeInfo*>* fullest_first = nullptr);

// The snapshot's nodes, fullest first: the fewest free GPU milli, then the least free CPU (ties
// in snapshot order). A moved pod takes the first of them that fits it.
std::vector<const NodeInfo*> FullestFirst(const Snapshot& snapshot);

// Per node, the GPU milli of its movable pods (Context::victim_rule; the time-bound
// may_disrupt_now is left to the dry run), kept while the node's generation stays: the screen
// over every node reads the pods of changed nodes only. Who is movable may change with the
// PriorityClasses and Queues: Sync with a new `rules_version` forgets everything. Used by one
// scheduling thread (like the cycle).
class MovableIndex {
 public:
  void Sync(const std::string& rules_version);
  struct Movable {
    int64_t pods = 0;
    int64_t gpu_milli = 0;
  };
  Movable Of(const Context& ctx, const NodeInfo& node);

 private:
  struct Entry {
    int64_t generation;
    Movable movable;
  };
  std::string rules_version_;
  StringKeyedMap<Entry> by_node_;
};

// Up to `max_plans` plans for `pod`, best first (BetterPlan). None when the free GPUs of the
// whole cluster, less the nominated pods', do not cover the pod (moves add no room). Nodes that
// `rejected` marks UnschedulableAndUnresolvable, and nodes whose free GPU room plus their
// movable pods' cannot hold the pod's GPUs, are not tried; of the others, the 16 closest to
// fitting. `index` may be null (every node's pods are read).
std::vector<MovePlan> FindMovePlans(const Context& ctx, const CycleState& state, const Pod& pod,
                                    const NodeStatusMap& rejected, size_t max_plans,
                                    MovableIndex* index = nullptr);

}  // namespace tessel::preemption
