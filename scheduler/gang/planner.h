// The gang planner: given the cycle's snapshot, a profile's framework and a gang's pending
// members, it computes in one pass where each member would go, or says why the gang cannot
// start. It is a pure function of its inputs: it never touches the cache, so a plan that falls
// short reserves nothing, and two gangs can never each hold part of the cluster.
//
// Algorithm. Members are grouped into shapes (same requests, selectors, affinity and
// anti-affinity, spread, tolerations, priority and tessel.io/ annotations, and the same labels
// when any selector could tell them apart: pods of one template are one shape); bigger shapes
// first. For each shape, PreFilter runs once and its state learns of every member placed
// before (the PreFilter extensions' AddPod, as preemption's dry run does), Filter runs once
// over every node, Score once over the nodes that pass (for tie-breaks). Pods nominated to a
// node that are at least as important as the member count as present there (kube-scheduler's
// rule for room a preemption freed). Then, on a what-if of the snapshot (framework/what_if.h,
// the layer every way of making room plans on), each feasible node's capacity (how many more
// members of this shape it can host) is found by placing members on the node and telling the
// state, until Filter refuses, and rolling back, so every plugin's rules hold, including
// per-device GPU accounting and the members' rules about each other (anti-affinity, spread).
// Every member is filtered again on the node it takes. Nodes are then filled whole, not spread,
// by the gang placement heuristic every plan shares (BetterFill):
//   - if some node can host every member still to place, the smallest such node (best fit);
//   - otherwise the node that hosts the most (fewest nodes for the gang);
//   ties by score, then name. Members take the node one after another:
//   PreAssume picks each one's GPU devices against the plan, which already holds the members
//   placed before it, so reservations are cumulative. Members with rules about each other (spread, affinity) are
//   evaluated again when the nodes found first are used up.
// Compact placement (topology_key): the same plan runs within each domain of that node label;
// of the domains that fit the gang, the one left fullest (least free GPU, then CPU) wins, and
// the domains too small are reported.
// Strict node tiers (framework/node_tiers.h, e.g. a queue's resource flavors): the whole gang
// goes to the first tier where the plan is feasible, compact placement within that tier.
//
//   GangPlan plan = PlanGang({.framework = fw, .snapshot = &snapshot, .members = pending,
//                             .min_to_place = 4, .min_member = 4, .gang = "PodGroup a/train"});
//   if (plan.feasible) for (const MemberPlacement& m : plan.placements) ... m.assumed ...
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/state/snapshot.h"

namespace tessel::gang {

struct PlanInput {
  const Framework* framework = nullptr;
  const Snapshot* snapshot = nullptr;
  // The gang's pending members, in the order they are tried (the core passes creation order).
  std::vector<PodRef> members;
  // The plan is feasible when at least this many members are placed (minMember minus the
  // members already running); every member that fits beyond it is placed too.
  int32_t min_to_place = 1;
  int32_t min_member = 1;  // for messages
  std::string gang;        // for messages: "PodGroup team-a/train"
  std::string topology_key;
  // spec.minResources: the nodes the gang may use must have this much free in total.
  Resources min_resources;
  // Pods nominated to nodes (their preemptions' victims are leaving), without the gang's own
  // members: those at least as important as a member count as present where it is filtered.
  const NominatedPodMap* nominated = nullptr;
  // The nodes of the members already placed: with strict tiers (a queue's flavors) the members
  // placed after the gang (beyond minMember) go to the tier those run on, as the gang did.
  std::vector<std::string> running_nodes;
};

struct MemberPlacement {
  PodRef pod;                         // the pending member
  Pod assumed;                        // its copy with node_name and chosen devices set
  std::string node;
  std::shared_ptr<CycleState> state;  // the member's cycle state (Reserve, PreBind, Bind)
};

struct DomainFit {
  std::string domain;
  int32_t members = 0;  // how many members the domain could host
};

struct GangPlan {
  bool feasible = false;
  // kError when a plugin failed (retry with backoff), else kUnschedulable when not feasible.
  Code code = Code::kSuccess;
  std::vector<MemberPlacement> placements;
  // Why not, when not feasible: "PodGroup a/train needs 4 x 4 GPUs; 2 nodes can host 3 members".
  std::string message;
  // Plugins whose rejections limited the plan (for the queue's wake-up events).
  std::vector<std::string> rejecting_plugins;
  // Some rejection more quota would lift (Framework::QuotaMayLift): with only quota plugins
  // rejecting, the gang waits for quota (QuotaOnly), else for nodes.
  bool quota_may_help = false;
  bool QuotaOnly(const Framework& fw) const { return quota_may_help && fw.RejectedOnlyByQuota(rejecting_plugins); }
  // The first rejection that stopped a member on a node that took others ("" if none): with a
  // quota as the only limit, the message says so.
  std::string limit_reason;
  std::string domain;                  // compact placement: the chosen domain
  std::vector<DomainFit> too_small;    // compact placement: domains that could not host it
  int32_t nodes_used = 0;
  // Strict tiers (framework/node_tiers.h): the state that ranks the nodes in tiers (null when
  // the members have none) and the tier a feasible plan uses, for ChooseTier.
  std::shared_ptr<const CycleState> tiers;
  std::optional<int64_t> tier;
};

GangPlan PlanGang(const PlanInput& input);

// A short description of what one member asks for: "4 GPUs", "500 milli-GPU", "cpu 2, memory
// 4Gi".
std::string DescribeMemberShape(const Pod& pod);

}  // namespace tessel::gang
