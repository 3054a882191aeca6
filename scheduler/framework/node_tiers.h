// Strict node tiers: a plugin may rank the nodes a pod may use in tiers, of which the pod takes
// the first that has a feasible node, whatever the scores say (QueueQuota: a queue's flavors in
// order, docs/flavors.md). Filter still decides which nodes are feasible; the tier only chooses
// among them, so "the first tier with a feasible node" is exact, not a weighted preference.
//
// The plugin writes a NodeTiers into the pod's CycleState under kNodeTiersKey in PreFilter. The
// core then (1) scores only the feasible nodes of the lowest tier, and (2) when nothing is
// feasible, runs preemption tier by tier, lowest first, stopping at the first tier where it
// frees room; with preempt_first, also on the tiers below the first feasible one before taking
// it (ChooseTier, for pods and gangs alike). Every way of making room walks the tiers in one
// order (TierWalk, lowest first): a gang (gang/planner.h) is planned, preempted for, made room
// for by moves and reserved for within one tier at a time, a pod's PostFilter chain runs tier
// by tier. Only this file asks a NodeTiers; pods without one are not affected.
//
//   if (const NodeTiers* tiers = NodeTiersOf(state)) ... tiers->TierOf(state, node) ...
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
  // Every tier the snapshot's nodes may have for the pod, ascending, when known without walking
  // the nodes (a tier may hold no node that fits); nullopt: not known.
  virtual std::optional<std::vector<int64_t>> Ranks(const CycleState& /*state*/) const { return std::nullopt; }
  // Whether a plan made within tier `rank` may also use the nodes of the lower tier `lower`
  // (TierWalk): a tier that differs from a lower one only in a cost the unit pays anyway (a
  // flavor's nodes where it would borrow, after the same flavor's nodes where it would not) holds
  // them too, so that a unit placed across both is not refused by either alone.
  virtual bool Holds(int64_t /*rank*/, int64_t /*lower*/) const { return false; }
};

// The pods judged as one for tiers and quota: a gang's members (those it needs), written into
// each member's state before PreFilter by the gang planner and the gang cycle. A plugin that
// ranks tiers or checks a quota judges the unit's members not yet placed (AddPod) together, so
// a gang gets the decision a single pod of the gang's total would get. Without one, the pod is
// judged alone.
// Shared and never changed: a state's clone (one per capacity probe and per member) copies a
// pointer, not the gang's members.
inline constexpr std::string_view kSchedulingUnitKey = "SchedulingUnit";
using SchedulingUnit = std::shared_ptr<const std::vector<PodRef>>;
void SetSchedulingUnit(CycleState& state, SchedulingUnit pods);
// The unit's pods, or null when the pod is judged alone.
const std::vector<PodRef>* SchedulingUnitOf(const CycleState& state);

// The cycle's tiers, or null when the pod has none.
const NodeTiers* NodeTiersOf(const CycleState& state);

// The nodes of `feasible` in its lowest tier (their order kept), into `out`; returns `feasible`
// itself when the pod has no tiers or all share one.
const std::vector<const NodeInfo*>& FirstTier(const CycleState& state,
                                              const std::vector<const NodeInfo*>& feasible,
                                              std::vector<const NodeInfo*>& out);

// Whether `node` is in tier `rank` for the cycle's pod (a pod without tiers: every node is).
bool InTier(const CycleState& state, const NodeInfo& node, int64_t rank);

// The tiers in which the decision cache may choose, lowest first (the pod takes the first with a
// feasible node, scored within it): nullopt alone for a pod without tiers; none when the tiers
// are not known without walking the nodes.
std::vector<std::optional<int64_t>> TiersToChooseIn(const CycleState& state);

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

// A screen of the nodes one plan may use (preemption::Context::gang_node_screen).
using NodeScreen = std::function<bool(const NodeInfo& node)>;

// The one walk over a unit's tiers that every way of making room takes, for a single pod and a
// gang alike: the gang planner places a gang whole within one tier; the core runs a pod's
// PostFilter chain (preemption, moves, reservations) tier by tier; preemption and moves plan a
// gang within one tier at a time; a reservation is made within one. Tiers come lowest first,
// each with its nodes in the order given (snapshot order), and with the nodes of the lower tiers
// it holds (NodeTiers::Holds); room freed across other tiers is room the unit cannot take. A unit without tiers walks one tier of every node (`rank` nullopt, no
// screen). With `below`, only the tiers below it (preempt first: ChooseTier's kPreemptBelow);
// none then when the unit has no tiers. `state` (the unit's PreFilter state) must outlive the
// walk.
//
//   for (const TierWalk::Tier& tier : TierWalk(state, snapshot.nodes()).tiers()) {
//     ctx.gang_node_screen = tier.screen;  ... plan within tier.nodes ...
//   }
class TierWalk {
 public:
  struct Tier {
    std::optional<int64_t> rank;   // nullopt: the unit has no tiers
    std::vector<NodeInfo*> nodes;  // this tier's nodes
    NodeScreen screen;             // admits this tier's nodes (those it holds too); null: every node
  };
  TierWalk(const CycleState& state, const std::vector<NodeInfo*>& nodes,
           std::optional<int64_t> below = std::nullopt);
  bool tiered() const { return tiers_ != nullptr; }
  const std::vector<Tier>& tiers() const { return walk_; }
  // The node's tier for the unit (nullopt: no tiers, or a node the unit may not use).
  std::optional<int64_t> TierOf(const NodeInfo& node) const;
  // The walk's tier of that rank, or null.
  const Tier* Find(int64_t rank) const;
  // `rejected` (the cycle's verdict on every node of `all`) as preemption sees it within
  // `tier`: the other tiers' nodes unresolvable, so that it looks only at this one, built in
  // `part`. `rejected` itself, not copied, for a unit without tiers.
  const NodeStatusMap& RejectionsWithin(const Tier& tier, const std::vector<NodeInfo*>& all,
                                        const NodeStatusMap& rejected, NodeStatusMap& part) const;

 private:
  const CycleState* state_;
  const NodeTiers* tiers_;
  std::vector<Tier> walk_;
};

}  // namespace tessel
