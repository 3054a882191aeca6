#include "plugins/default_preemption/default_preemption.h"

#include <limits>

#include "scheduler/framework/node_tiers.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/util/status_macros.h"

namespace tessel::default_preemption {

absl::StatusOr<DefaultPreemptionArgs> DefaultPreemption::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}));
  Args args;
  ASSIGN_OR_RETURN(const int64_t percentage, reader.Int("minCandidateNodesPercentage",
                                                        args.min_candidate_nodes_percentage, 0, 100));
  ASSIGN_OR_RETURN(const int64_t absolute,
                   reader.Int("minCandidateNodesAbsolute", args.min_candidate_nodes_absolute, 0,
                              std::numeric_limits<int32_t>::max()));
  if (percentage == 0 && absolute == 0) {
    return reader.Error("", "minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0");
  }
  args.min_candidate_nodes_percentage = static_cast<int32_t>(percentage);
  args.min_candidate_nodes_absolute = static_cast<int32_t>(absolute);
  return args;
}

absl::StatusOr<std::unique_ptr<DefaultPreemption>> DefaultPreemption::New(Args args, Handle& handle) {
  return std::make_unique<DefaultPreemption>(
      handle, preemption::CandidateLimits{.min_percentage = args.min_candidate_nodes_percentage,
                                          .min_absolute = args.min_candidate_nodes_absolute});
}

PostFilterResult DefaultPreemption::PostFilter(CycleState& state, const Pod& pod,
                                               const NodeStatusMap& filtered) {
  using Nomination = PostFilterResult::Nomination;
  const Framework* fw = handle_.FrameworkFor(pod.scheduler_name);
  if (fw == nullptr) {
    return {.status = Status::Error(StrCat("preemption: no profile \"", pod.scheduler_name, "\""))};
  }
  if (!fw->reference()) index_.Sync(handle_.snapshot());
  preemption::Context ctx = preemption::ContextFor(handle_, fw);
  ctx.index = fw->reference() ? nullptr : &index_;
  ctx.limits = limits_;
  // A minimum run time makes a dry run's answer depend on the time: none is kept then.
  ctx.may_disrupt_now = preemption::MinRunGuard(handle_, absl::ZeroDuration());
  ctx.memo = fw->reference() || ctx.may_disrupt_now ? nullptr : &memo_;
  std::string why;
  if (!preemption::EligibleToPreempt(ctx, pod, filtered, &why)) {
    return {.status = Status::Unschedulable(StrCat("preemption: ", why))};
  }
  const std::vector<preemption::Candidate> candidates =
      preemption::FindCandidates(ctx, state, pod, filtered);
  if (candidates.empty()) {
    return {.status = Status::Unschedulable(
                StrCat("preemption: 0/", handle_.snapshot().size(),
                       " nodes are available: no node fits the pod even without its "
                       "lower-priority pods")),
            .nomination = Nomination::kOverride};
  }
  std::vector<PreemptionVictim> evicted;  // on every candidate tried, for metrics and reports
  for (const preemption::Candidate& c : candidates) {
    preemption::EvictionOutcome out = preemption::EvictInOrder(
        handle_, ctx.pdbs, c.victims, [&](const PreemptionVictim& v) {
          return preemption::PreemptionMessage(pod, handle_.PriorityOf(pod), c.node, v);
        });
    evicted.insert(evicted.end(), out.evicted.begin(), out.evicted.end());
    if (absl::IsFailedPrecondition(out.error)) {  // not the leader (any more): write nothing
      return {.status = Status::Unschedulable(StrCat("preemption: ", out.error.message())),
              .victims = std::move(evicted)};
    }
    if (!out.error.ok()) {
      return {.status = Status::Error(StrCat("preemption: ", out.error.message())), .victims = std::move(evicted)};
    }
    if (out.refused) continue;  // a PodDisruptionBudget says no: next candidate
    return {.status = Status::Ok(),
            .nomination = Nomination::kOverride,
            .nominated_node = c.node,
            .victims = std::move(evicted)};
  }
  return {.status = Status::Unschedulable(
              StrCat("preemption: PodDisruptionBudgets refused evictions on all ", candidates.size(),
                     " candidate node(s)")),
          .nomination = Nomination::kOverride,
          .victims = std::move(evicted)};
}

GangPostFilterResult DefaultPreemption::PostFilterGang(const PendingGang& gang) {
  GangPostFilterResult result;
  if (gang.members.empty() || gang.states.size() != gang.members.size() || !gang.may_preempt) return result;
  const Pod& head = *gang.members.front();
  const Framework* fw = handle_.FrameworkFor(head.scheduler_name);
  if (fw == nullptr || !head.MayPreempt()) return result;
  preemption::Context ctx = preemption::ContextFor(handle_, fw);
  ctx.nominations = gang.nominations;
  ctx.limits = limits_;
  ctx.may_disrupt_now = preemption::MinRunGuard(handle_, absl::ZeroDuration());
  for (const PodRef& m : gang.members) {
    // A member's earlier victims are still terminating on its nominated node: wait for them
    // rather than evict more (kube-scheduler's rule for one pod, per member).
    std::string why;
    if (!preemption::EligibleToPreempt(ctx, *m, {}, &why)) return result;
  }
  // Within one tier (flavor) at a time, the first that frees room for the whole gang.
  preemption::GangPreemptionPlan plan;
  const TierWalk walk(*gang.states.front(), handle_.snapshot().nodes(), gang.below_tier);
  for (const TierWalk::Tier& tier : walk.tiers()) {
    ctx.gang_node_screen = tier.screen;
    plan = preemption::PlanGangPreemption(ctx, gang.members, gang.states, gang.need, gang.topology_key);
    if (plan.feasible) break;
  }
  if (!plan.feasible || plan.victims.empty()) return result;
  const int32_t priority = handle_.PriorityOf(head);
  preemption::EvictionOutcome out =
      preemption::EvictInOrder(handle_, ctx.pdbs, plan.victims, [&](const PreemptionVictim& v) {
        // The member whose room the victim frees, else the gang's head (a victim's gang mates).
        for (const preemption::GangMemberTarget& t : plan.targets) {
          if (t.node == v.pod->node_name) return preemption::PreemptionMessage(*t.member, priority, t.node, v);
        }
        return preemption::PreemptionMessage(head, priority, "", v);
      });
  result.victims = std::move(out.evicted);
  // A PodDisruptionBudget (or the API) refused: the gang tries again at its next attempt.
  result.refused = out.refused || !out.error.ok();
  if (result.refused) {
    result.message = StrCat("Preemption for the gang stopped after ", result.victims.size(), " of ",
                            plan.victims.size(), " evictions: an eviction was refused.");
    return result;
  }
  result.targets = std::move(plan.targets);
  result.message = StrCat("Preempting ", result.victims.size(), " pod(s) for the gang.");
  return result;
}

}  // namespace tessel::default_preemption
