// Strict node tiers: a plugin may rank the nodes a pod may use in tiers, of which the pod takes
// the first that has a feasible node, whatever the scores say (QueueQuota: a queue's flavors in
// order, docs/flavors.md). Filter still decides which nodes are feasible; the tier only chooses
// among them, so "the first tier with a feasible node" is exact, not a weighted preference.
//
// The plugin writes a NodeTiers into the pod's CycleState under kNodeTiersKey in PreFilter. The
// core then (1) scores only the feasible nodes of the lowest tier, and (2) when nothing is
// feasible, runs preemption tier by tier, lowest first, stopping at the first tier where it
// frees room; with preempt_first, also on the tiers below the first feasible one before taking
// it (ChooseTier, for pods and gangs alike). A gang (gang/planner.h) is planned, preempted for and made room for by moves within one
// tier at a time (TierScreens), lowest first. Pods without a NodeTiers are not affected.
//
//   if (const NodeTiers* tiers = NodeTiersOf(state)) ... tiers->TierOf(state, node) ...
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/framework/cycle_state.h"
#include "scheduler/framework/interface.h"
#include "scheduler/state/node_info.h"

namespace tessel {

inline constexpr std::string_view kNodeTiersKey = "NodeTiers";

class NodeTiers : public StateData {
 public:
  // The node's tier for the pod of this cycle, lowest first; nullopt: the pod may not use the
  // node at all (its Filter rejects it as unresolvable).
  virtual std::optional<int64_t> TierOf(const CycleState& state, const NodeInfo& node) const = 0;
  // Whether preemption on lower tiers comes before a later tier's free room.
  virtual bool PreemptFirst() const = 0;
};

// The pods judged as one for tiers and quota: a gang's members (those it needs), written into
// each member's state before PreFilter by the gang planner and the gang cycle. A plugin that
// ranks tiers or checks a quota judges the unit's members not yet placed (AddPod) together, so
// a gang gets the decision a single pod of the gang's total would get. Without one, the pod is
// judged alone.
inline constexpr std::string_view kSchedulingUnitKey = "SchedulingUnit";
void SetSchedulingUnit(CycleState& state, std::vector<PodRef> pods);
// The unit's pods, or null when the pod is judged alone.
const std::vector<PodRef>* SchedulingUnitOf(const CycleState& state);

// The cycle's tiers, or null when the pod has none.
const NodeTiers* NodeTiersOf(const CycleState& state);

// The nodes of `feasible` in its lowest tier (their order kept), into `out`; returns `feasible`
// itself when the pod has no tiers or all share one.
const std::vector<const NodeInfo*>& FirstTier(const CycleState& state,
                                              const std::vector<const NodeInfo*>& feasible,
                                              std::vector<const NodeInfo*>& out);

// The lowest tier among `feasible` (nullopt when the pod has no tiers or nothing is feasible).
std::optional<int64_t> LowestTier(const CycleState& state, const std::vector<const NodeInfo*>& feasible);

// What a pod, or a gang as one, does with `fits_on`, the lowest tier where it fits now: take
// it; or, when its tiers preempt first (whenCanPreempt: Preempt), wait while it is nominated to
// a node of a lower tier (its victims there are leaving), else try preemption on the tiers
// below `fits_on` first and take `fits_on` only if that makes no room. One decision for the
// single-pod cycle and the gang cycle alike. `nominated`: the unit's nominated nodes (null
// entries: none). Without a nominated node at or above `fits_on`, preemption comes first.
struct TierChoice {
  enum class Kind { kTake, kWaitForVictims, kPreemptBelow };
  Kind kind = Kind::kTake;
  std::optional<int64_t> below;         // kPreemptBelow: the tiers below this one
  const NodeInfo* waiting_on = nullptr;  // kWaitForVictims: the lower tier's nominated node
};
TierChoice ChooseTier(const CycleState& state, std::optional<int64_t> fits_on,
                      const std::vector<const NodeInfo*>& nominated);
// What a unit that waits (kWaitForVictims) is told.
std::string WaitingOnEarlierTier(const NodeInfo& node);

// For preemption tier by tier: one rejection map per tier below `below` (all tiers when
// nullopt), lowest first, each holding `rejected` for that tier's nodes and an unresolvable
// rejection for every other node of `nodes`, so that preemption looks only at the tier. Empty
// when the pod has no tiers.
std::vector<NodeStatusMap> RejectionsByTier(const CycleState& state, const std::vector<NodeInfo*>& nodes,
                                            const NodeStatusMap& rejected,
                                            std::optional<int64_t> below = std::nullopt);

// A screen of the nodes one plan may use (preemption::Context::gang_node_screen).
using NodeScreen = std::function<bool(const NodeInfo& node)>;

// One screen per tier of `nodes` for the pod of `state`, lowest first, each admitting only that
// tier's nodes; a single null screen (every node) when the pod has no tiers. A gang's preemption
// and moves plan within each in turn and take the first plan found, as the gang planner places
// the gang whole in one tier: room freed across tiers is room the gang cannot take. `state`
// must outlive the screens. With `below`, only the tiers below it (preempt first, as
// RejectionsByTier); none then when the pod has no tiers.
std::vector<NodeScreen> TierScreens(const CycleState& state, const std::vector<NodeInfo*>& nodes,
                                    std::optional<int64_t> below = std::nullopt);

}  // namespace tessel
