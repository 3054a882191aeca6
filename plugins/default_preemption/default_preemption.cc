#include "plugins/default_preemption/default_preemption.h"

#include "scheduler/framework/plugin_util.h"
#include "scheduler/preemption/preemption.h"

namespace tessel::default_preemption {

absl::StatusOr<std::unique_ptr<DefaultPreemption>> DefaultPreemption::New(const YAML::Node& args,
                                                                          Handle& handle) {
  if (absl::Status st = ArgsReader(args).OnlyKeys({}); !st.ok()) return st;
  return std::make_unique<DefaultPreemption>(handle);
}

PostFilterResult DefaultPreemption::PostFilter(CycleState& state, const Pod& pod,
                                               const NodeStatusMap& filtered) {
  using Nomination = PostFilterResult::Nomination;
  const Framework* fw = handle_.FrameworkFor(pod.scheduler_name);
  if (fw == nullptr) {
    return {.status = Status::Error(StrCat("preemption: no profile \"", pod.scheduler_name, "\""))};
  }
  const Handle* handle = &handle_;
  preemption::Context ctx{
      .framework = fw,
      .snapshot = &handle_.snapshot(),
      .pdbs = handle_.PodDisruptionBudgets(),
      .nominated = handle_.NominatedPods(),
      .gang_of = [handle](const Pod& p) { return handle->GangKeyOf(p); },
      .priority_of = [handle](const Pod& p) { return handle->PriorityOf(p); }};
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
    bool refused = false;
    for (const PreemptionVictim& v : preemption::EvictionOrder(ctx.pdbs, c.victims)) {
      const std::string message = preemption::PreemptionMessage(pod, handle_.PriorityOf(pod), c.node, v);
      absl::Status st = preemption::EvictVictim(handle_, v, message);
      if (st.ok() || absl::IsNotFound(st)) {  // NotFound: already gone, as good as evicted
        evicted.push_back(v);
        continue;
      }
      if (absl::IsResourceExhausted(st)) {  // a PodDisruptionBudget says no: next candidate
        refused = true;
        break;
      }
      if (absl::IsFailedPrecondition(st)) {  // not the leader (any more): write nothing
        return {.status = Status::Unschedulable(StrCat("preemption: ", st.message())),
                .victims = std::move(evicted)};
      }
      return {.status = Status::Error(StrCat("preemption: evicting pod ", v.pod->Key(), ": ",
                                             st.message())),
              .victims = std::move(evicted)};
    }
    if (refused) continue;
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

}  // namespace tessel::default_preemption
