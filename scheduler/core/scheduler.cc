// The scheduling cycle and binding cycle.
#include "scheduler/core/scheduler.h"

#include "scheduler/api/uid.h"
#include "scheduler/core/admission.h"
#include "scheduler/framework/binding.h"
#include "scheduler/framework/fit_error.h"
#include "scheduler/util/strings.h"

namespace tessel {

Scheduler::Scheduler(SchedulerParams p)
    : registry_(p.registry),
      cache_(p.cache),
      clock_(p.clock),
      api_(p.api),
      observer_(p.observer),
      bind_executor_(p.bind_executor),
      seed_(p.seed),
      gang_status_(p.gang_status),
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
  s->queue_ = std::make_unique<SchedulingQueue>(
      params.clock,
      [sort](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort->Less(a, b); },
      params.queue_options);
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

std::optional<int32_t> Scheduler::PriorityClassValue(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = priority_classes_.find(name);
  if (it == priority_classes_.end()) return std::nullopt;
  return it->second.value;
}

const PriorityClass* Scheduler::ClassFor(const Pod& pod) const {
  if (!pod.priority_class_name.empty()) {
    auto it = priority_classes_.find(pod.priority_class_name);
    if (it != priority_classes_.end()) return &it->second;
    // Admission refuses a pod naming an unknown class; a snapshot may hold one anyway: it
    // gets the default, as a pod without a class would.
  }
  const PriorityClass* pc = nullptr;
  for (const auto& [name, c] : priority_classes_) {
    if (c.global_default && (pc == nullptr || c.value > pc->value)) pc = &c;
  }
  return pc;
}

void Scheduler::ResolvePriority(Pod& pod) const {
  absl::MutexLock lock(&mu_);
  const PriorityClass* pc = ClassFor(pod);
  if (pc == nullptr) return;
  if (!pod.priority.has_value()) pod.priority = pc->value;
  if (!pod.preemption_policy.has_value()) pod.preemption_policy = pc->preemption_policy;
}

int32_t Scheduler::PriorityOf(const Pod& pod) const {
  if (pod.priority.has_value()) return *pod.priority;
  absl::MutexLock lock(&mu_);
  const PriorityClass* pc = ClassFor(pod);
  return pc == nullptr ? 0 : pc->value;
}

int32_t Scheduler::PriorityFloor() const {
  absl::MutexLock lock(&mu_);
  int32_t floor = 0;
  for (const auto& [name, c] : priority_classes_) floor = std::min(floor, c.value);
  return floor;
}

std::vector<PodDisruptionBudget> Scheduler::PodDisruptionBudgets() const {
  absl::MutexLock lock(&mu_);
  std::vector<PodDisruptionBudget> out;
  out.reserve(pdbs_.size());
  for (const auto& [key, pdb] : pdbs_) out.push_back(pdb);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.meta.namespace_, a.meta.name) < std::tie(b.meta.namespace_, b.meta.name);
  });
  return out;
}

void Scheduler::OnPodDisruptionBudget(PodDisruptionBudget pdb) {
  absl::MutexLock lock(&mu_);
  const std::string key = StrCat(pdb.meta.namespace_, "/", pdb.meta.name);
  pdbs_[key] = std::move(pdb);
}

void Scheduler::OnPodDisruptionBudgetDelete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  pdbs_.erase(key);
}

std::string Scheduler::GangKeyOf(const Pod& pod) const {
  const gang::GangBook::Resolution r = gangs_.Resolve(pod);
  return r.membership == gang::GangBook::Membership::kGang ? r.spec.id.Key() : std::string();
}

void Scheduler::PodEvicted(const Pod& pod) {
  cache_->MarkTerminating(pod.Key(), pod.meta.uid, clock_->Now());
}

bool Scheduler::PodEnded(const Pod& pod) const { return queue_->Ended(pod.Key(), pod.meta.uid); }

bool Scheduler::Ours(const Pod& pod) const { return FrameworkFor(pod.scheduler_name) != nullptr; }

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

}  // namespace

void Scheduler::OnPodAdd(Pod pod) { OnPodObserved(std::move(pod)); }

