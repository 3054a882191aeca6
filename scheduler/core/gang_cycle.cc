// A gang's scheduling cycle. The popped head stands for its gang (gang/gang_tracker.h); one
// cycle plans the whole gang against the snapshot (gang/planner.h), and only a complete plan is
// assumed, reserved and bound, so a gang that falls short holds nothing and two gangs can never
// each hold part of the cluster. A plan that falls short may preempt for the gang. Outcomes
// reach members as FailedScheduling (the observer) and the PodGroup as a status update
// (GangStatusSink). The binds: gang_binding.cc.
#include <algorithm>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

// The pods nominated to nodes, without the gang's own pending members: the plan places those
// itself, so their nominations must not count as room already taken.
NominatedPodMap WithoutMembers(NominatedPodMap nominated, const std::vector<PodRef>& members) {
  if (nominated.empty()) return nominated;
  absl::flat_hash_set<std::string> keys;
  for (const PodRef& m : members) keys.insert(m->Key());
  for (auto it = nominated.begin(); it != nominated.end();) {
    std::erase_if(it->second, [&](const PodRef& p) { return keys.contains(p->Key()); });
    it = it->second.empty() ? nominated.erase(it) : std::next(it);
  }
  return nominated;
}

}  // namespace

// One attempt of one gang: what its steps share.
struct Scheduler::GangAttempt {
  const Framework& fw;
  InFlightPod head;
  gang::GangSpec spec;
  std::vector<PodRef> members;  // pending, earliest first
  int32_t placed = 0;           // members already placed
  int32_t need = 0;             // members this attempt must place
  absl::Time start;
  int32_t known() const { return placed + static_cast<int32_t>(members.size()); }
};

void Scheduler::TellUndecodableGang(const gang::GangId& id) {
  {
    absl::MutexLock lock(&mu_);
    if (!undecodable_gangs_.contains(id.Key())) return;  // the common case: nothing to tell
  }
  std::vector<PodRef> members;
  for (const PodRef& member : tracker_->PendingMembers()) {
    if (gangs_.Resolve(*member).spec.id == id) members.push_back(member);
  }
  std::string problem;
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = undecodable_gangs_.find(id.Key());
    if (it == undecodable_gangs_.end()) return;
    problem = it->second.problem;
    first = it->second.told.empty();
    // Members told before are not told again; one that joined since is.
    std::erase_if(members, [&](const PodRef& p) { return !it->second.told.insert(p->Key()).second; });
  }
  const std::string message = StrCat(problem, "; the pod waits until ", id.Describe(), " decodes");
  if (observer_) {
    for (const PodRef& member : members) observer_->PodUnschedulable(*member, FailureKind::kError, message);
  }
  if (first) {
    ReportGang(id, {.phase = gang::GangPhase::kPending, .reason = gang::GangReason::kInvalidSpec, .message = message});
  }
}

