// Consolidation: moving movable pods to make room for a pod that fits nowhere (consolidation.h).
#include "plugins/consolidation/consolidation.h"

#include "scheduler/framework/node_tiers.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/preemption/dra_room.h"
#include "scheduler/util/status_macros.h"

namespace tessel::consolidation {
namespace {

// Plans tried per attempt when PodDisruptionBudgets refuse the best ones.
constexpr size_t kPlansTried = 3;
// How long a search that found no plan holds for a pod.
constexpr absl::Duration kRetryAfter = absl::Seconds(30);
// The tier part of a vain-search hold's key for a pod without node tiers, and for a gang.
constexpr int64_t kUntiered = -1, kGang = -2;

// The vain-search hold is per pod and node tier: the core offers a flavored pod's tiers in turn
// in one attempt (node_tiers.h), each with the other tiers' nodes unresolvable, and a search in
// vain on one says nothing of the next. The tier is read off a node the pod may still use.
int64_t TierSearched(const Handle& handle, const CycleState& state, const NodeStatusMap& filtered) {
  const TierWalk walk(state, {});
  if (!walk.tiered()) return kUntiered;
  for (const auto& [name, status] : filtered) {
    if (status.code() != Code::kUnschedulable) continue;
    const NodeInfo* node = handle.snapshot().Get(name);
    if (const std::optional<int64_t> tier = node == nullptr ? std::nullopt : walk.TierOf(*node)) return *tier;
  }
  return kUntiered;
}

}  // namespace

absl::StatusOr<ConsolidationArgs> Consolidation::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"minRunSeconds", "maxMovesPerPod", "moveWindowSeconds", "minPodGpus"}));
  Args args;
  constexpr int64_t kYear = 366 * 24 * 3600;
  ASSIGN_OR_RETURN(args.min_run_seconds, reader.Int("minRunSeconds", args.min_run_seconds, 0, kYear));
  ASSIGN_OR_RETURN(const int64_t moves, reader.Int("maxMovesPerPod", args.max_moves_per_pod, 0, 1000));
  args.max_moves_per_pod = static_cast<int32_t>(moves);
  // The scheduler's record of moves reaches back kDisruptionMemory: a longer window would count
  // less than it says.
  ASSIGN_OR_RETURN(args.move_window_seconds,
                   reader.Int("moveWindowSeconds", args.move_window_seconds, 1,
                              absl::ToInt64Seconds(preemption::kDisruptionMemory)));
  ASSIGN_OR_RETURN(args.min_pod_gpus, reader.Int("minPodGpus", args.min_pod_gpus, 0, 1024));
  return args;
}

absl::StatusOr<std::unique_ptr<Consolidation>> Consolidation::New(Args args, Handle& handle) {
  return std::make_unique<Consolidation>(handle, args);
}

preemption::Context Consolidation::MoveContext(const Framework* fw, const preemption::DisruptionRules& rules,
                                               absl::Time now) const {
  DisruptionLedger* ledger = handle_.disruptions();
  const absl::Duration window = absl::Seconds(args_.move_window_seconds);
  const absl::Duration min_run = absl::Seconds(args_.min_run_seconds);
  const int32_t max_moves = args_.max_moves_per_pod;
  const Handle* handle = &handle_;
  preemption::Context ctx = preemption::ContextFor(handle_, fw);
  // A pod holding a DRA claim that is not its own (named, or shared with other pods) is not
  // moved: the claim stays allocated where it is, so moving the pod frees nothing and its
  // replacement could run only there. Asked at the dry run, as the time bounds are: the claims
  // change without the node (MovableIndex counts such a pod, which only costs a dry run).
  ctx.may_disrupt_now = [&rules, ledger, window, min_run, max_moves, now, objects = ctx.objects](const Pod& p) {
    if (!rules.RanLongEnough(p, now, min_run)) return false;
    if (!p.resource_claims.empty() && (objects == nullptr || !preemption::ClaimsAllOwn(p, *objects))) return false;
    return ledger == nullptr || ledger->Count(WorkloadKey(p), DisruptionKind::kMove, now - window) < max_moves;
  };
  ctx.victim_rule = [&rules, handle](const Pod& p, std::string* reason) {
    if (!rules.Movable(p) || !handle->GangKeyOf(p).empty()) return false;
    *reason = std::string(kReason);
    return true;
  };
  return ctx;
}