void Scheduler::OnPodUpdate(Pod pod) { OnPodObserved(std::move(pod)); }

void Scheduler::OnPodObserved(Pod pod) {
  ResolvePriority(pod);
  const std::string key = pod.Key();
  const std::string uid = pod.meta.uid;
  std::optional<Cache::HeldPod> held = cache_->Held(key);
  if (held.has_value() && !SameUid(held->uid, uid)) {
    // Same name, new pod (a StatefulSet re-created it): the old one is gone with all it held.
    EndPod(key, held->uid);
    held.reset();
  }
  if (!pod.node_name.empty() || pod.IsTerminal()) {
    // Bound (by us or anyone) or finished: it is the cache's, and never queued again.
    nominator_.Remove(key);
    EndGated(key);
    if (pod.node_name.empty()) {
      ForgetGangMember(key);
    } else {
      NoteGangMemberPlaced(pod);
    }
    queue_->Delete(key, uid);
    const bool releases = pod.IsTerminal();
    const std::string node = pod.node_name;
    cache_->AddOrUpdatePod(std::move(pod));
    if (!releases) {
      queue_->OnClusterEvent(kAssignedPodAdd);
    } else {
      NotifyPodLeft(node);
    }
    return;
  }
  if (!Ours(pod)) return;
  if (pod.meta.deletion_timestamp.has_value()) {
    nominator_.Remove(key);
    EndGated(key);
    ForgetGangMember(key);
    queue_->Delete(key, uid);
    return;
  }
  // Only a pod the apiserver shows unbound and the core does not hold (assumed, or bound per an
  // informer that is ahead of this copy) enters the queue; the queue keeps in-flight pods out.
  if (held.has_value()) return;
  if (!pod.scheduling_gates.empty()) {
    queue_->Delete(key, uid);
    bool first_seen = false;
    {
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = gated_.try_emplace(key, uid);
      first_seen = inserted || it->second != uid;
      it->second = uid;
    }
    if (first_seen && observer_) observer_->PodSchedulingGated(pod);
    return;
  }
  EndGated(key);  // its gates are gone
  // Its nomination: what the API server shows, else the one this scheduler made and has not
  // seen written back yet (an update may arrive before the status patch lands).
  pod.nominated_node_name = nominator_.Observe(key, pod.nominated_node_name);
  auto ref = std::make_shared<const Pod>(std::move(pod));
  nominator_.Set(ref, ref->nominated_node_name);
  if (AdmitGangMember(ref)) {  // the gang's head stands for it in the queue
    queue_->OnClusterEvent(kUnassignedPodAdd);
    return;
  }
  if (queue_->Add(std::move(ref)) == SchedulingQueue::AddResult::kQueued) {
    queue_->OnClusterEvent(kUnassignedPodAdd);
  }
}

bool Scheduler::EndGated(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return gated_.erase(key) > 0;
}

void Scheduler::EndPod(const std::string& key, const std::string& uid) {
  nominator_.Remove(key);
  EndGated(key);
  ForgetGangMember(key);
  queue_->Delete(key, uid);  // an in-flight pod is marked ended: it is not requeued
  std::optional<WaitingPod> waiting;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(key);
    if (it != waiting_.end() && SameUid(it->second.info.pod->meta.uid, uid)) {
      waiting = std::move(it->second);
      waiting_.erase(it);
    }
  }
  if (waiting.has_value()) {
    UndoAssume(*waiting->fw, *waiting->state, waiting->info, waiting->node);
    queue_->Done(key, waiting->info.pod->meta.uid);
  }
  const std::optional<Cache::HeldPod> held = cache_->Held(key);
  cache_->RemovePod(key, uid);
  if (held.has_value() && !cache_->Held(key).has_value()) NotifyPodLeft(held->node);
}

void Scheduler::NotifyPodLeft(const std::string& node) {
  // With the room it left: parked pods that only room can help and that it cannot hold stay.
  const std::optional<Resources> room = node.empty() ? std::nullopt : cache_->RoomOn(node);
  queue_->OnClusterEvent(kAssignedPodDelete, room.has_value() ? &*room : nullptr);
}

