// The Scheduler: construction, the loop, the framework Handle, and one pod's scheduling cycle
// (kube-scheduler's scheduler.go and schedule_one.go; scheduler.h has the layout of the core).
// The cycle: PreFilter, Filter (the nominated node first, then the decision cache, then every
// node), PostFilter when nothing fits, Score, then PreAssume, Assume, Reserve and Permit on the
// chosen node. SchedulingCycle returns a CycleResult; every failure, wherever it happened, goes
// to RecordFailure.
#include "scheduler/core/scheduler.h"

#include <algorithm>

#include "scheduler/api/uid.h"
#include "scheduler/core/admission.h"
#include "scheduler/framework/fit_error.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/util/strings.h"

namespace tessel {

std::string_view AttemptResultName(AttemptResult result) {
  switch (result) {
    case AttemptResult::kScheduled: return "scheduled";
    case AttemptResult::kUnschedulable: return "unschedulable";
    case AttemptResult::kError: return "error";
  }
  return "error";
}

// The queue as the gang tracker puts heads into it.
class Scheduler::TrackerQueue final : public gang::GangQueue {
 public:
  explicit TrackerQueue(SchedulingQueue* queue) : queue_(queue) {}
  void Add(PodRef head) override { queue_->Add(std::move(head)); }
  void Update(PodRef head) override { queue_->Update(std::move(head)); }
  void Delete(const std::string& key) override { queue_->Delete(key); }
  bool Contains(const std::string& key) const override { return queue_->Contains(key); }
  void AddBackoff(QueuedPodInfo info) override { queue_->AddBackoff(std::move(info)); }

 private:
  SchedulingQueue* queue_;
};

Scheduler::Scheduler(SchedulerParams p)
    : registry_(p.registry),
      cache_(p.cache),
      clock_(p.clock),
      api_(p.api),
      observer_(p.observer),
      bind_executor_(p.bind_executor),
      seed_(p.seed),
      gang_status_(p.gang_status),
      provisioner_(p.provisioner),
      gang_bind_attempts_(std::max(1, p.gang_bind_attempts)) {}

Scheduler::~Scheduler() = default;

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::New(SchedulerParams params) {
  std::unique_ptr<Scheduler> s(new Scheduler(params));
  std::vector<ProfileConfig> profiles = params.config->profiles;
  if (profiles.empty()) profiles.push_back(*params.defaults);
  for (const ProfileConfig& profile : profiles) {
    ProfileConfig resolved = ResolveProfile(profile, *params.defaults);
    auto fw = Framework::New(*params.registry, resolved, *s,
                             FrameworkOptions{.parallelism = params.config->parallelism,
                                              .reference = params.reference_evaluation});
    if (!fw.ok()) return fw.status();
    s->profiles_.push_back(*std::move(fw));
  }
  // All profiles share one queue, so they must agree on its order (as in kube-scheduler).
  const Framework& first = *s->profiles_.front();
  for (const auto& fw : s->profiles_) {
    if (fw->queue_sort().Name() != first.queue_sort().Name()) {
      return absl::InvalidArgumentError(
          StrCat("profiles \"", first.scheduler_name(), "\" and \"", fw->scheduler_name(),
                 "\" use different queueSort plugins; all profiles must use the same"));
    }
  }
  const QueueSortPlugin* sort = &first.queue_sort();
  NextPodChoice next;
  if (PendingOrderPlugin* order = first.pending_order()) {
    next.group_of = [order](const Pod& pod) { return order->PendingGroupOf(pod); };
    // Pops run on the scheduling thread, between cycles: the order reads the usage the snapshot
    // shows, brought up to date first when the choice needs it.
    Scheduler* self = s.get();
    next.choose = [self, order](std::span<const QueuedPodInfo* const> heads) {
      return order->ChooseNext(heads, [self] { self->RefreshSnapshot(); });
    };
  }
  s->queue_ = std::make_unique<SchedulingQueue>(
      params.clock,
      [sort](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort->Less(a, b); },
      params.queue_options, std::move(next));
  s->tracker_queue_ = std::make_unique<TrackerQueue>(s->queue_.get());
  s->tracker_ = std::make_unique<gang::GangTracker>(&s->gangs_, s->tracker_queue_.get());
  return s;
}

const Framework* Scheduler::FrameworkFor(std::string_view scheduler_name) const {
  for (const auto& fw : profiles_) {
    if (fw->scheduler_name() == scheduler_name) return fw.get();
  }
  return nullptr;
}

std::vector<std::string> Scheduler::ProfileNames() const {
  std::vector<std::string> out;
  for (const auto& fw : profiles_) out.push_back(fw->scheduler_name());
  return out;
}

// --- Handle ---

std::optional<int32_t> Scheduler::PriorityClassValue(std::string_view name) const {
  return priority_classes_.Value(name);
}

int32_t Scheduler::PriorityOf(const Pod& pod) const { return priority_classes_.PriorityOf(pod); }

int32_t Scheduler::PriorityFloor() const { return priority_classes_.Floor(); }

std::vector<PodDisruptionBudget> Scheduler::PodDisruptionBudgets() const { return budgets_.All(); }

std::string Scheduler::GangKeyOf(const Pod& pod) const {
  const gang::GangBook::Resolution r = gangs_.Resolve(pod);
  return r.membership == gang::GangBook::Membership::kGang ? r.spec.id.Key() : std::string();
}

std::optional<PodGroupClaims> Scheduler::PodGroupClaimsOf(const Pod& pod) const {
  if (pod.scheduling_group.empty()) return std::nullopt;
  return gangs_.FindPodGroupClaims(pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_,
                                   pod.scheduling_group);
}

void Scheduler::PodEvicted(const Pod& pod) {
  cache_->MarkTerminating(pod.Key(), pod.meta.uid, clock_->Now());
}

bool Scheduler::PodEnded(const Pod& pod) const { return queue_->Ended(pod.Key(), pod.meta.uid); }

// --- The loop ---

void Scheduler::Housekeeping() {
  // Assumed pods are not expired here: they are held until the informer confirms them or the
  // pod is deleted (see cache.h).
  ExpireWaitingPods();
  RetryRollbackEvictions();
  disruptions_.Prune(clock_->Now() - preemption::kDisruptionMemory);
  for (const auto& fw : profiles_) {
    for (TimekeeperPlugin* keeper : fw->timekeepers()) keeper->Tick(clock_->Now(), [this] { RefreshSnapshot(); });
  }
  std::vector<std::function<void()>> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(loop_tasks_);
  }
  for (auto& task : tasks) task();
}

