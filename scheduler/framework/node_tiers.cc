// Strict node tiers (see node_tiers.h).
#include "scheduler/framework/node_tiers.h"

#include <memory>
#include <set>
#include <utility>

#include "scheduler/util/strings.h"

namespace tessel {

void SetSchedulingUnit(CycleState& state, SchedulingUnit pods) {
  state.WriteValue(kSchedulingUnitKey, std::move(pods));
}

const std::vector<PodRef>* SchedulingUnitOf(const CycleState& state) {
  const SchedulingUnit* unit = state.ReadValue<SchedulingUnit>(kSchedulingUnitKey);
  return unit == nullptr ? nullptr : unit->get();
}

const NodeTiers* NodeTiersOf(const CycleState& state) { return state.Read<NodeTiers>(kNodeTiersKey); }

bool InTier(const CycleState& state, const NodeInfo& node, int64_t rank) {
  const NodeTiers* tiers = NodeTiersOf(state);
  return tiers == nullptr || tiers->TierOf(state, node) == rank;
}

std::vector<std::optional<int64_t>> TiersToChooseIn(const CycleState& state) {
  const NodeTiers* tiers = NodeTiersOf(state);
  if (tiers == nullptr) return {std::nullopt};
  std::optional<std::vector<int64_t>> ranks = tiers->Ranks(state);
  if (!ranks.has_value()) return {};
  return std::vector<std::optional<int64_t>>(ranks->begin(), ranks->end());
}

std::optional<int64_t> LowestTier(const CycleState& state, const std::vector<const NodeInfo*>& feasible) {
  const NodeTiers* tiers = NodeTiersOf(state);
  if (tiers == nullptr) return std::nullopt;
  std::optional<int64_t> lowest;
  for (const NodeInfo* node : feasible) {
    const std::optional<int64_t> t = tiers->TierOf(state, *node);
    if (t.has_value() && (!lowest.has_value() || *t < *lowest)) lowest = t;
  }
  return lowest;
}

const std::vector<const NodeInfo*>& FirstTier(const CycleState& state,
                                              const std::vector<const NodeInfo*>& feasible,
                                              std::vector<const NodeInfo*>& out) {
  const std::optional<int64_t> lowest = LowestTier(state, feasible);
  if (!lowest.has_value()) return feasible;
  const NodeTiers& tiers = *NodeTiersOf(state);
  out.clear();
  for (const NodeInfo* node : feasible) {
    if (tiers.TierOf(state, *node) == lowest) out.push_back(node);
  }
  return out.size() == feasible.size() ? feasible : out;
}

TierChoice ChooseTier(const CycleState& state, std::optional<int64_t> fits_on,
                      const std::vector<const NodeInfo*>& nominated) {
  const NodeTiers* tiers = NodeTiersOf(state);
  if (tiers == nullptr || !tiers->PreemptFirst() || !fits_on.has_value()) return {};
  bool held = false;  // nominated somewhere: its earlier preemption decided
  for (const NodeInfo* node : nominated) {
    if (node == nullptr) continue;
    held = true;
    if (const std::optional<int64_t> t = tiers->TierOf(state, *node); t.has_value() && *t < *fits_on) {
      return {.kind = TierChoice::Kind::kWaitForVictims, .waiting_on = node};
    }
  }
  if (held) return {};
  return {.kind = TierChoice::Kind::kPreemptBelow, .below = fits_on};
}

std::string WaitingOnEarlierTier(const NodeInfo& node) {
  return StrCat("Waiting for the pods preempted on node ", node.name(), ", of an earlier tier, to leave.");
}

TierWalk::TierWalk(const CycleState& state, const std::vector<NodeInfo*>& nodes, std::optional<int64_t> below)
    : state_(&state), tiers_(NodeTiersOf(state)) {
  if (tiers_ == nullptr) {
    if (!below.has_value()) walk_.push_back(Tier{.rank = std::nullopt, .nodes = nodes, .screen = nullptr});
    return;
  }
  std::vector<std::pair<NodeInfo*, int64_t>> ranked;  // the usable nodes with their tiers, snapshot order
  std::set<int64_t> ranks;
  for (NodeInfo* node : nodes) {
    const std::optional<int64_t> t = tiers_->TierOf(state, *node);
    if (!t.has_value() || (below.has_value() && *t >= *below)) continue;
    ranked.emplace_back(node, *t);
    ranks.insert(*t);
  }
  // Whether the walk's tier `rank` takes a node of tier `t`: its own, or a lower one it holds.
  auto takes = [](const NodeTiers& tiers, int64_t rank, int64_t t) {
    return t == rank || (t < rank && tiers.Holds(rank, t));
  };
  for (const int64_t rank : ranks) {
    Tier tier{.rank = rank,
              .nodes = {},
              .screen = [state = &state, tiers = tiers_, rank, takes](const NodeInfo& node) {
                const std::optional<int64_t> t = tiers->TierOf(*state, node);
                return t.has_value() && takes(*tiers, rank, *t);
              }};
    for (const auto& [node, t] : ranked) {
      if (takes(*tiers_, rank, t)) tier.nodes.push_back(node);
    }
    walk_.push_back(std::move(tier));
  }
}

std::optional<int64_t> TierWalk::TierOf(const NodeInfo& node) const {
  return tiers_ == nullptr ? std::nullopt : tiers_->TierOf(*state_, node);
}

const TierWalk::Tier* TierWalk::Find(int64_t rank) const {
  for (const Tier& t : walk_) {
    if (t.rank == rank) return &t;
  }
  return nullptr;
}

const NodeStatusMap& TierWalk::RejectionsWithin(const Tier& tier, const std::vector<NodeInfo*>& all,
                                                const NodeStatusMap& rejected, NodeStatusMap& part) const {
  if (!tier.rank.has_value()) return rejected;
  part.clear();
  const Status elsewhere = Status::Unresolvable("preemption tries this node with its own tier");
  for (const NodeInfo* node : all) part.emplace(node->name(), elsewhere);
  for (const NodeInfo* node : tier.nodes) {
    auto it = rejected.find(node->name());
    part[node->name()] = it != rejected.end() ? it->second : Status::Unschedulable("");
  }
  return part;
}

}  // namespace tessel