void Scheduler::OnPodDelete(const std::string& key, const std::string& uid) { EndPod(key, uid); }

void Scheduler::OnPodUndecodable(const Pod& identity, const absl::Status& problem) {
  if (!identity.node_name.empty() || identity.meta.name.empty() || !Ours(identity)) return;
  const std::string key = identity.Key();
  nominator_.Remove(key);
  EndGated(key);
  ForgetGangMember(key);
  queue_->Delete(key, identity.meta.uid);
  if (observer_) {
    observer_->PodUnschedulable(identity, FailureKind::kError,
                                StrCat("the pod cannot be scheduled as written: ", ToStd(problem.message())));
  }
}

void Scheduler::OnNodeAdd(Node node) {
  cache_->AddOrUpdateNode(std::move(node));
  queue_->OnClusterEvent(kNodeAdd);
}

void Scheduler::OnNodeUpdate(Node node) {
  // A heartbeat (resourceVersion, condition timestamps) cannot make a parked pod fit.
  if (cache_->AddOrUpdateNode(std::move(node))) queue_->OnClusterEvent(kNodeUpdate);
}

void Scheduler::OnNodeDelete(const std::string& name) { cache_->RemoveNode(name); }

void Scheduler::OnPriorityClass(PriorityClass pc) {
  absl::MutexLock lock(&mu_);
  priority_classes_[pc.meta.name] = std::move(pc);
}

void Scheduler::OnPriorityClassDelete(const std::string& name) {
  absl::MutexLock lock(&mu_);
  priority_classes_.erase(name);
}

void Scheduler::OnCustomObjectChange() { queue_->OnClusterEvent(kCustomObjectChange); }

void Scheduler::OnClusterObjectDelete(std::string_view kind, std::string_view key) {
  if (kind == "Namespace") {
    const bool queues_changed = queue_store_.DeleteNamespace(key);
    objects_.DeleteNamespace(key);
    queue_->OnClusterEvent(kNamespaceChange | (queues_changed ? kCustomObjectChange : 0u));
    return;
  }
  if (kind == "PersistentVolumeClaim") {
    objects_.DeleteClaim(key);
  } else if (kind == "PersistentVolume") {
    objects_.DeleteVolume(key);
  } else if (kind == "StorageClass") {
    objects_.DeleteClass(key);
  } else if (kind == "CSINode") {
    objects_.DeleteCSINode(key);
  }
  queue_->OnClusterEvent(kStorageChange);
}

absl::Status Scheduler::OnQueueObject(const nlohmann::json& object) {
  absl::Status st = queue_store_.Apply(object);
  ReportQueueConflicts();
  OnCustomObjectChange();
  return st;
}

void Scheduler::ReportQueueConflicts() {
  for (const NamespaceConflict& c : queue_store_.TakeNewConflicts()) {
    if (api_ == nullptr) continue;
    api_->RecordObjectEvent(ObjectReference{.api_version = std::string(kQueueApiVersion),
                                            .kind = std::string(kQueueKind),
                                            .name = c.refused,
                                            .uid = c.refused_uid},
                            "Warning", "NamespaceConflict", c.Message());
  }
}

void Scheduler::OnQueueDelete(const std::string& name) {
  queue_store_.Delete(name);
  ReportQueueConflicts();  // the next oldest of several claimants now keeps the namespace
  OnCustomObjectChange();
}

void Scheduler::Housekeeping() {
  // Assumed pods are not expired here: they are held until the informer confirms them or the
  // pod is deleted (see cache.h).
  ExpireWaitingPods();
  RetryRollbackEvictions();
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
  RunCycle(*std::move(popped));
  return true;
}

bool Scheduler::ScheduleOneWait(absl::Duration timeout) {
  Housekeeping();
  auto popped = queue_->PopWait(timeout);
  if (!popped) return false;
  RunCycle(*std::move(popped));
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
  absl::MutexLock lock(&gang_mu_);
  for (const auto& [gang, g] : gang_states_) {
    for (const auto& [key, pod] : g.pending) {
      if (seen.insert(key).second) out.push_back(pod);
    }
  }
  return out;
}

