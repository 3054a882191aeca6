// Gangs in the scheduling core. A pending gang is one queue entry: its earliest pending member
// (the "head") stands for it, so the gang is ordered by priority and then by the creation time
// of its first member; the other pending members wait in gang_states_. One cycle plans the
// whole gang against the snapshot (scheduler/gang/planner.h); only a complete plan is assumed,
// reserved and bound, so a gang that falls short holds nothing and two gangs can never each
// hold part of the cluster. Members bind in parallel on the bind executor; a member whose bind
// keeps failing rolls the gang back: the members already bound are evicted and the gang goes
// back to the queue with backoff. Outcomes reach members as FailedScheduling (the observer)
// and the PodGroup as a status update (GangStatusSink).
#include <algorithm>
#include <atomic>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "scheduler/core/admission.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/binding.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/util/strings.h"

namespace tessel {

using gang::GangBook;

namespace {

// How soon a refused rollback eviction is tried again, doubling up to the maximum.
constexpr absl::Duration kFirstRollbackRetry = absl::Seconds(1);
constexpr absl::Duration kMaxRollbackRetry = absl::Seconds(60);

bool EarlierMember(const PodRef& a, const PodRef& b) {
  if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
    return a->meta.creation_timestamp < b->meta.creation_timestamp;
  }
  return a->Key() < b->Key();
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

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

struct Scheduler::GangBinding {
  const Framework* fw = nullptr;
  gang::GangId id;
  std::vector<gang::MemberPlacement> members;
  std::vector<Status> results;        // what failed, for messages
  std::vector<BindOutcome> outcomes;  // how each member's bind ended
  std::atomic<size_t> left{0};
  QueuedPodInfo head_info;
};

absl::StatusOr<bool> Scheduler::OnGangObject(const nlohmann::json& object) {
  absl::StatusOr<bool> applied = gangs_.Apply(object);
  if (applied.ok() && *applied) OnCustomObjectChange();
  return applied;
}

void Scheduler::OnGangObjectDelete(const nlohmann::json& object) {
  if (!gangs_.Remove(object)) return;
  OnCustomObjectChange();
  if (gang_status_ == nullptr) return;
  if (std::optional<gang::GangId> id = GangBook::IdOf(object)) gang_status_->GangForgotten(*id);
}

bool Scheduler::AdmitGangMember(const PodRef& pod) {
  const GangBook::Resolution r = gangs_.Resolve(*pod);
  if (r.membership == GangBook::Membership::kNone) return false;
  const std::string key = pod->Key();
  const std::string gang_key = r.spec.id.Key();
  absl::MutexLock lock(&gang_mu_);
  GangState& g = gang_states_[gang_key];
  g.id = r.spec.id;
  g.placed.erase(key);
  g.pending[key] = pod;
  gang_of_[key] = gang_key;
  if (g.head == key) {
    queue_->Update(pod);  // in the queue: the newer object replaces it; in a cycle: no-op
  } else if (g.head.empty()) {
    g.head = key;
    queue_->Add(pod);
  } else if (auto head = g.pending.find(g.head);
             head != g.pending.end() && EarlierMember(pod, head->second) &&
             queue_->Contains(g.head)) {
    // An earlier member arrived late: it stands for the gang from now on.
    queue_->Delete(g.head);
    g.head = key;
    queue_->Add(pod);
  }
  return true;
}

void Scheduler::NoteGangMemberPlaced(const Pod& pod) {
  std::optional<gang::GangId> id = gang::DeclaredGang(pod);
  if (!id.has_value()) return;
  const std::string key = pod.Key();
  const std::string gang_key = id->Key();
  std::optional<gang::GangStatusUpdate> report;
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_states_.find(gang_key);
    if (it == gang_states_.end()) {
      if (pod.IsTerminal()) return;
      it = gang_states_.emplace(gang_key, GangState{.id = *id}).first;
    }
    GangState& g = it->second;
    g.pending.erase(key);
    if (pod.IsTerminal()) {
      g.placed.erase(key);
    } else if (pod.meta.deletion_timestamp.has_value() || g.evicting.contains(key)) {
      // Terminating (a preemption's victim, a rollback's eviction): it holds its node until it
      // is gone, but no longer counts towards minMember, so replacements are planned together.
      g.placed.erase(key);
      g.evicting.insert(key);
    } else {
      g.placed.insert(key);
    }
    gang_of_[key] = gang_key;
    if (g.head == key) {
      g.head.clear();
      RequeueGangHead(g, std::nullopt, false);
    }
    if (NoteMemberPhase(g, key, pod.phase) && g.last_report.has_value()) report = g.last_report;
  }
  if (report.has_value()) ReportGang(*id, *std::move(report));
}

void Scheduler::ForgetGangMember(const std::string& key) {
  std::optional<std::pair<gang::GangId, gang::GangStatusUpdate>> report;
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_of_.find(key);
    if (it == gang_of_.end()) return;
    auto state = gang_states_.find(it->second);
    gang_of_.erase(it);
    rollback_evictions_.erase(key);
    if (state == gang_states_.end()) return;
    GangState& g = state->second;
    g.pending.erase(key);
    g.placed.erase(key);
    g.evicting.erase(key);
    if (g.head == key) {
      g.head.clear();
      RequeueGangHead(g, std::nullopt, false);
    }
    // A deleted member no longer runs; a finished one stays counted as finished.
    if (g.running.erase(key) > 0 && g.last_report.has_value()) report.emplace(g.id, *g.last_report);
    if (g.pending.empty() && g.placed.empty() && g.evicting.empty()) gang_states_.erase(state);
  }
  if (report.has_value()) ReportGang(report->first, std::move(report->second));
}