void Scheduler::RunGangCycle(InFlightPod head) {
  const PodRef head_pod = head.ref();  // held for the whole cycle
  const gang::GangBook::Resolution r = gangs_.Resolve(*head_pod);
  gang::GangTracker::Cycle c = tracker_->BeginCycle(*head_pod, r);
  switch (c.kind) {
    case gang::GangTracker::Cycle::Kind::kSuperseded:
      return;  // another member heads the gang now (the token says Done)
    case gang::GangTracker::Cycle::Kind::kDissolved:
      head.Done();
      return tracker_->Dissolve(r.spec.id.Key());
    case gang::GangTracker::Cycle::Kind::kWaiting:
      // Its PodGroup does not exist (yet): wait quietly, and try at once when gang objects
      // change (no attempts counted, so no backoff). One that exists but does not decode is
      // no reason for quiet: its members are told.
      TellUndecodableGang(r.spec.id);
      head.ForgetAttempts();
      return head.Unschedulable(kCustomObjectChange);
    case gang::GangTracker::Cycle::Kind::kReady:
      break;
  }
  GangAttempt a{.fw = *FrameworkFor(head_pod->scheduler_name),
                .head = std::move(head),
                .spec = r.spec,
                .members = std::move(c.members),
                .placed = c.placed,
                .need = std::max(0, r.spec.min_member - c.placed),
                .start = clock_->Now()};
  if (static_cast<int32_t>(a.members.size()) < a.need) {
    // Not every member exists yet: wait quietly for the rest; but members placed meanwhile hold
    // their nodes only so long (RollBackIfStranded).
    const std::string waiting = StrCat(a.spec.id.Describe(), " has ", a.known(), " of ", a.spec.min_member, " members");
    if (a.placed > 0) {
      (void)tracker_->NoteShortfall(a.spec.id.Key(), waiting, a.start);
      if (RollBackIfStranded(a.spec.id.Key())) {
        a.head.Unschedulable(kUnassignedPodAdd | kAssignedPodDelete | kCustomObjectChange);
        return ReportAttempt(*head_pod, AttemptResult::kUnschedulable, a.start);
      }
    }
    ReportGang(a.spec.id, {.phase = gang::GangPhase::kPending,
                           .scheduled = a.placed,
                           .members = a.known(),
                           .min_member = a.spec.min_member,
                           .reason = gang::GangReason::kWaitingForMembers,
                           .message = waiting,
                           .unsupported = a.spec.unsupported});
    a.head.Unschedulable(kUnassignedPodAdd | kCustomObjectChange);
    return ReportAttempt(*head_pod, AttemptResult::kUnschedulable, a.start);
  }
  cache_->UpdateSnapshot(snapshot_);
  const NominatedPodMap nominated = WithoutMembers(nominator_.Pods(), a.members);
  std::vector<std::string> running_nodes;
  for (const std::string& key : c.placed_keys) {
    if (std::optional<std::string> node = cache_->NodeOf(key)) running_nodes.push_back(*std::move(node));
  }
  gang::GangPlan plan = gang::PlanGang(gang::PlanInput{.framework = &a.fw,
                                                       .snapshot = &snapshot_,
                                                       .members = a.members,
                                                       .min_to_place = a.need,
                                                       .min_member = a.spec.min_member,
                                                       .gang = a.spec.id.Describe(),
                                                       .topology_key = a.spec.topology_key,
                                                       .min_resources = a.spec.min_resources,
                                                       .nominated = nominated.empty() ? nullptr : &nominated,
                                                       .running_nodes = std::move(running_nodes)});
  if (plan.feasible && GangPreemptsFirst(a, plan)) return;
  if (plan.feasible && !HoldPlan(a, plan)) return;
  if (!plan.feasible) return GangShortfall(a, plan);
  PlaceGang(a, std::move(plan));
}

bool Scheduler::HoldPlan(GangAttempt& a, gang::GangPlan& plan) {
  Status held = HoldGang(a.fw, plan.placements, static_cast<size_t>(a.need));
  if (held.ok()) {
    absl::flat_hash_set<std::string_view> nodes;  // members a plugin turned away left the plan
    for (const gang::MemberPlacement& m : plan.placements) {
      nodes.insert(m.node);
      ClearOutgrownNominations(*m.state);
    }
    plan.nodes_used = static_cast<int32_t>(nodes.size());
    return true;
  }
  if (held.IsRejected()) {
    // A Reserve or Permit plugin refused the gang as a whole, though each member fits alone
    // (QueueQuota: the members together exceed the team's quota). Nothing is held; the gang
    // waits for what that plugin registered, like a plan that falls short.
    plan.feasible = false;
    plan.code = held.code();
    plan.message = StrCat(a.spec.id.Describe(), ": ", held.Message());
    plan.rejecting_plugins = {held.plugin()};
    return true;
  }
  const std::string message = StrCat(a.spec.id.Describe(), ": ", held.Message());
  for (const PodRef& m : a.members) {
    if (observer_) observer_->PodUnschedulable(*m, FailureKind::kError, message);
  }
  const PodRef head = a.head.ref();
  a.head.Backoff();
  ReportAttempt(*head, AttemptResult::kError, a.start);
  return false;
}