std::optional<absl::Time> Scheduler::NextWakeup() const {
  std::optional<absl::Time> next = queue_->NextBackoffExpiry();
  auto consider = [&next](absl::Time t) {
    if (!next.has_value() || t < *next) next = t;
  };
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, w] : waiting_) consider(w.deadline);
  }
  absl::MutexLock lock(&gang_mu_);
  for (const auto& [key, g] : gang_states_) {  // scheduleTimeoutSeconds of gangs still waiting
    if (g.waiting_since && g.timeout && !g.timed_out) consider(*g.waiting_since + *g.timeout);
  }
  for (const auto& [key, e] : rollback_evictions_) consider(e.due);
  return next;
}

void Scheduler::RunCycle(SchedulingQueue::Popped popped) {
  QueuedPodInfo info = std::move(popped.info);
  // Held for the whole cycle: HandleFailure hands `info` (and its pod) to the queue, where an
  // informer update may replace and free it before the cycle's last read.
  const PodRef pod_ref = info.pod;
  const Pod& pod = *pod_ref;
  const Framework* fw = FrameworkFor(pod.scheduler_name);
  std::optional<Cache::HeldPod> held = cache_->Held(pod.Key());
  if (fw == nullptr || (held.has_value() && SameUid(held->uid, pod.meta.uid))) {
    queue_->Done(pod.Key(), pod.meta.uid);  // not ours, or already placed: never again
    return;
  }
  if (IsGangHead(pod)) {
    RunGangCycle(std::move(info), popped.cycle);
    return;
  }
  const absl::Time start = clock_->Now();
  auto finish = [&](std::string_view result) {
    if (observer_) observer_->AttemptFinished(pod, result, clock_->Now() - start);
  };

  cache_->UpdateSnapshot(snapshot_);
  auto state = std::make_shared<CycleState>();
  const size_t num_nodes = snapshot_.size();

  Status pre = fw->RunPreFilter(*state, pod);
  if (!pre.ok()) {
    HandleFailure(*fw, std::move(info), popped.cycle, pre, FormatPreFilterError(num_nodes, pre),
                  {pre.plugin()},
                  pre.plugin() == kQueueQuotaPlugin ? FailureKind::kQuotaExceeded
                                                    : FailureKind::kUnschedulable);
    finish(pre.code() == Code::kError ? "error" : "unschedulable");
    return;
  }

  // Room that preemptions freed for other pods is theirs, unless this pod is more important.
  const std::shared_ptr<const Nominator::View> nominations = nominator_.empty() ? nullptr : nominator_.Snapshot();
  const NominatedPodMap* nominated_pods =
      nominations == nullptr || nominations->pods.empty() ? nullptr : &nominations->pods;
  // A nominated node (set by an earlier preemption) is tried first: its victims are leaving.
  FilterOutcome outcome;
  if (const NodeInfo* nominated = pod.nominated_node_name.empty()
                                      ? nullptr
                                      : snapshot_.Get(pod.nominated_node_name)) {
    if (fw->RunFiltersWithNominatedPods(*state, pod, *nominated, nominated_pods).ok()) {
      outcome.feasible.push_back(nominated);
    }
  }
  // The decision cache answers as the full evaluation below would, or leaves it to it. With
  // nominations, a node fits only if it fits as it is and with the pods nominated to it: the
  // nodes that hold nominated pods are asked again with them.
  DecisionCache::Choice cached;
  if (outcome.feasible.empty() && nominated_pods == nullptr) {
    cached = fw->ChooseCached(*state, pod, snapshot_);
  } else if (outcome.feasible.empty()) {
    const DecisionCache::HeldNodes held = HeldNodesFor(*fw, *state, pod, snapshot_, *nominations);
    cached = fw->ChooseCached(*state, pod, snapshot_, &held);
  }
  // kNoFit: no node fits, and the cache kept each node's rejection (as Filter gave it).
  const bool no_fit_cached = cached.kind == DecisionCache::Choice::Kind::kNoFit;
  const NodeStatusMap& rejected = no_fit_cached ? *cached.rejected : outcome.rejected;
  const bool decided = cached.kind == DecisionCache::Choice::Kind::kChosen ||
                       cached.kind == DecisionCache::Choice::Kind::kError;
  if (!decided && outcome.feasible.empty() && !no_fit_cached) {
    outcome = fw->FindFeasibleNodes(*state, pod, snapshot_.nodes(), nominated_pods);
  }

  if (!decided && outcome.feasible.empty()) {
    // From the cache's per-shape histogram when it answered, without walking the nodes.
    FitError fit = no_fit_cached ? SummarizeFitError(num_nodes, *cached.histogram)
                                 : SummarizeFitError(num_nodes, rejected);
    if (fit.error != nullptr) {
      HandleFailure(*fw, std::move(info), popped.cycle, *fit.error, fit.error->Message(),
                    {fit.error->plugin()});
      finish("error");
      return;
    }
    std::string message = std::move(fit.message);
    std::vector<std::string> rejecting = std::move(fit.rejecting_plugins);
    if (fw->HasPostFilter()) {
      PostFilterResult pf = fw->RunPostFilter(*state, pod, rejected);
      if (!pf.victims.empty() && observer_) {
        observer_->PodsPreempted(pod, pf.status.ok() ? pf.nominated_node : std::string(),
                                 pf.victims);
      }
      if (pf.status.code() == Code::kError) {
        HandleFailure(*fw, std::move(info), popped.cycle, pf.status, pf.status.Message(),
                      {pf.status.plugin()});
        finish("error");
        return;
      }
      ApplyNomination(pf, info);
      if (pf.status.ok() && !pf.nominated_node.empty()) {
        // Victims are being evicted; the pod retries once they are gone.
        StrAppend(&message, " Preempting pods on node ", pf.nominated_node, ".");
        rejecting.clear();  // any pod deletion may be the victim leaving
        rejecting.push_back("");
      }
    }
    // Only the queue's quota said no (the contract with plugins/queue_quota): not a capacity
    // shortfall, so not reported as Unschedulable.
    HandleFailure(*fw, std::move(info), popped.cycle, Status::Unschedulable(message), message,
                  rejecting, QuotaOnly(rejecting) ? FailureKind::kQuotaExceeded : FailureKind::kUnschedulable);
    finish("unschedulable");
    return;
  }

  std::string chosen;
  if (cached.kind == DecisionCache::Choice::Kind::kError) {
    std::string msg(cached.error.message());
    HandleFailure(*fw, std::move(info), popped.cycle, Status::Error(msg), msg, {});
    finish("error");
    return;
  } else if (cached.kind == DecisionCache::Choice::Kind::kChosen) {
    chosen = cached.node->name();
  } else if (outcome.feasible.size() == 1) {
    chosen = outcome.feasible.front()->name();
  } else {
    Status ps = fw->RunPreScore(*state, pod, outcome.feasible);
    absl::StatusOr<NodeScoreList> scores =
        ps.ok() ? fw->RunScore(*state, pod, outcome.feasible)
                : absl::StatusOr<NodeScoreList>(absl::InternalError(ps.Message()));
    if (!scores.ok()) {
      std::string msg(scores.status().message());
      HandleFailure(*fw, std::move(info), popped.cycle, Status::Error(msg), msg, {});
      finish("error");
      return;
    }
    const NodeScore* best = &scores->front();
    for (const NodeScore& s : *scores) {
      if (s.score > best->score) best = &s;  // ties keep the first node in name order
    }
    chosen = best->name;
  }

  Pod assumed = pod;
  assumed.node_name = chosen;
  if (const NodeInfo* target = snapshot_.Get(chosen); target != nullptr) {
    if (Status st = fw->RunPreAssume(*state, assumed, *target); !st.ok()) {
      HandleFailure(*fw, std::move(info), popped.cycle, st, st.Message(), {st.plugin()});
      finish(st.code() == Code::kError ? "error" : "unschedulable");
      return;
    }
  }
  Admission admitted = Admit(*fw, *state, *cache_, nominator_, pod, std::move(assumed));
  if (admitted.status.IsWait()) {
    {
      absl::MutexLock lock(&mu_);
      waiting_[pod.Key()] = WaitingPod{fw, state, info, chosen, clock_->Now() + admitted.timeout};
    }
    // Deleted during the cycle, before it waited: let go at once.
    if (queue_->Ended(pod.Key(), pod.meta.uid)) RejectWaitingPod(pod.Key(), "deleted");
    finish("scheduled");
    return;
  }
  if (!admitted.status.ok()) {
    // Nothing is held (and it was held only during this cycle: nobody to wake).
    const Status& st = admitted.status;
    HandleFailure(*fw, std::move(info), popped.cycle, st, st.Message(), {st.plugin()});
    finish(st.code() == Code::kError ? "error" : "unschedulable");
    return;
  }
  finish("scheduled");
  StartBinding(*fw, std::move(state), std::move(info), std::move(chosen));
}