bool Scheduler::NoteMemberPhase(GangState& g, const std::string& key, PodPhase phase) {
  bool changed = false;
  auto mark = [&](StringSet& set, bool member) {
    changed |= member ? set.insert(key).second : set.erase(key) > 0;
  };
  mark(g.running, phase == PodPhase::kRunning);
  mark(g.succeeded, phase == PodPhase::kSucceeded);
  mark(g.failed, phase == PodPhase::kFailed);
  return changed;
}

bool Scheduler::IsGangHead(const Pod& pod) const {
  const std::string key = pod.Key();
  absl::MutexLock lock(&gang_mu_);
  auto it = gang_of_.find(key);
  if (it == gang_of_.end()) return false;
  auto state = gang_states_.find(it->second);
  return state != gang_states_.end() && state->second.head == key;
}

void Scheduler::RequeueGangHead(GangState& g, std::optional<QueuedPodInfo> previous, bool backoff) {
  if (!g.head.empty() || g.pending.empty()) return;
  PodRef first;
  for (const auto& [key, pod] : g.pending) {
    if (!first || EarlierMember(pod, first)) first = pod;
  }
  g.head = first->Key();
  if (previous.has_value() && backoff) {
    QueuedPodInfo info = *std::move(previous);
    info.pod = first;
    queue_->AddBackoff(std::move(info));
  } else {
    queue_->Add(first);
  }
}