void Scheduler::RunOnLoop(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  loop_tasks_.push_back(std::move(task));
}

bool Scheduler::ScheduleOne() {
  Housekeeping();
  auto popped = queue_->Pop();
  if (!popped) return false;
  RunCycle(InFlightPod(*queue_, *std::move(popped)));
  return true;
}

bool Scheduler::ScheduleOneWait(absl::Duration timeout) {
  Housekeeping();
  auto popped = queue_->PopWait(timeout);
  if (!popped) return false;
  RunCycle(InFlightPod(*queue_, *std::move(popped)));
  return true;
}

int64_t Scheduler::Run(const std::atomic<bool>& stop, const RunOptions& options) {
  int64_t cycles = 0;
  while (!stop.load()) {
    if (options.max_cycles > 0 && cycles >= options.max_cycles) break;
    if (options.may_schedule && !options.may_schedule()) {
      // Not allowed to write (leadership is being lost): pop nothing, look again shortly.
      absl::SleepFor(std::min(options.wait, absl::Milliseconds(100)));
      continue;
    }
    const bool ran = options.wait > absl::ZeroDuration() ? ScheduleOneWait(options.wait)
                                                         : ScheduleOne();
    if (ran) {
      ++cycles;
      continue;
    }
    if (options.on_idle) {
      if (!options.on_idle()) break;
    } else if (options.wait <= absl::ZeroDuration()) {
      break;
    }
  }
  return cycles;
}

std::vector<PodRef> Scheduler::PendingPods() const {
  std::vector<PodRef> out = queue_->PendingPods();
  StringSet seen;
  for (const PodRef& p : out) seen.insert(p->Key());
  for (PodRef& p : tracker_->PendingMembers()) {
    if (seen.insert(p->Key()).second) out.push_back(std::move(p));
  }
  return out;
}