bool Scheduler::GangPreemptsFirst(GangAttempt& a, const gang::GangPlan& plan) {
  if (plan.tiers == nullptr || !a.fw.HasGangPostFilter()) return false;
  std::vector<const NodeInfo*> nominated;
  for (const PodRef& m : a.members) nominated.push_back(snapshot_.Get(m->nominated_node_name));
  const TierChoice choice = ChooseTier(*plan.tiers, plan.tier, nominated);
  std::string message;
  switch (choice.kind) {
    case TierChoice::Kind::kTake:
      return false;
    case TierChoice::Kind::kWaitForVictims:
      message = StrCat(a.spec.id.Describe(), ": ", WaitingOnEarlierTier(*choice.waiting_on));
      break;
    case TierChoice::Kind::kPreemptBelow: {
      const GangPostFilterResult r = MakeRoomForGang(a, {.preemption_only = true, .below_tier = choice.below});
      if (r.victims.empty() && !r.refused) return false;  // no room there: the plan's tier it is
      message = StrCat(a.spec.id.Describe(), ": nodes of its earlier tiers are full. ", r.message);
      break;
    }
  }
  const bool timed_out = tracker_->NoteShortfall(a.spec.id.Key(), message, clock_->Now());
  for (const PodRef& m : a.members) {
    if (observer_) observer_->PodUnschedulable(*m, FailureKind::kUnschedulable, message);
  }
  ReportGang(a.spec.id, {.phase = timed_out ? gang::GangPhase::kFailed : gang::GangPhase::kPending,
                         .scheduled = a.placed,
                         .members = a.known(),
                         .min_member = a.spec.min_member,
                         .reason = timed_out ? gang::GangReason::kScheduleTimeout : gang::GangReason::kUnschedulable,
                         .message = message,
                         .unsupported = a.spec.unsupported});
  const PodRef head = a.head.ref();
  a.head.Unschedulable(kAllEvents);  // any pod deletion may be a victim leaving
  ReportAttempt(*head, AttemptResult::kUnschedulable, a.start);
  return true;
}

