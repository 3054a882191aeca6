// Priority preemption: which pods to evict so that a pod that fits nowhere can run. Shared by
// the DefaultPreemption PostFilter plugin (one pod, plugins/default_preemption) and the gang
// cycle (every member of a gang, across nodes: PlanGangPreemption), so both choose victims by
// the same rules. Semantics follow kube-scheduler's defaultpreemption; docs/preemption.md says
// where Tessel differs.
//
// Who may be a victim: a pod on the node other than the preemptor whose priority is lower,
// unless a VictimPolicyPlugin of the profile decides otherwise (reclaim of borrowed quota may
// allow a pod of equal or higher priority; a policy may deny a lower one). A pod of a gang
// (scheduler/gang) is evicted only with its whole gang: every running member must be eligible,
// and all of them become victims, wherever they run.
//
// Victims on one node (SelectVictimsOnNode): remove every eligible pod (through the PreFilter
// extensions, so pod-to-pod rules see them gone) and run every filter; if the pod still does
// not fit, the node is no candidate. Otherwise put them back one unit (a pod, or a gang's pods
// on this node) at a time, most important first (priority, then earliest start), those whose
// eviction would violate a PodDisruptionBudget before the others, keeping each that still lets
// the pod fit ("reprieve"). What stays removed are the victims: no more than needed.
//
// Choosing among candidates (BetterCandidate), kube-scheduler's order: fewest PDB violations,
// then the lowest highest-victim priority, the smallest sum of priorities, the fewest victims,
// the latest start among the highest-priority victims; ties by node name (deterministic).
//
// Which nodes are tried (FindCandidates): as kube-scheduler, from an offset drawn per pod (here
// from the scheduler's seed and the pod's UID, so runs repeat), wrapping around, until
// max(nodes x minCandidateNodesPercentage / 100, minCandidateNodesAbsolute) candidates were
// found, at least one without a PDB violation (CandidateLimits). With a VictimIndex only the
// nodes that hold a pod the preemptor may evict, or a terminating pod, are tried; the others
// would be no candidate, so the candidates found are the ones of the walk over every node. With
// a CandidateMemo, a node whose dry run for an equal preemptor is kept is answered from it.
//
//   Context ctx{.framework = fw, .snapshot = &snapshot, .pdbs = handle.PodDisruptionBudgets(), ...};
//   std::vector<Candidate> best_first = FindCandidates(ctx, state, pod, filter_rejections);
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/preemption/candidate_memo.h"
#include "scheduler/preemption/victim_index.h"
#include "scheduler/state/snapshot.h"