std::optional<absl::Time> Scheduler::NextWakeup() const {
  std::optional<absl::Time> next = queue_->NextBackoffExpiry();
  for (std::optional<absl::Time> t : {waiting_.EarliestDeadline(), tracker_->NextWakeup()}) {
    if (t.has_value() && (!next.has_value() || *t < *next)) next = t;
  }
  return next;
}

std::optional<absl::Time> Scheduler::NextUnschedulableRetry() const { return queue_->NextUnschedulableRetry(); }

// --- One pod's scheduling cycle ---
namespace {

// The nodes that hold nominated pods, for the decision cache: each asked whether `pod` fits
// beside the pods nominated there (the references must outlive the choice).
DecisionCache::HeldNodes HeldNodesFor(const Framework& fw, const CycleState& state, const Pod& pod,
                                      const Snapshot& snapshot, const Nominator::View& nominations) {
  DecisionCache::HeldNodes held;
  held.reuse = true;  // unless the pod is nominated itself (it does not go before itself)
  for (const auto& [node_name, pods] : nominations.pods) {
    held.positions.push_back(snapshot.PositionOf(node_name));
    held.versions.push_back(nominations.versions.at(node_name));
    for (const PodRef& p : pods) {
      if (p->SameKey(pod)) held.reuse = false;
    }
  }
  held.priority = pod.PriorityValue();
  held.fits_held = [&fw, &state, &pod, &nominations](const NodeInfo& node) {
    return fw.FitsBesideNominatedPods(state, pod, node, &nominations.pods);
  };
  held.why_held = [&fw, &state, &pod, &nominations](const NodeInfo& node) {
    return fw.RunFiltersWithNominatedPods(state, pod, node, &nominations.pods);
  };
  return held;
}

// Whether waiting for quota can help: more quota would lift some node's rejection.
bool QuotaMayHelp(const Framework& fw, const NodeStatusMap& rejected) {
  return std::any_of(rejected.begin(), rejected.end(), [&](const auto& entry) { return fw.QuotaMayLift(entry.second); });
}

AttemptResult ResultOf(const Status& status) {
  return status.code() == Code::kError ? AttemptResult::kError : AttemptResult::kUnschedulable;
}

}  // namespace

void Scheduler::RunCycle(InFlightPod pod) {
  // Held for the whole cycle: the token hands its copy to the queue, where an informer update
  // may replace and free it before the cycle's last read.
  const PodRef ref = pod.ref();
  const Framework* fw = FrameworkFor(ref->scheduler_name);
  std::optional<Cache::HeldPod> held = cache_->Held(ref->Key());
  if (fw == nullptr || (held.has_value() && SameUid(held->uid, ref->meta.uid))) {
    return;  // not ours, or already placed: never again (the token says Done)
  }
  if (tracker_->IsHead(*ref)) return RunGangCycle(std::move(pod));
  const absl::Time start = clock_->Now();
  cache_->UpdateSnapshot(snapshot_);
  auto state = std::make_shared<CycleState>();
  CycleResult result = SchedulingCycle(*fw, *state, *ref, pod);
  if (result.status.ok()) {
    result.status = AssumeAndPermit(*fw, state, pod, result.node);
    if (!result.status.ok() && !result.status.IsWait()) {  // refused on the chosen node
      result.diagnosis = {.message = result.status.Message(), .rejecting_plugins = {result.status.plugin()}};
    }
  }
  if (result.status.IsWait()) return ReportAttempt(*ref, AttemptResult::kScheduled, start);
  if (!result.status.ok()) {
    RecordFailure(*fw, std::move(pod), result);
    return ReportAttempt(*ref, ResultOf(result.status), start);
  }
  ReportAttempt(*ref, AttemptResult::kScheduled, start);
  StartBinding(*fw, std::move(state), std::move(pod), std::move(result.node));
}