void Scheduler::GangShortfall(GangAttempt& a, gang::GangPlan& plan) {
  const bool error = plan.code == Code::kError;
  // Members placed before this process started, or for longer than the gang's timeout, while
  // the rest do not fit: let them go before making room for the rest (issue 37, defect 12).
  if (!error && a.placed > 0) {
    (void)tracker_->NoteShortfall(a.spec.id.Key(), plan.message, a.start);
    if (RollBackIfStranded(a.spec.id.Key())) {
      const PodRef head = a.head.ref();
      a.head.Unschedulable(kUnassignedPodAdd | kAssignedPodDelete | kCustomObjectChange);
      return ReportAttempt(*head, AttemptResult::kUnschedulable, a.start);
    }
  }
  const bool quota_only = !error && plan.QuotaOnly(a.fw);
  if (quota_only && !plan.limit_reason.empty()) {
    StrAppend(&plan.message, ": ", plan.limit_reason);  // the cluster has room; the quota not
  }
  // Room the gang could get by evicting lower-priority pods (whole gangs among them), then by
  // the other gang PostFilter plugins (moving movable pods, reserving nodes). Moving pods or
  // reserving nodes gives no quota: a gang its quota holds back (alone, or besides room) waits
  // for reclaim (preemption) or for its queue's pods to end.
  uint32_t preempt_events = 0;
  if (!error && a.fw.HasGangPostFilter() && !a.members.empty()) {
    const bool quota_short = std::any_of(plan.rejecting_plugins.begin(), plan.rejecting_plugins.end(),
                                         [&](const std::string& p) { return a.fw.IsQuotaPlugin(p); });
    const GangPostFilterResult r = MakeRoomForGang(a, {.quota_short = quota_short});
    if (!r.message.empty()) StrAppend(&plan.message, " ", r.message);
    if (!r.victims.empty() || r.refused) preempt_events = kAllEvents;  // any pod deletion may be a victim leaving
  }
  gang::GangReason reason = gang::GangReason::kUnschedulable;
  FailureKind kind = error ? FailureKind::kError : quota_only ? FailureKind::kQuotaExceeded : FailureKind::kUnschedulable;
  // A flavored queue's QueueQuota also turns away nodes outside its flavors: AskForCapacity
  // judges the quota itself (docs/provisioning.md).
  if (!error && preempt_events == 0) {
    if (std::optional<provisioning::Outcome> asked = AskForCapacity(a, plan)) {
      StrAppend(&plan.message, "; ", asked->message);
      reason = asked->failed ? gang::GangReason::kProvisioningFailed : gang::GangReason::kWaitingForProvisioning;
      kind = FailureKind::kWaitingForProvisioning;
    }
  }
  const bool timed_out = tracker_->NoteShortfall(a.spec.id.Key(), plan.message, clock_->Now());
  for (const PodRef& m : a.members) {
    if (observer_) observer_->PodUnschedulable(*m, kind, plan.message);
  }
  ReportGang(a.spec.id, {.phase = timed_out ? gang::GangPhase::kFailed : gang::GangPhase::kPending,
                         .scheduled = a.placed,
                         .members = a.known(),
                         .min_member = a.spec.min_member,
                         .reason = timed_out ? gang::GangReason::kScheduleTimeout : reason,
                         .message = plan.message,
                         .unsupported = a.spec.unsupported});
  const PodRef head = a.head.ref();
  if (error) {
    a.head.Backoff();
    return ReportAttempt(*head, AttemptResult::kError, a.start);
  }
  const uint32_t events = plan.rejecting_plugins.empty() ? kAllEvents : a.fw.EventsFor(plan.rejecting_plugins);
  // Waiting on a request: its change, or its nodes (whichever plugin turned nodes away).
  const uint32_t provisioning_events = kind == FailureKind::kWaitingForProvisioning ? kNodeAdd : 0u;
  a.head.Unschedulable(events | preempt_events | kUnassignedPodAdd | kCustomObjectChange | provisioning_events);
  ReportAttempt(*head, AttemptResult::kUnschedulable, a.start);
}

std::optional<provisioning::Outcome> Scheduler::AskForCapacity(const GangAttempt& a, const gang::GangPlan& plan) {
  if (provisioner_ == nullptr || a.members.empty()) return std::nullopt;
  const Pod& head = *a.members.front();
  // A scheduler-plugins PodGroup may carry the marking and owns the request; other gangs' are
  // owned by their first pending member.
  std::optional<gang::PodGroup> group;
  if (a.spec.id.kind == gang::GangKind::kPodGroup) group = gangs_.FindPodGroup(a.spec.id.namespace_, a.spec.id.name);
  const std::shared_ptr<const QueueDirectory> queues = queue_store_.directory();
  provisioning::ShortageInput in{
      .key = a.spec.id.Key(),
      .head = &head,
      .gang_annotations = group ? &group->meta.annotations : nullptr,
      .queues = queues.get(),
      .queue = queues->QueueFor(head).queue,
      .snapshot = &snapshot_,
      .owner = group ? OwnerReference{.api_version = std::string(gang::kPodGroupApiVersion), .kind = "PodGroup",
                                      .name = group->meta.name, .uid = group->meta.uid}
                     : OwnerReference{.api_version = "v1", .kind = "Pod", .name = head.meta.name, .uid = head.meta.uid},
      .rejecting_plugins = &plan.rejecting_plugins};
  for (const PodRef& m : a.members) in.members.push_back(m.get());
  return provisioning::AskIfShort(*provisioner_, std::move(in));
}