namespace tessel::preemption {

inline constexpr std::string_view kLowerPriority = "LowerPriority";

// kube-scheduler's DefaultPreemptionArgs: FindCandidates stops once it found
// max(nodes x min_percentage / 100, min_absolute) candidates, one of them without a PDB violation.
struct CandidateLimits {
  int32_t min_percentage = 100;
  int32_t min_absolute = 0;
  // How many candidates to find among `nodes` (kube-scheduler's calculateNumCandidates).
  size_t For(size_t nodes) const;
};

struct Context {
  const Framework* framework = nullptr;
  const Snapshot* snapshot = nullptr;
  std::vector<PodDisruptionBudget> pdbs;
  // Pods nominated to nodes by earlier preemptions: their space is not for the pod unless it
  // is more important (Framework::RunFiltersWithNominatedPods). Null: none.
  std::shared_ptr<const Nominations> nominations;
  const NominatedPodMap* nominated() const { return nominations ? &nominations->pods : nullptr; }
  // The gang a pod belongs to ("" for none).
  std::function<std::string(const Pod&)> gang_of;
  // A pod's priority (resolved from its PriorityClass when the pod does not carry it).
  std::function<int32_t(const Pod&)> priority_of;
  // No pod without spec.priority has a priority below this (Handle::PriorityFloor).
  int32_t priority_floor = std::numeric_limits<int32_t>::min();
  // Nodes that may hold victims, in step with `snapshot`; null: FindCandidates tries every node
  // (the reference walk).
  const VictimIndex* index = nullptr;
  // kube-scheduler's DefaultPreemption args; the defaults here try every node.
  CandidateLimits limits;
  // With the pod's UID, where the walk over the nodes starts (when the limits stop it early).
  uint64_t seed = 0;
  // Dry-run answers kept between attempts (candidate_memo.h); null: every dry run is made.
  CandidateMemo* memo = nullptr;
  // Whether a pod may be disrupted now (its minimum run time, disruption.h); null: any may. Its
  // answer changes with time: no memo then.
  std::function<bool(const Pod& victim)> may_disrupt_now;
  // Who may be taken out instead of the priority rule and the VictimPolicy plugins: the pods
  // consolidation may move (moves.h); `reason` (out) labels the victim. Null: the priority rule.
  std::function<bool(const Pod& victim, std::string* reason)> victim_rule;
  // Which nodes a gang plan (PlanGangPreemption) looks at, places members on and puts victims
  // back for; null: every node. The gang cycle and consolidation restrict a gang to one tier of
  // its flavors at a time (framework/node_tiers.h TierWalk); moves screen out, besides, the
  // nodes that neither hold a member now nor could once their movable pods are gone.
  std::function<bool(const NodeInfo& node)> gang_node_screen;
  // The cluster's objects as the cycle reads them (Handle::Objects): moves count DRA devices
  // from their ResourceSlices and ResourceClaims (dra_room.h). Null: no DRA device is counted.
  std::shared_ptr<const ClusterObjects> objects;
};

// The context a PostFilter plugin plans in for profile `fw`: the handle's snapshot, budgets,
// nominations, gangs, priorities and seed (no index, memo or rules beyond the priority rule).
Context ContextFor(const Handle& handle, const Framework* fw);

// Whether the pod may preempt now; `why` says why not. Never with preemptionPolicy: Never; not
// while a pod is still terminating on its nominated node (its earlier victims are leaving;
// kube-scheduler looks only at pods of lower priority, but a queue's reclaim may evict any),
// unless that node turned unresolvable for it.
bool EligibleToPreempt(const Context& ctx, const Pod& pod, const NodeStatusMap& rejected,
                       std::string* why);

// The eligible victims on `node` that make `pod` fit there (see the file comment), or nullopt
// when evicting every eligible pod would not. `state` is the pod's cycle state after PreFilter;
// it is copied, never changed.
std::optional<Candidate> SelectVictimsOnNode(const Context& ctx, const CycleState& state,
                                             const Pod& pod, const NodeInfo& node);

// kube-scheduler's candidate order: true when `a` is the better choice.
bool BetterCandidate(const Context& ctx, const Candidate& a, const Candidate& b);

// Every node preemption could help (its filter rejection is not UnschedulableAndUnresolvable),
// evaluated; the candidates, best first. `rejected` is the cycle's verdict on every node (no node
// fit): a node with no pod the preemptor may evict is skipped without a dry run, which would
// filter it as it stands again.
std::vector<Candidate> FindCandidates(const Context& ctx, const CycleState& state, const Pod& pod,
                                      const NodeStatusMap& rejected);

// How many of `victims` (in this order) a PodDisruptionBudget does not allow to be evicted.
int64_t CountPdbViolations(const std::vector<PodDisruptionBudget>& pdbs,
                           const std::vector<PreemptionVictim>& victims);

// Victims ordered for eviction: those a PDB covers first, so that a refusal (HTTP 429) comes
// before anything else on the candidate was evicted.
std::vector<PreemptionVictim> EvictionOrder(const std::vector<PodDisruptionBudget>& pdbs,
                                            std::vector<PreemptionVictim> victims);

// What a victim is told, and the preemption's log line: "preempted by team-a/hp (priority
// 1000) on node n1 (LowerPriority)"; the reason is the victim's (LowerPriority, reclaim, ...).
std::string PreemptionMessage(const Pod& preemptor, int32_t priority, std::string_view node,
                              const PreemptionVictim& victim);

// Evicts one victim through handle.api() (ClusterApi::Evict's answers; OK without an API). Once
// evicted, the victim is told, as kube-scheduler tells its victims: a Normal event and the
// condition DisruptionTarget, both with `message` and how often its workload was disrupted so
// (" (its 2nd move)"): for a preemption the event "Preempted" and reason PreemptionByScheduler,
// for a move "Moved" and ConsolidationByScheduler. The scheduler counts it as terminating at
// once (Handle::PodEvicted) and notes it in its ledger (Handle::disruptions).
absl::Status EvictVictim(Handle& handle, const PreemptionVictim& victim, std::string_view message,
                         DisruptionKind kind = DisruptionKind::kPreemption);

// Evicts `victims` one after another in EvictionOrder (EvictVictim, each told `message_of` it).
// A plan that `pdbs` already refuse (CountPdbViolations > 0) is not started: `refused`, with
// nothing evicted, so no plan is half carried out when its budgets could be known. Otherwise it
// stops at the first refusal: a PodDisruptionBudget's 429 (`refused`: a budget that changed
// since it was read), or any other failure (`error`; FailedPrecondition when this scheduler is
// no longer the leader). A victim already gone (404) counts as evicted.
struct EvictionOutcome {
  std::vector<PreemptionVictim> evicted;
  bool refused = false;
  absl::Status error;
};
EvictionOutcome EvictInOrder(Handle& handle, const std::vector<PodDisruptionBudget>& pdbs,
                             std::vector<PreemptionVictim> victims,
                             const std::function<std::string(const PreemptionVictim&)>& message_of,
                             DisruptionKind kind = DisruptionKind::kPreemption);

// How long the ledger remembers a disruption (for the counts in messages; move limits look
// back no further).
inline constexpr absl::Duration kDisruptionMemory = absl::Hours(24);

// --- Gang preemptors ---
using tessel::GangMemberTarget;  // framework/interface.h
struct GangPreemptionPlan {
  bool feasible = false;
  std::vector<GangMemberTarget> targets;  // where each placed member goes
  std::vector<PreemptionVictim> victims;  // every pod to evict, each once
  int64_t pdb_violations = 0;
  std::string message;                    // why not, when not feasible
};

// Victims across nodes for `need` of a gang's pending `members`: member after member, on an
// overlay of the snapshot where the victims chosen so far are gone and the members placed so
// far are present, each takes the best candidate node (the order above; a node where it fits
// with no victim is best). A victim's whole gang goes with it, so the space it frees elsewhere
// is used by later members at no further cost, and one pod from each of many jobs is never
// chosen over the whole of one job. Then the gang's reprieve: victim units are put back, most
// important first, wherever the members still fit on the nodes the plan touched without them
// (a pod evicted for the first member is spared when a whole gang evicted for a later one
// freed enough). With `topology_key` (a compact gang), the plan is made within each domain of
// that node label, and the domain whose victims are the better candidate wins. `states` are
// the members' cycle states after PreFilter.
// Each member's search ends after ctx.limits' number of candidates, in node order.
GangPreemptionPlan PlanGangPreemption(const Context& ctx, const std::vector<PodRef>& members,
                                      const std::vector<const CycleState*>& states, int32_t need,
                                      const std::string& topology_key = "");

}  // namespace tessel::preemption