Scheduler::CycleResult Scheduler::SchedulingCycle(const Framework& fw, CycleState& state, const Pod& pod,
                                                  InFlightPod& in_flight) {
  auto failed = [](Status status, Diagnosis diagnosis) {
    return CycleResult{.status = std::move(status), .diagnosis = std::move(diagnosis)};
  };
  const Status pre = fw.RunPreFilter(state, pod);
  if (!pre.ok()) {
    return failed(pre, {.message = FormatPreFilterError(snapshot_.size(), pre),
                        .rejecting_plugins = {pre.plugin()},
                        .kind = fw.RejectedOnlyByQuota({pre.plugin()}) ? FailureKind::kQuotaExceeded
                                                                       : FailureKind::kUnschedulable});
  }
  DecisionCache::Choice cached;
  FilterOutcome outcome = FindNodes(fw, state, pod, cached);
  if (cached.kind == DecisionCache::Choice::Kind::kChosen) return CycleResult{.node = cached.node->name()};
  if (cached.kind == DecisionCache::Choice::Kind::kError) {
    std::string message(cached.error.message());
    return failed(Status::Error(message), {.message = message});
  }
  if (outcome.feasible.empty()) {
    // kNoFit: no node fits, and the cache kept each node's rejection (as Filter gave it); its
    // per-shape histogram summarises them without walking the nodes.
    const bool no_fit_cached = cached.kind == DecisionCache::Choice::Kind::kNoFit;
    const NodeStatusMap& rejected = no_fit_cached ? *cached.rejected : outcome.rejected;
    FitError fit = no_fit_cached ? SummarizeFitError(snapshot_.size(), *cached.histogram)
                                 : SummarizeFitError(snapshot_.size(), rejected);
    if (fit.error != nullptr) {
      return failed(*fit.error, {.message = fit.error->Message(), .rejecting_plugins = {fit.error->plugin()}});
    }
    CycleResult result = failed(Status::Unschedulable(""), {.message = std::move(fit.message),
                                                            .rejecting_plugins = std::move(fit.rejecting_plugins)});
    if (fw.HasPostFilter()) PostFilterByTier(fw, state, in_flight, rejected, result);
    if (result.status.code() == Code::kError) return result;
    // Only the queue's quota said no, and more quota would help: not a capacity shortfall, so
    // not reported as Unschedulable.
    if (fw.RejectedOnlyByQuota(result.diagnosis.rejecting_plugins) && QuotaMayHelp(fw, rejected)) {
      result.diagnosis.kind = FailureKind::kQuotaExceeded;
    }
    result.status = Status::Unschedulable(result.diagnosis.message);
    return result;
  }
  // With strict tiers that preempt first (a flavored queue's whenCanPreempt: Preempt), a pod
  // frees room on a lower tier by preemption (no moves, no reservation: docs/defrag.md) before
  // it takes a higher tier's.
  // It waits for the victims of such a preemption rather than take the higher tier meanwhile.
  if (const TierChoice choice = ChooseTier(state, LowestTier(state, outcome.feasible), {snapshot_.Get(pod.nominated_node_name)});
      choice.kind != TierChoice::Kind::kTake && fw.HasPostFilter()) {
    if (choice.kind == TierChoice::Kind::kWaitForVictims) {
      return failed(Status::Unschedulable(""),
                    {.message = WaitingOnEarlierTier(*choice.waiting_on), .wake_on_any_event = true});
    } else {
      CycleResult preempting = failed(Status::Unschedulable(""), {.message = "Nodes of the pod's earlier tiers are full."});
      if (PostFilterByTier(fw, state, in_flight, outcome.rejected, preempting, choice.below)) {
        preempting.status = Status::Unschedulable(preempting.diagnosis.message);
        return preempting;
      }
    }
  }
  absl::StatusOr<std::string> chosen = SelectNode(fw, state, pod, outcome.feasible);
  if (!chosen.ok()) {
    std::string message(chosen.status().message());
    return failed(Status::Error(message), {.message = message});
  }
  return CycleResult{.node = *std::move(chosen)};
}