void Scheduler::ApplyNomination(const PostFilterResult& pf, QueuedPodInfo& info) {
  if (pf.nomination != PostFilterResult::Nomination::kOverride) return;
  const std::string node = pf.status.ok() ? pf.nominated_node : std::string();
  if (node != info.pod->nominated_node_name) {
    Pod nominated = *info.pod;
    nominated.nominated_node_name = node;
    info.pod = std::make_shared<const Pod>(std::move(nominated));
  }
  nominator_.Set(info.pod, node);
  if (!node.empty()) ClearLowerNominations(*info.pod, node);
}

void Scheduler::ClearLowerNominations(const Pod& preemptor, const std::string& node) {
  const NominatedPodMap nominated = nominator_.Pods();
  auto on_node = nominated.find(node);
  if (on_node == nominated.end()) return;
  const int32_t priority = PriorityOf(preemptor);
  for (const PodRef& p : on_node->second) {
    if (p->Key() == preemptor.Key() || PriorityOf(*p) >= priority) continue;
    // The nominator's copy is the latest one observed (OnPodObserved refreshes it), so it may
    // replace the queued copy: the next attempt does not try the lost node first, and a
    // failure does not write the nomination back.
    Pod cleared = *p;
    cleared.nominated_node_name.clear();
    PodRef ref = std::make_shared<const Pod>(std::move(cleared));
    nominator_.Set(ref, "");
    queue_->Update(ref);
    ReplacePendingMember(ref);  // a gang member: the copy its gang's next cycle reads
    if (observer_) observer_->NominationCleared(*ref);
  }
}

