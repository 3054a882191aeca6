// The one what-if layer every way of making room plans on (the gang planner, priority preemption
// for a pod and for a gang, moves, reservations), like KAI-Scheduler's Statement: over the
// cycle's snapshot, without copying it, a plan places pods, evicts them and moves them, marks a
// checkpoint and rolls back to it. Nodes are copied on their first change; every change is
// logged, so a pod's cycle state is brought in step with the plan through the PreFilter
// extensions (AddPod for a pod placed, RemovePod for a pod evicted: `Replay`), and the filters a
// plan asks (`Fits`) count the pods nominated to a node that are at least as important, as the
// scheduling cycle does (the reservation plugin's Filter keeps reserved nodes for their holder
// there too). A what-if may be scoped to some of the snapshot's nodes (a tier, a topology
// domain): `nodes()` is then the plan's view of those, in snapshot order, for FindFeasibleNodes.
//
// And the one gang placement heuristic (`BetterFill`): where the next of a unit's pods goes.
//
//   WhatIf plan(&snapshot, {.nominated = nominated});
//   plan.Evict(victim);                                   // the victim gone
//   const WhatIf::Mark before = plan.Checkpoint();
//   plan.Place(member, "n1");                             // a gang member there
//   CycleState s = member_state.Clone();
//   if (!plan.Replay(fw, s, next_member).ok() || !plan.Fits(fw, s, next_member, *plan.Get("n2")).ok())
//     plan.Rollback(before);                              // the member is not there after all
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/state/snapshot.h"
#include "scheduler/util/strings.h"

namespace tessel {

using NodeLookup = std::function<const NodeInfo*(std::string_view)>;

// How full a node is, fuller first when compared: the fewest free GPU milli, then the least free
// CPU.
inline std::pair<int64_t, int64_t> Fullness(const NodeInfo& n) {
  return {n.gpus().total_free_milli(), n.FreeMilliCpu()};
}

// The gang placement heuristic, one for every plan that places a unit's pods (the gang planner's
// fill, gang preemption's reprieve, the places moved pods take again): a node is a candidate for
// the next `remaining` pods of one shape with the number of them it can take (`capacity`, 1 when
// only one pod is asked about). Whole nodes are filled, not spread: a node that takes every
// remaining pod before one that does not; among those the tightest (least capacity), among the
// others the one that takes most (fewest nodes for the unit); then the better score, then the
// fuller node (pack rather than open empty ones; callers that measured capacity per shape, the
// gang planner, leave it equal), then snapshot order. True when `a` is better.
struct FillOption {
  int32_t capacity = 1;
  int64_t score = 0;
  std::pair<int64_t, int64_t> fullness{0, 0};  // Fullness(node)
  int64_t order = 0;                     // the node's position in the snapshot
};
bool BetterFill(const FillOption& a, const FillOption& b, int32_t remaining);

class WhatIf {
 public:
  struct Options {
    // The nodes the plan may use, in snapshot order (pointers of `snapshot->nodes()`); null:
    // every node, and nodes() lists none until asked.
    const std::vector<NodeInfo*>* scope = nullptr;
    // Pods nominated to nodes (their preemptions' victims are leaving): Fits counts those at
    // least as important as the pod asked about. Null: none.
    const NominatedPodMap* nominated = nullptr;
  };
  explicit WhatIf(const Snapshot* snapshot) : WhatIf(snapshot, Options{}) {}
  WhatIf(const Snapshot* snapshot, Options options);
  WhatIf(const WhatIf&) = delete;
  WhatIf& operator=(const WhatIf&) = delete;

  // --- The plan's view ---
  // A node as the plan left it (null when the snapshot has none by that name).
  const NodeInfo* Get(std::string_view name) const;
  // Whether the plan holds its own copy of the node (it changed it).
  bool Changed(std::string_view name) const { return changed_.contains(name); }
  NodeLookup Lookup() const {
    return [this](std::string_view name) { return Get(name); };
  }
  // The scope's nodes as the plan left them, in snapshot order (every node when unscoped).
  const std::vector<NodeInfo*>& nodes() const;
  // Position of a node of nodes() in it (pointers as nodes() gives them).
  size_t IndexOf(const NodeInfo* node) const;
  const NominatedPodMap* nominated() const { return options_.nominated; }
  const Snapshot& snapshot() const { return *snapshot_; }

  // The filters for `pod` on `node` (a node of this plan), the nominated pods counted.
  Status Fits(const Framework& fw, const CycleState& state, const Pod& pod, const NodeInfo& node) const;

  // --- Changes ---
  // `pod` on `node`: its copy with node_name set, which the plan holds and returns.
  PodRef Place(const Pod& pod, const std::string& node);
  // A pod that already names its node (its devices chosen by PreAssume).
  void Place(PodRef placed);
  // A running pod taken off its node (false when the plan does not hold it there).
  bool Evict(const PodRef& pod);
  // A running pod on `to` instead: taken off its node (unless the plan took it off already, as
  // a move plan evicts all its pods before it places them again) and placed there, not
  // nominated anywhere. The copy placed.
  PodRef Move(const PodRef& pod, const std::string& to);

  struct Change {
    bool add;
    PodRef pod;  // as placed (node_name set), or as it ran
  };
  const std::vector<Change>& changes() const { return changes_; }

  // --- Transactions ---
  using Mark = size_t;
  // Where the log stands (for Replay from here).
  Mark Now() const { return changes_.size(); }
  // A point to roll back to: a node changed after it is kept aside as it stands then, on its
  // first change, so a rollback restores it exactly (a pod put back, a probe taken out, leaves
  // no trace in the node's device ledger or pod order).
  Mark Checkpoint();
  // Back to `mark` (a Checkpoint): the changes after it dropped, the nodes as they were then
  // (copies made since dropped, the others restored in place). Like a transaction, a rollback
  // ends its checkpoint and every later one (take a new one to try again); checkpoints nest,
  // also at the same mark. A cycle state brought in step by Replay is not reached: keep its
  // clone from the checkpoint.
  void Rollback(Mark mark);

  // The PreFilter extensions of `fw` for `pod`, told of every change since `from` as the nodes
  // stand now: AddPod for a pod placed, RemovePod for a pod evicted; the changes of `except` (a
  // pod the plan placed, checked where it stands) left out. The first failure.
  Status Replay(const Framework& fw, CycleState& state, const Pod& pod, Mark from = 0,
                const Pod* except = nullptr) const;

 private:
  NodeInfo& Mutable(const std::string& name);
  void Restore(const std::string& name);
  void Apply(const Change& c);

  const Snapshot* snapshot_;
  Options options_;
  StringKeyedMap<std::unique_ptr<NodeInfo>> changed_;
  std::vector<Change> changes_;
  // The copies in the order they were made, with the change that made each: a rollback before
  // it drops the copy (the snapshot's node is exactly what the plan then holds).
  std::vector<std::pair<Mark, std::string>> copies_;
  // Checkpoints taken and not rolled back, and the nodes kept aside since each (as they stood).
  std::vector<Mark> checkpoints_;
  struct KeptAside {
    Mark mark;
    std::string name;
    NodeInfo node;
  };
  std::vector<KeptAside> kept_aside_;
  StringKeyedMap<Mark> kept_at_;
  StringKeyedMap<Mark> made_at_;  // the change each copy was made for  // the latest checkpoint each node was kept aside for
  // The scope as the plan left it, and positions by node (pointers of the current copies).
  mutable std::vector<NodeInfo*> scope_;
  mutable bool scope_built_ = false;
  mutable std::unordered_map<const NodeInfo*, size_t> index_;
};

}  // namespace tessel