FilterOutcome Scheduler::FindNodes(const Framework& fw, CycleState& state, const Pod& pod,
                                   DecisionCache::Choice& cached) {
  // Room that preemptions freed for other pods is theirs, unless this pod is more important.
  const std::shared_ptr<const Nominator::View> nominations = nominator_.empty() ? nullptr : nominator_.Snapshot();
  const NominatedPodMap* nominated_pods =
      nominations == nullptr || nominations->pods.empty() ? nullptr : &nominations->pods;
  // A nominated node (set by an earlier preemption) is tried first: its victims are leaving.
  FilterOutcome outcome;
  if (const NodeInfo* nominated = pod.nominated_node_name.empty() ? nullptr : snapshot_.Get(pod.nominated_node_name)) {
    if (fw.RunFiltersWithNominatedPods(state, pod, *nominated, nominated_pods).ok()) {
      outcome.feasible.push_back(nominated);
      return outcome;
    }
  }
  // The decision cache answers as the full evaluation below would, or leaves it to it. With
  // nominations, a node fits only if it fits as it is and with the pods nominated to it: the
  // nodes that hold nominated pods are asked again with them.
  std::optional<DecisionCache::HeldNodes> held;
  if (nominated_pods != nullptr) held = HeldNodesFor(fw, state, pod, snapshot_, *nominations);
  cached = ChooseCachedByTier(fw, state, pod, held.has_value() ? &*held : nullptr);
  if (cached.kind == DecisionCache::Choice::Kind::kFallback) {
    outcome = fw.FindFeasibleNodes(state, pod, snapshot_.nodes(), nominated_pods);
  }
  return outcome;
}

DecisionCache::Choice Scheduler::ChooseCachedByTier(const Framework& fw, CycleState& state, const Pod& pod,
                                                   const DecisionCache::HeldNodes* held) {
  // A pod with strict tiers takes the first tier with a feasible node, scored within it
  // (SelectNode), unless ChooseTier sends it to preempt first: the cache is asked tier by tier,
  // lowest first, and what it cannot settle so is left to the full evaluation (a pod that fits in
  // no tier gets every node's own rejection there).
  const std::vector<std::optional<int64_t>> tiers = TiersToChooseIn(state);
  for (const std::optional<int64_t> tier : tiers) {
    DecisionCache::Choice choice = fw.ChooseCached(state, pod, snapshot_, held, tier);
    if (!tier.has_value()) return choice;
    if (choice.kind == DecisionCache::Choice::Kind::kNoFit) continue;
    // On the lowest tier there is nothing below to preempt on or wait for.
    if (choice.kind == DecisionCache::Choice::Kind::kChosen && tier != tiers.front() &&
        ChooseTier(state, tier, {snapshot_.Get(pod.nominated_node_name)}).kind != TierChoice::Kind::kTake) {
      return {};
    }
    return choice;
  }
  return {};
}

void Scheduler::PostFilter(const Framework& fw, CycleState& state, InFlightPod& pod,
                           const NodeStatusMap& rejected, CycleResult& result, PostFilterOptions options) {
  const PodRef preemptor = pod.ref();
  PostFilterResult pf = fw.RunPostFilter(state, *preemptor, rejected, options);
  if (!pf.victims.empty() && observer_) {
    observer_->PodsPreempted(*preemptor, pf.status.ok() ? pf.nominated_node : std::string(), pf.victims);
  }
  if (pf.status.code() == Code::kError) {
    result.status = pf.status;
    result.diagnosis = {.message = pf.status.Message(), .rejecting_plugins = {pf.status.plugin()}};
    return;
  }
  if (pf.nomination == PostFilterResult::Nomination::kOverride) {
    ApplyNomination(pf.status.ok() ? pf.nominated_node : std::string(), pod);
  }
  if (pf.status.ok() && !pf.nominated_node.empty()) {
    // Victims are being evicted; the pod retries once they are gone (any pod deletion may be a
    // victim leaving).
    StrAppend(&result.diagnosis.message, " Preempting pods on node ", pf.nominated_node, ".");
    result.diagnosis.rejecting_plugins.clear();
    result.diagnosis.wake_on_any_event = true;
  }
}