std::string Scheduler::PreemptForGang(const Framework& fw, std::vector<PodRef>& members,
                                      int32_t need, const std::string& topology_key) {
  if (members.empty() || !members.front()->MayPreempt()) return {};
  preemption::Context ctx{.framework = &fw,
                          .snapshot = &snapshot_,
                          .pdbs = PodDisruptionBudgets(),
                          .nominations = std::make_shared<const Nominations>(
                              Nominations{.pods = WithoutMembers(nominator_.Pods(), members)}),
                          .gang_of = [this](const Pod& p) { return GangKeyOf(p); },
                          .priority_of = [this](const Pod& p) { return PriorityOf(p); }};
  std::vector<CycleState> states(members.size());
  std::vector<const CycleState*> state_ptrs;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!fw.RunPreFilter(states[i], *members[i]).ok()) return {};
    state_ptrs.push_back(&states[i]);
    // A member's earlier victims are still terminating on its nominated node: wait for them
    // rather than evict more (kube-scheduler's rule for one pod, per member).
    std::string why;
    if (!preemption::EligibleToPreempt(ctx, *members[i], {}, &why)) return {};
  }
  preemption::GangPreemptionPlan plan =
      preemption::PlanGangPreemption(ctx, members, state_ptrs, need, topology_key);
  if (!plan.feasible || plan.victims.empty()) return {};
  const Pod& head = *members.front();
  std::vector<PreemptionVictim> evicted;
  bool refused = false;
  for (const PreemptionVictim& v : preemption::EvictionOrder(ctx.pdbs, plan.victims)) {
    // The member whose room the victim frees, else the gang's head (a victim's gang mates).
    const Pod* preemptor = &head;
    std::string node;
    for (const preemption::GangMemberTarget& t : plan.targets) {
      if (t.node == v.pod->node_name) {
        preemptor = t.member.get();
        node = t.node;
        break;
      }
    }
    const std::string message = preemption::PreemptionMessage(*preemptor, PriorityOf(head), node, v);
    absl::Status st = preemption::EvictVictim(*this, v, message);
    if (st.ok() || absl::IsNotFound(st)) {
      evicted.push_back(v);
      continue;
    }
    refused = true;  // a PodDisruptionBudget (or the API) refused: try again next attempt
    break;
  }
  if (observer_ && !evicted.empty()) observer_->PodsPreempted(head, "", evicted);
  if (refused) {
    return StrCat("Preemption for the gang stopped after ", evicted.size(), " of ",
                  plan.victims.size(), " evictions: an eviction was refused.");
  }
  // Each placed member waits for its node; the room is held for it meanwhile.
  for (const preemption::GangMemberTarget& t : plan.targets) {
    for (PodRef& m : members) {
      if (m->Key() != t.member->Key()) continue;
      Pod nominated = *m;
      nominated.nominated_node_name = t.node;
      m = std::make_shared<const Pod>(std::move(nominated));
      nominator_.Set(m, t.node);
    }
  }
  std::set<std::string> target_nodes;
  for (const preemption::GangMemberTarget& t : plan.targets) target_nodes.insert(t.node);
  for (const std::string& node : target_nodes) ClearLowerNominations(head, node);
  for (const PodRef& m : members) ReplacePendingMember(m);
  return StrCat("Preempting ", evicted.size(), " pod(s) for the gang.");
}

void Scheduler::ReplacePendingMember(const PodRef& pod) {
  absl::MutexLock lock(&gang_mu_);
  auto it = gang_of_.find(pod->Key());
  if (it == gang_of_.end()) return;
  auto g = gang_states_.find(it->second);
  if (g == gang_states_.end()) return;
  if (auto p = g->second.pending.find(pod->Key()); p != g->second.pending.end()) p->second = pod;
}

void Scheduler::ReportGang(const gang::GangId& id, gang::GangStatusUpdate update) {
  update.time = clock_->Now();
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_states_.find(id.Key());
    if (it != gang_states_.end()) {
      GangState& g = it->second;
      g.last_report = update;
      // The members' own progress, from their pod phases, decides the later phases.
      update.running = static_cast<int32_t>(g.running.size());
      update.succeeded = static_cast<int32_t>(g.succeeded.size());
      update.failed = static_cast<int32_t>(g.failed.size());
      gang::DerivePhase(update, std::max(g.min_member, update.min_member));
    }
  }
  if (gang_status_ != nullptr) gang_status_->GangStatusChanged(id, update);
}

void Scheduler::EvictRolledBack(const PodRef& pod, const std::string& message,
                                absl::Duration backoff) {
  const absl::Status st = api_ == nullptr ? absl::OkStatus() : api_->Evict(*pod, message);
  if (st.ok() && observer_) observer_->GangMemberEvicted(*pod);
  absl::MutexLock lock(&gang_mu_);
  if (st.ok() || absl::IsNotFound(st) || absl::IsFailedPrecondition(st) ||
      !gang_of_.contains(pod->Key())) {
    rollback_evictions_.erase(pod->Key());
    return;
  }
  // Refused (a PodDisruptionBudget) or failed: the member keeps its node until evicted.
  rollback_evictions_[pod->Key()] =
      PendingEviction{.pod = pod,
                      .message = message,
                      .due = clock_->Now() + backoff,
                      .backoff = std::min(backoff * 2, kMaxRollbackRetry)};
}