PostFilterResult Consolidation::PostFilter(CycleState& state, const Pod& pod,
                                           const NodeStatusMap& filtered) {
  using Nomination = PostFilterResult::Nomination;
  auto unschedulable = [](std::string why) {
    return PostFilterResult{.status = Status::Unschedulable(StrCat("consolidation: ", why))};
  };
  const Framework* fw = handle_.FrameworkFor(pod.scheduler_name);
  if (fw == nullptr) {
    return {.status = Status::Error(StrCat("consolidation: no profile \"", pod.scheduler_name, "\""))};
  }
  if (args_.max_moves_per_pod == 0) return unschedulable("maxMovesPerPod is 0");
  if (!handle_.GangKeyOf(pod).empty()) return unschedulable("gang members are placed by the gang cycle");

  const absl::Time now = handle_.clock().Now();
  const VainKey vain_key{pod.Key(), TierSearched(handle_, state, filtered)};
  if (auto it = last_in_vain_.find(vain_key); it != last_in_vain_.end() && now - it->second < kRetryAfter) {
    return unschedulable("no plan was found for the pod a moment ago");
  }
  const preemption::DisruptionRules rules(handle_.PriorityClasses(), handle_.Queues());
  preemption::Context ctx = MoveContext(fw, rules, now);
  index_.Sync(ctx, rules.movable_version());
  const preemption::MoveSearch search{.max_plans = kPlansTried,
                                      .min_gpu_milli = std::max<int64_t>(1, args_.min_pod_gpus * 1000)};
  absl::StatusOr<std::vector<preemption::MovePlan>> plans =
      preemption::FindMovePlans(ctx, state, pod, filtered, search, &index_);
  if (!plans.ok()) return unschedulable(std::string(plans.status().message()));  // no search made
  if (plans->empty()) {
    if (last_in_vain_.size() > 10000) {
      absl::erase_if(last_in_vain_, [&](const auto& kv) { return now - kv.second >= kRetryAfter; });
    }
    last_in_vain_[vain_key] = now;
    PostFilterResult none = unschedulable(
        "no node can take the pod by moving movable pods that every fit elsewhere");
    none.nomination = Nomination::kOverride;  // nowhere to wait for
    return none;
  }
  std::vector<PreemptionVictim> moved;
  for (const preemption::MovePlan& plan : *plans) {
    preemption::EvictionOutcome out = preemption::EvictInOrder(
        handle_, ctx.pdbs, plan.moves,
        [&](const PreemptionVictim&) { return StrCat("moved to make room for ", pod.Key(), " on node ", plan.node); },
        DisruptionKind::kMove);
    moved.insert(moved.end(), out.evicted.begin(), out.evicted.end());
    if (absl::IsFailedPrecondition(out.error)) {  // not the leader (any more)
      return {.status = Status::Unschedulable(StrCat("consolidation: ", out.error.message())), .victims = std::move(moved)};
    }
    if (!out.error.ok()) {
      return {.status = Status::Error(StrCat("consolidation: ", out.error.message())), .victims = std::move(moved)};
    }
    if (out.refused) continue;  // a PodDisruptionBudget says no: the next plan
    last_in_vain_.erase(vain_key);
    return {.status = Status::Ok(),
            .nomination = Nomination::kOverride,
            .nominated_node = plan.node,
            .victims = std::move(moved)};
  }
  return {.status = Status::Unschedulable(StrCat("consolidation: PodDisruptionBudgets refused the moves of all ",
                                                 plans->size(), " plan(s)")),
          .nomination = Nomination::kOverride,
          .victims = std::move(moved)};
}

GangPostFilterResult Consolidation::PostFilterGang(const PendingGang& gang) {
  GangPostFilterResult result;
  if (gang.quota_short || gang.members.empty() || gang.states.size() != gang.members.size() ||
      args_.max_moves_per_pod == 0) {
    return result;  // moves free no quota
  }
  const Pod& head = *gang.members.front();
  const Framework* fw = handle_.FrameworkFor(head.scheduler_name);
  if (fw == nullptr || !head.MayPreempt()) return result;
  int64_t gang_gpu_milli = 0;
  for (const PodRef& m : gang.members) gang_gpu_milli += preemption::AskedGpuMilli(*m);
  if (gang_gpu_milli == 0 || gang_gpu_milli < args_.min_pod_gpus * 1000) return result;
  const absl::Time now = handle_.clock().Now();
  const VainKey gang_key{handle_.GangKeyOf(head), kGang};
  if (auto it = last_in_vain_.find(gang_key); it != last_in_vain_.end() && now - it->second < kRetryAfter) {
    return result;
  }
  const preemption::DisruptionRules rules(handle_.PriorityClasses(), handle_.Queues());
  preemption::Context ctx = MoveContext(fw, rules, now);
  ctx.nominations = gang.nominations;
  for (const PodRef& m : gang.members) {
    std::string why;
    if (!preemption::EligibleToPreempt(ctx, *m, {}, &why)) return result;  // victims still leaving
  }
  index_.Sync(ctx, rules.movable_version());
  // Within one tier (flavor) at a time, the first where moves make room for the whole gang.
  std::optional<preemption::GangMovePlan> plan;
  const TierWalk walk(*gang.states.front(), ctx.snapshot->nodes());
  for (const TierWalk::Tier& tier : walk.tiers()) {
    ctx.gang_node_screen = tier.screen;
    plan = preemption::PlanGangMoves(ctx, gang.members, gang.states, gang.need, gang.topology_key, &index_);
    if (plan) break;
  }
  if (!plan) {
    last_in_vain_[gang_key] = now;
    return result;
  }
  preemption::EvictionOutcome out = preemption::EvictInOrder(
      handle_, ctx.pdbs, plan->moves,
      [&](const PreemptionVictim& v) {
        // The member whose node the moved pod leaves.
        for (const preemption::GangMemberTarget& t : plan->targets) {
          if (t.node == v.pod->node_name) return StrCat("moved to make room for ", t.member->Key(), " on node ", t.node);
        }
        return StrCat("moved to make room for the gang of ", head.Key());
      },
      DisruptionKind::kMove);
  result.victims = std::move(out.evicted);
  result.refused = out.refused || !out.error.ok();
  if (result.refused) {
    result.message = StrCat("Moving pods for the gang stopped after ", result.victims.size(), " of ",
                            plan->moves.size(), " moves: an eviction was refused.");
    return result;
  }
  last_in_vain_.erase(gang_key);
  result.targets = std::move(plan->targets);
  result.message = StrCat("Moving ", result.victims.size(), " pod(s) to make room for the gang.");
  return result;
}

}  // namespace tessel::consolidation