void Scheduler::HandleFailure(const Framework& fw, QueuedPodInfo info, int64_t cycle,
                              const Status& status, const std::string& message,
                              const std::vector<std::string>& rejecting_plugins,
                              FailureKind unschedulable_kind) {
  if (queue_->Ended(info.pod->Key(), info.pod->meta.uid)) {
    // Deleted (or replaced, or bound elsewhere) during the attempt: no event, no retry, and no
    // room held for it.
    nominator_.Remove(info.pod->Key());
    queue_->Done(info.pod->Key(), info.pod->meta.uid);
    return;
  }
  if (observer_) {
    observer_->PodUnschedulable(
        *info.pod, status.code() == Code::kError ? FailureKind::kError : unschedulable_kind, message);
  }
  if (status.code() == Code::kError) {
    queue_->AddBackoff(std::move(info));
    return;
  }
  uint32_t events = kAllEvents;
  uint32_t hinted = 0;
  Resources need;
  bool any_named = false;
  for (const std::string& p : rejecting_plugins) any_named |= !p.empty();
  if (any_named && std::find(rejecting_plugins.begin(), rejecting_plugins.end(), "") ==
                       rejecting_plugins.end()) {
    events = fw.EventsFor(rejecting_plugins);
    hinted = fw.EventsHintedByRoom(rejecting_plugins);
    if (hinted != 0) need = fw.RoomNeed(rejecting_plugins, *info.pod);
  }
  if (observer_) observer_->PodRejected(*info.pod, rejecting_plugins);
  queue_->AddUnschedulable(std::move(info), cycle, events, hinted, std::move(need));
}