void Scheduler::RetryRollbackEvictions() {
  std::vector<PendingEviction> due;
  {
    absl::MutexLock lock(&gang_mu_);
    const absl::Time now = clock_->Now();
    for (const auto& [key, e] : rollback_evictions_) {
      if (e.due <= now) due.push_back(e);
    }
  }
  for (const PendingEviction& e : due) EvictRolledBack(e.pod, e.message, e.backoff);
}

void Scheduler::ExpireGangWaits() {
  std::vector<std::pair<gang::GangId, gang::GangStatusUpdate>> expired;
  {
    absl::MutexLock lock(&gang_mu_);
    const absl::Time now = clock_->Now();
    for (auto& [key, g] : gang_states_) {
      if (!g.waiting_since || !g.timeout || g.timed_out || now - *g.waiting_since < *g.timeout) {
        continue;
      }
      g.timed_out = true;
      expired.emplace_back(
          g.id, gang::GangStatusUpdate{
                    .phase = "Failed",
                    .scheduled = static_cast<int32_t>(g.placed.size()),
                    .members = static_cast<int32_t>(g.placed.size() + g.pending.size()),
                    .min_member = g.min_member,
                    .condition_status = "False",
                    .reason = "ScheduleTimeout",
                    .message = StrCat("not placed within scheduleTimeoutSeconds (",
                                      absl::ToInt64Seconds(*g.timeout), "s): ", g.last_message),
                });
    }
  }
  for (auto& [id, update] : expired) ReportGang(id, std::move(update));
}

Status Scheduler::HoldGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements,
                           size_t required) {
  for (size_t held = 0; held < placements.size(); ++held) {
    gang::MemberPlacement& m = placements[held];
    Admission admitted = Admit(fw, *m.state, *cache_, nominator_, *m.pod, m.assumed);
    Status failure = admitted.status;
    if (failure.IsWait()) {
      Unadmit(fw, *m.state, *cache_, *m.pod, m.node);
      failure = Status::Error("a Permit plugin asked a gang member to wait; a gang is "
                              "permitted as a whole");
    }
    if (failure.IsRejected() && held >= required && held > 0) {
      // The members the gang needs are held; the rest wait, as members beyond capacity do.
      placements.resize(held);
      return Status::Ok();
    }
    if (!failure.ok()) {
      ReleaseGang(fw, placements, held);
      return failure;
    }
  }
  return Status::Ok();
}

void Scheduler::ReleaseGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements,
                            size_t count) {
  for (size_t k = 0; k < count; ++k) {
    gang::MemberPlacement& m = placements[k];
    Unadmit(fw, *m.state, *cache_, *m.pod, m.node);
  }
}