bool Scheduler::PostFilterByTier(const Framework& fw, CycleState& state, InFlightPod& pod,
                                 const NodeStatusMap& rejected, CycleResult& result,
                                 std::optional<int64_t> below) {
  // The tiers in the one order every way of making room walks (node_tiers.h TierWalk).
  const TierWalk walk(state, snapshot_.nodes(), below);
  if (walk.tiers().empty()) {  // tiers below none, or a queue whose flavors hold no node
    if (below.has_value()) return false;
    PostFilter(fw, state, pod, rejected, result);
    return result.diagnosis.wake_on_any_event;
  }
  if (walk.tiered()) {
    // Each tier's run sees the other tiers' nodes as unresolvable, its nominated node among
    // them: a pod whose earlier victims still leave that node waits for them, whatever its tier.
    preemption::Context eligibility;
    eligibility.snapshot = &snapshot_;
    if (std::string why; !preemption::EligibleToPreempt(eligibility, *pod.ref(), rejected, &why)) {
      // The plugins are still told once, over every node: none makes room while the victims
      // leave (each checks this same eligibility), but Reservation lets go of a node the pod's
      // quota no longer admits, as for an untiered pod.
      PostFilter(fw, state, pod, rejected, result);
      StrAppend(&result.diagnosis.message, " preemption: ", why);
      return false;
    }
  }
  NodeStatusMap part;
  for (const TierWalk::Tier& tier : walk.tiers()) {
    PostFilter(fw, state, pod, walk.RejectionsWithin(tier, snapshot_.nodes(), rejected, part), result,
               {.preemption_only = below.has_value()});
    if (result.status.code() == Code::kError || result.diagnosis.wake_on_any_event) break;
  }
  return result.diagnosis.wake_on_any_event;
}

absl::StatusOr<std::string> Scheduler::SelectNode(const Framework& fw, CycleState& state, const Pod& pod,
                                                  const std::vector<const NodeInfo*>& all_feasible) {
  // A pod with strict tiers takes the lowest tier that has a feasible node (node_tiers.h).
  std::vector<const NodeInfo*> first_tier;
  const std::vector<const NodeInfo*>& feasible = FirstTier(state, all_feasible, first_tier);
  if (feasible.size() == 1) return feasible.front()->name();
  if (Status ps = fw.RunPreScore(state, pod, feasible); !ps.ok()) return absl::InternalError(ps.Message());
  absl::StatusOr<NodeScoreList> scores = fw.RunScore(state, pod, feasible);
  if (!scores.ok()) return scores.status();
  const NodeScore* best = &scores->front();
  for (const NodeScore& s : *scores) {
    if (s.score > best->score) best = &s;  // ties keep the first node in name order
  }
  return best->name;
}

Status Scheduler::AssumeAndPermit(const Framework& fw, std::shared_ptr<CycleState> state, InFlightPod& pod,
                                  const std::string& node) {
  const PodRef ref = pod.ref();
  Pod assumed = *ref;
  assumed.node_name = node;
  if (const NodeInfo* target = snapshot_.Get(node); target != nullptr) {
    if (Status st = fw.RunPreAssume(*state, assumed, *target); !st.ok()) return st;
  }
  Admission admitted = Admit(fw, *state, *cache_, nominator_, *ref, std::move(assumed));
  if (admitted.status.ok() || admitted.status.IsWait()) ClearOutgrownNominations(*state);
  if (admitted.status.IsWait()) {
    waiting_.Add(ref->Key(), {.fw = &fw,
                              .state = std::move(state),
                              .held = std::move(pod),
                              .node = node,
                              .deadline = clock_->Now() + admitted.timeout});
    // Deleted during the cycle, before it waited: let go at once.
    if (queue_->Ended(ref->Key(), ref->meta.uid)) RejectWaitingPod(ref->Key(), "deleted");
  }
  // Not admitted: nothing is held (and it was held only during this cycle: nobody to wake).
  return admitted.status;
}