void Scheduler::UndoAssume(const Framework& fw, CycleState& state, const QueuedPodInfo& info,
                           const std::string& node, bool notify) {
  if (Unadmit(fw, state, *cache_, *info.pod, node) && notify) {
    // Its resources are free again: pods parked while they were held may fit now.
    queue_->OnClusterEvent(kAssignedPodDelete);
  }
}

void Scheduler::StartBinding(const Framework& fw, std::shared_ptr<CycleState> state,
                             QueuedPodInfo info, std::string node) {
  if (bind_executor_ == nullptr) {
    Bind(fw, std::move(state), std::move(info), std::move(node));
    return;
  }
  bind_executor_->Submit([this, &fw, state = std::move(state), info = std::move(info),
                          node = std::move(node)]() mutable {
    Bind(fw, std::move(state), std::move(info), std::move(node));
  });
}

void Scheduler::Bind(const Framework& fw, std::shared_ptr<CycleState> state, QueuedPodInfo info,
                     std::string node) {
  const PodRef pod_ref = info.pod;
  const Pod& pod = *pod_ref;
  const std::string key = pod.Key();
  // The pod may have been deleted while its bind waited in the backlog: then it is not sent.
  if (queue_->Ended(key, pod.meta.uid)) {
    UndoAssume(fw, *state, info, node);
    queue_->Done(key, pod.meta.uid);
    return;
  }
  // Recheck the node right before binding: a bind to a node deleted meanwhile would succeed,
  // and pod GC would then delete the pod.
  Status st;
  BindOutcome outcome = BindOutcome::kFailed;
  if (cache_->HasNode(node)) {
    outcome = BindAdmitted(fw, *state, pod, node, &st);
  } else {
    st = Status::Error(StrCat("node \"", node, "\" was deleted before the bind"));
  }
  if (SettleBind(fw, *state, *cache_, pod, node, outcome)) {
    queue_->OnClusterEvent(kAssignedPodDelete);  // parked pods may fit in the room it held
  }
  // Placed (now or before), gone, or not ours to write: nothing to retry. Only a bind of this
  // cycle's is reported as scheduled.
  if (outcome != BindOutcome::kFailed || queue_->Ended(key, pod.meta.uid)) {
    queue_->Done(key, pod.meta.uid);
    if (outcome == BindOutcome::kBound && observer_) observer_->PodScheduled(pod, node);
    return;
  }
  const std::string message = StrCat("binding rejected: ", st.Message());
  if (observer_) observer_->PodUnschedulable(pod, FailureKind::kBindFailed, message);
  queue_->AddBackoff(std::move(info));
}

bool Scheduler::AllowWaitingPod(const std::string& key) {
  WaitingPod w;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return false;
    w = std::move(it->second);
    waiting_.erase(it);
  }
  StartBinding(*w.fw, std::move(w.state), std::move(w.info), std::move(w.node));
  return true;
}

bool Scheduler::RejectWaitingPod(const std::string& key, const std::string& message) {
  WaitingPod w;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return false;
    w = std::move(it->second);
    waiting_.erase(it);
  }
  UndoAssume(*w.fw, *w.state, w.info, w.node);
  if (queue_->Ended(key, w.info.pod->meta.uid)) {
    queue_->Done(key, w.info.pod->meta.uid);
    return true;
  }
  if (observer_) observer_->PodUnschedulable(*w.info.pod, FailureKind::kUnschedulable, message);
  queue_->AddBackoff(std::move(w.info));
  return true;
}

std::vector<std::string> Scheduler::WaitingPodKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [key, w] : waiting_) out.push_back(key);
  std::sort(out.begin(), out.end());
  return out;
}

void Scheduler::ExpireWaitingPods() {
  std::vector<std::string> expired;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    for (const auto& [key, w] : waiting_) {
      if (now >= w.deadline) expired.push_back(key);
    }
  }
  std::sort(expired.begin(), expired.end());
  for (const std::string& key : expired) RejectWaitingPod(key, "rejected by permit: timed out waiting");
  ExpireGangWaits();
}

}  // namespace tessel