void Scheduler::RunGangCycle(QueuedPodInfo info, int64_t cycle) {
  const PodRef head = info.pod;  // held for the whole cycle
  const absl::Time start = clock_->Now();
  const Framework* fw = FrameworkFor(head->scheduler_name);
  auto finish = [&](std::string_view result) {
    if (observer_) observer_->AttemptFinished(*head, result, clock_->Now() - start);
  };
  // The head was popped: it is in flight until handed back to the queue or Done.
  auto done_with_head = [&] { queue_->Done(head->Key(), head->meta.uid); };
  const GangBook::Resolution r = gangs_.Resolve(*head);
  const gang::GangSpec& spec = r.spec;
  const std::string gang_key = spec.id.Key();

  std::vector<PodRef> members;
  int32_t placed = 0;
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_states_.find(gang_key);
    if (it == gang_states_.end() || it->second.head != head->Key()) {  // superseded
      done_with_head();
      return;
    }
    GangState& g = it->second;
    if (r.membership == GangBook::Membership::kNone) {
      // No longer a gang (e.g. a basic policy): its members are ordinary pods from now on.
      done_with_head();
      for (const auto& [key, pod] : g.pending) {
        gang_of_.erase(key);
        queue_->Add(pod);
      }
      gang_states_.erase(it);
      return;
    }
    if (r.membership == GangBook::Membership::kWaiting) {
      // Its PodGroup does not exist (yet): wait quietly, and try at once when gang objects
      // change (no attempts counted, so no backoff).
      info.attempts = 0;
      queue_->AddUnschedulable(std::move(info), cycle, kCustomObjectChange);
      return;
    }
    g.timeout = spec.schedule_timeout;
    g.min_member = spec.min_member;
    for (const auto& [key, pod] : g.pending) members.push_back(pod);
    placed = static_cast<int32_t>(g.placed.size());
  }
  std::sort(members.begin(), members.end(), EarlierMember);
  const int32_t need = std::max(0, spec.min_member - placed);
  const int32_t known = placed + static_cast<int32_t>(members.size());
  if (static_cast<int32_t>(members.size()) < need) {
    // Not every member exists yet: wait quietly for the rest.
    ReportGang(spec.id, gang::GangStatusUpdate{
                            .phase = "Pending",
                            .scheduled = placed,
                            .members = known,
                            .min_member = spec.min_member,
                            .condition_status = "False",
                            .reason = "WaitingForMembers",
                            .message = StrCat(spec.id.Describe(), " has ", known, " of ",
                                              spec.min_member, " members"),
                        });
    queue_->AddUnschedulable(std::move(info), cycle, kUnassignedPodAdd | kCustomObjectChange);
    finish("unschedulable");
    return;
  }

  cache_->UpdateSnapshot(snapshot_);
  const NominatedPodMap nominated = WithoutMembers(nominator_.Pods(), members);
  gang::GangPlan plan = gang::PlanGang(gang::PlanInput{.framework = fw,
                                                       .snapshot = &snapshot_,
                                                       .members = members,
                                                       .min_to_place = need,
                                                       .min_member = spec.min_member,
                                                       .gang = spec.id.Describe(),
                                                       .topology_key = spec.topology_key,
                                                       .min_resources = spec.min_resources,
                                                       .nominated = nominated.empty() ? nullptr : &nominated});
  if (plan.feasible) {
    Status held = HoldGang(*fw, plan.placements, static_cast<size_t>(need));
    if (held.IsRejected()) {
      // A Reserve or Permit plugin refused the gang as a whole, though each member fits alone
      // (QueueQuota: the members together exceed the team's quota). Nothing is held; the gang
      // waits for what that plugin registered, like a plan that falls short.
      plan.feasible = false;
      plan.code = held.code();
      plan.message = StrCat(spec.id.Describe(), ": ", held.Message());
      plan.rejecting_plugins = {held.plugin()};
    } else if (held.ok()) {
      absl::flat_hash_set<std::string_view> nodes;  // members a plugin turned away left the plan
      for (const gang::MemberPlacement& m : plan.placements) nodes.insert(m.node);
      plan.nodes_used = static_cast<int32_t>(nodes.size());
    } else {
      const std::string message = StrCat(spec.id.Describe(), ": ", held.Message());
      for (const PodRef& m : members) {
        if (observer_) observer_->PodUnschedulable(*m, FailureKind::kError, message);
      }
      queue_->AddBackoff(std::move(info));
      finish("error");
      return;
    }
  }
  if (!plan.feasible && plan.code != Code::kError && QuotaOnly(plan.rejecting_plugins) &&
      !plan.limit_reason.empty()) {
    StrAppend(&plan.message, ": ", plan.limit_reason);  // the cluster has room; the quota not
  }
  if (!plan.feasible) {
    // Room the gang could get by evicting lower-priority pods (whole gangs among them).
    uint32_t preempt_events = 0;
    if (plan.code != Code::kError && fw->HasPostFilter()) {
      const std::string preempted = PreemptForGang(*fw, members, need, spec.topology_key);
      if (!preempted.empty()) {
        StrAppend(&plan.message, " ", preempted);
        preempt_events = kAllEvents;  // any pod deletion may be a victim leaving
      }
    }
    bool timed_out = false;
    {
      absl::MutexLock lock(&gang_mu_);
      if (auto it = gang_states_.find(gang_key); it != gang_states_.end()) {
        GangState& g = it->second;
        if (!g.waiting_since) g.waiting_since = clock_->Now();
        g.last_message = plan.message;
        timed_out = g.timed_out;
      }
    }
    const FailureKind kind = plan.code == Code::kError            ? FailureKind::kError
                             : QuotaOnly(plan.rejecting_plugins) ? FailureKind::kQuotaExceeded
                                                                 : FailureKind::kUnschedulable;
    for (const PodRef& m : members) {
      if (observer_) observer_->PodUnschedulable(*m, kind, plan.message);
    }
    ReportGang(spec.id, gang::GangStatusUpdate{
                            .phase = timed_out ? "Failed" : "Pending",
                            .scheduled = placed,
                            .members = known,
                            .min_member = spec.min_member,
                            .condition_status = "False",
                            .reason = timed_out ? "ScheduleTimeout" : "Unschedulable",
                            .message = plan.message,
                        });
    if (plan.code == Code::kError) {
      queue_->AddBackoff(std::move(info));
      finish("error");
      return;
    }
    uint32_t events = plan.rejecting_plugins.empty() ? kAllEvents : fw->EventsFor(plan.rejecting_plugins);
    queue_->AddUnschedulable(std::move(info), cycle,
                             events | preempt_events | kUnassignedPodAdd | kCustomObjectChange);
    finish("unschedulable");
    return;
  }

  const size_t n = plan.placements.size();
  bool superseded = false;
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_states_.find(gang_key);
    superseded = it == gang_states_.end() || it->second.head != head->Key();
    for (size_t i = 0; i < n && !superseded; ++i) {
      auto p = it->second.pending.find(plan.placements[i].pod->Key());
      superseded = p == it->second.pending.end() || p->second != plan.placements[i].pod;
    }
    if (!superseded) {
      GangState& g = it->second;
      for (const gang::MemberPlacement& m : plan.placements) {
        g.pending.erase(m.pod->Key());
        g.placed.insert(m.pod->Key());
      }
      g.head.clear();
      done_with_head();  // placed with the gang
      g.waiting_since.reset();
      g.timed_out = false;
      placed = static_cast<int32_t>(g.placed.size());
      // Members beyond what fitted now wait for capacity, as one entry again.
      RequeueGangHead(g, std::nullopt, false);
    }
  }
  if (superseded) {
    // A member changed or left during the cycle (Tessel's own status patch is enough): nothing
    // is held, and the gang is tried again at once with its members' newest copies.
    ReleaseGang(*fw, plan.placements, n);
    done_with_head();
    {
      absl::MutexLock lock(&gang_mu_);
      if (auto it = gang_states_.find(gang_key); it != gang_states_.end()) {
        GangState& g = it->second;
        if (g.head == head->Key()) g.head.clear();
        RequeueGangHead(g, std::nullopt, false);
      }
    }
    finish("error");
    return;
  }

  std::string message = StrCat(Plural(static_cast<int64_t>(n), "member", "members"), " placed on ",
                               Plural(plan.nodes_used, "node", "nodes"));
  if (!plan.domain.empty()) StrAppend(&message, " in ", spec.topology_key, "=", plan.domain);
  ReportGang(spec.id, gang::GangStatusUpdate{
                          .phase = "Scheduled",
                          .scheduled = placed,
                          .members = known,
                          .min_member = spec.min_member,
                          .condition_status = "True",
                          .reason = "Scheduled",
                          .message = std::move(message),
                          .domain = plan.domain,
                      });
  finish("scheduled");

  auto binding = std::make_shared<GangBinding>();
  binding->fw = fw;
  binding->id = spec.id;
  binding->members = std::move(plan.placements);
  binding->results.resize(n);
  binding->outcomes.resize(n, BindOutcome::kFailed);
  binding->left = n;
  binding->head_info = std::move(info);
  for (size_t i = 0; i < n; ++i) {
    if (bind_executor_ == nullptr) {
      BindGangMember(binding, i);
    } else {
      bind_executor_->Submit([this, binding, i] { BindGangMember(binding, i); });
    }
  }
}