void Scheduler::PlaceGang(GangAttempt& a, gang::GangPlan plan) {
  const PodRef head = a.head.ref();
  const QueuedPodInfo head_info = a.head.info();
  // Placed with the gang, or let go below: out of flight before another head may be queued.
  a.head.Done();
  std::optional<int32_t> placed = tracker_->Commit(a.spec.id.Key(), head->Key(), plan.placements);
  if (!placed.has_value()) {
    // A member changed or left during the cycle (Tessel's own status patch is enough): nothing
    // is held, and the gang is tried again at once with its members' newest copies.
    ReleaseGang(a.fw, plan.placements, plan.placements.size());
    tracker_->Abandon(a.spec.id.Key(), head->Key());
    return ReportAttempt(*head, AttemptResult::kError, a.start);
  }
  std::string message = StrCat(Plural(static_cast<int64_t>(plan.placements.size()), "member", "members"),
                               " placed on ", Plural(plan.nodes_used, "node", "nodes"));
  if (!plan.domain.empty()) StrAppend(&message, " in ", a.spec.topology_key, "=", plan.domain);
  ReportGang(a.spec.id, {.phase = gang::GangPhase::kScheduled,
                         .scheduled = *placed,
                         .members = a.known(),
                         .min_member = a.spec.min_member,
                         .condition = true,
                         .reason = gang::GangReason::kScheduled,
                         .message = std::move(message),
                         .domain = plan.domain,
                         .unsupported = a.spec.unsupported});
  ReportAttempt(*head, AttemptResult::kScheduled, a.start);
  if (provisioner_ != nullptr) provisioner_->GangPlaced(a.spec.id.Key());
  StartGangBinding(a.fw, a.spec.id, std::move(plan.placements), head_info);
}

void Scheduler::NominateMembers(std::vector<PodRef>& members, const std::vector<GangMemberTarget>& targets) {
  // Each placed member waits for its node; the room is held for it meanwhile.
  for (const GangMemberTarget& t : targets) {
    for (PodRef& m : members) {
      if (m->Key() != t.member->Key()) continue;
      Pod nominated = *m;
      nominated.nominated_node_name = t.node;
      m = std::make_shared<const Pod>(std::move(nominated));
      nominator_.Set(m, t.node);
    }
  }
  std::set<std::string> target_nodes;
  for (const GangMemberTarget& t : targets) target_nodes.insert(t.node);
  for (const std::string& node : target_nodes) ClearLowerNominations(*members.front(), node);
  for (const PodRef& m : members) tracker_->ReplacePending(m);
}

GangPostFilterResult Scheduler::MakeRoomForGang(GangAttempt& a, PendingGang scope) {
  // The members' cycle states: all of them, or no room is sought.
  std::vector<CycleState> states(a.members.size());
  const size_t needed = std::clamp<size_t>(static_cast<size_t>(a.need), 1, a.members.size());
  const SchedulingUnit unit = std::make_shared<const std::vector<PodRef>>(
      a.members.begin(), a.members.begin() + static_cast<std::ptrdiff_t>(needed));
  for (size_t i = 0; i < a.members.size(); ++i) {
    SetSchedulingUnit(states[i], unit);  // judged as the planner judged them
    if (!a.fw.RunPreFilter(states[i], *a.members[i]).ok()) return {};
    scope.states.push_back(&states[i]);
  }
  scope.members = a.members;
  scope.need = a.need;
  scope.topology_key = a.spec.topology_key;
  scope.nominations = std::make_shared<const Nominations>(Nominations{.pods = WithoutMembers(nominator_.Pods(), a.members)});
  scope.may_preempt = a.spec.preemption_policy != PreemptionPolicy::kNever;
  GangPostFilterResult r = a.fw.RunGangPostFilter(scope);
  if (r.victims.empty()) return r;
  if (observer_) observer_->PodsPreempted(*a.members.front(), "", r.victims);
  if (!r.refused) NominateMembers(a.members, r.targets);
  return r;
}

}  // namespace tessel