void Scheduler::RecordFailure(const Framework& fw, InFlightPod pod, const CycleResult& result) {
  if (pod.ended()) {
    // Deleted (or replaced, or bound elsewhere) during the attempt: no event, no retry, and no
    // room held for it.
    nominator_.Remove(pod.pod().Key());
    return;
  }
  const Diagnosis& d = result.diagnosis;
  const bool error = result.status.code() == Code::kError;
  // A pod marked for provisioning, short only of capacity and not waiting on its preemption's
  // victims, asks for nodes (docs/provisioning.md) and says so.
  std::optional<provisioning::Outcome> asked;
  if (provisioner_ != nullptr && !error &&
      (d.kind == FailureKind::kUnschedulable || d.kind == FailureKind::kQuotaExceeded) && !d.wake_on_any_event &&
      pod.pod().nominated_node_name.empty()) {
    const Pod& p = pod.pod();
    const std::shared_ptr<const QueueDirectory> queues = queue_store_.directory();
    asked = provisioning::AskIfShort(
        *provisioner_, {.key = provisioning::PodKey(p.Key()),
                        .head = &p,
                        .queues = queues.get(),
                        .queue = queues->QueueFor(p).queue,
                        .snapshot = &snapshot_,
                        .owner = {.api_version = "v1", .kind = "Pod", .name = p.meta.name, .uid = p.meta.uid},
                        .members = {&p},
                        .rejecting_plugins = &d.rejecting_plugins});
  }
  if (observer_) {
    if (asked.has_value()) {
      observer_->PodUnschedulable(pod.pod(), FailureKind::kWaitingForProvisioning, StrCat(d.message, "; ", asked->message));
    } else {
      observer_->PodUnschedulable(pod.pod(), error ? FailureKind::kError : d.kind, d.message);
    }
  }
  if (error) return pod.Backoff();
  // It waits for what its rejecting plugins registered (with hints by room), unless any event
  // may help or a rejection was not a plugin's.
  uint32_t events = kAllEvents;
  uint32_t hinted = 0;
  Resources need;
  const std::vector<std::string>& plugins = d.rejecting_plugins;
  if (!d.wake_on_any_event && !plugins.empty() &&
      std::none_of(plugins.begin(), plugins.end(), [](const std::string& p) { return p.empty(); })) {
    events = fw.EventsFor(plugins);
    hinted = fw.EventsHintedByRoom(plugins);
    if (hinted != 0) need = fw.RoomNeed(plugins, pod.pod());
  }
  if (asked.has_value()) events |= kCustomObjectChange | kNodeAdd;  // its request changed, or its nodes came
  if (observer_) observer_->PodRejected(pod.pod(), plugins);
  pod.Unschedulable(events, hinted, std::move(need));
}

void Scheduler::ApplyNomination(const std::string& node, InFlightPod& pod) {
  if (node != pod.pod().nominated_node_name) {
    Pod nominated = pod.pod();
    nominated.nominated_node_name = node;
    pod.Replace(std::make_shared<const Pod>(std::move(nominated)));
  }
  nominator_.Set(pod.ref(), node);
  if (!node.empty()) ClearLowerNominations(pod.pod(), node);
}

void Scheduler::ClearLowerNominations(const Pod& preemptor, const std::string& node) {
  const NominatedPodMap nominated = nominator_.Pods();
  auto on_node = nominated.find(node);
  if (on_node == nominated.end()) return;
  const int32_t priority = PriorityOf(preemptor);
  for (const PodRef& p : on_node->second) {
    if (p->Key() == preemptor.Key() || PriorityOf(*p) >= priority) continue;
    ClearNomination(*p);
  }
}

void Scheduler::ClearOutgrownNominations(const CycleState& state) {
  const auto* outgrown = state.ReadValue<std::vector<std::string>>(kOutgrownNominationsKey);
  if (outgrown == nullptr) return;
  const NominatedPodMap nominated = nominator_.Pods();
  for (const auto& [node, pods] : nominated) {
    for (const PodRef& p : pods) {
      if (std::find(outgrown->begin(), outgrown->end(), p->Key()) != outgrown->end()) ClearNomination(*p);
    }
  }
}

void Scheduler::ClearNomination(const Pod& pod) {
  // The nominator's copy is the latest one observed (OnPodObserved refreshes it), so it may
  // replace the queued copy: the next attempt does not try the lost node first, and a failure
  // does not write the nomination back.
  Pod cleared = pod;
  cleared.nominated_node_name.clear();
  PodRef ref = std::make_shared<const Pod>(std::move(cleared));
  nominator_.Set(ref, "");
  queue_->Update(ref);
  tracker_->ReplacePending(ref);  // a gang member: the copy its gang's next cycle reads
  if (observer_) observer_->NominationCleared(*ref);
}

void Scheduler::ReportAttempt(const Pod& pod, AttemptResult result, absl::Time start) {
  if (observer_) observer_->AttemptFinished(pod, result, clock_->Now() - start);
}

}  // namespace tessel