void Scheduler::BindGangMember(const std::shared_ptr<GangBinding>& b, size_t i) {
  gang::MemberPlacement& m = b->members[i];
  Status st;
  BindOutcome outcome = BindOutcome::kFailed;
  for (int attempt = 0; attempt < gang_bind_attempts_; ++attempt) {
    outcome = BindAdmitted(*b->fw, *m.state, *m.pod, m.node, &st);
    if (outcome != BindOutcome::kFailed) break;  // only what may be transient is retried
  }
  b->outcomes[i] = outcome;
  b->results[i] = std::move(st);
  if (b->left.fetch_sub(1) == 1) FinishGangBinding(b);
}

void Scheduler::FinishGangBinding(const std::shared_ptr<GangBinding>& b) {
  const size_t n = b->members.size();
  size_t failed = n;
  for (size_t i = 0; i < n && failed == n; ++i) {
    if (!Placed(b->outcomes[i])) failed = i;
  }
  if (failed == n) {
    for (size_t i = 0; i < n; ++i) {
      gang::MemberPlacement& m = b->members[i];
      (void)SettleBind(*b->fw, *m.state, *cache_, *m.pod, m.node, b->outcomes[i]);
      // Bound before (AlreadyExists): not by this bind, so not reported as scheduled here.
      if (b->outcomes[i] == BindOutcome::kBound && observer_) observer_->PodScheduled(*m.pod, m.node);
    }
    return;
  }
  // A replica that may no longer write (not the leader) leaves the gang to the next leader,
  // which sees the bound members as running and plans the rest. Otherwise: roll back, so no
  // half-started gang keeps its nodes.
  const bool may_write = std::none_of(b->outcomes.begin(), b->outcomes.end(), [](BindOutcome o) {
    return o == BindOutcome::kMayNotWrite;
  });
  int64_t bound = 0;
  for (BindOutcome o : b->outcomes) bound += Placed(o);
  const std::string message =
      StrCat(b->id.Describe(), ": binding ", b->members[failed].pod->Key(), " failed (",
             b->results[failed].Message(), "); the gang was rolled back and ",
             Plural(bound, "bound member was", "bound members were"), " evicted");
  {
    absl::MutexLock lock(&gang_mu_);
    auto it = gang_states_.find(b->id.Key());
    for (size_t i = 0; i < b->members.size() && it != gang_states_.end(); ++i) {
      const std::string key = b->members[i].pod->Key();
      if (Placed(b->outcomes[i])) {
        if (may_write) {
          it->second.placed.erase(key);
          it->second.evicting.insert(key);
        }
      } else {
        it->second.placed.erase(key);
        if (gang_of_.contains(key)) it->second.pending[key] = b->members[i].pod;
      }
    }
    if (it != gang_states_.end() && may_write) {
      GangState& g = it->second;
      if (!g.head.empty() && !g.pending.contains(g.head)) g.head.clear();
      if (g.head.empty()) RequeueGangHead(g, b->head_info, /*backoff=*/true);
    }
  }
  for (size_t i = 0; i < b->members.size(); ++i) {
    gang::MemberPlacement& m = b->members[i];
    // A bound member holds its node until the rollback's eviction deletes it.
    (void)SettleBind(*b->fw, *m.state, *cache_, *m.pod, m.node, b->outcomes[i]);
    if (Placed(b->outcomes[i]) && may_write) EvictRolledBack(m.pod, message, kFirstRollbackRetry);
    if (may_write && observer_) observer_->PodUnschedulable(*m.pod, FailureKind::kBindFailed, message);
  }
  if (!may_write) return;
  ReportGang(b->id, gang::GangStatusUpdate{.phase = "Pending",
                                           .condition_status = "False",
                                           .reason = "BindFailed",
                                           .message = message});
  queue_->OnClusterEvent(kAssignedPodDelete);
}

}  // namespace tessel
