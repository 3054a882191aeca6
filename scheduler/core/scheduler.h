// The scheduling loop shared by the live scheduler and the bench. It owns the queue, the
// profiles and the cycle; the cache is fed from outside (informers or a trace loader), and the
// outside world is reached only through ClusterApi and SchedulingObserver.
//
// One cycle (ScheduleOne): pop a pod -> refresh the snapshot -> PreFilter -> Filter over all
// nodes -> (none: PostFilter, report Unschedulable, park the pod) -> PreScore/Score -> pick the
// best node (ties: first by name) -> PreAssume (e.g. pick GPU devices) -> assume in the cache -> Reserve -> Permit -> binding cycle
// (PreBind, Bind). A failure after assuming forgets the pod, unreserves and requeues it with
// backoff. The binding cycle runs inline, or on a BindExecutor (the live binder pool).
//
//   ASSIGN_OR_RETURN(auto s, Scheduler::New({.registry = &r, .config = &cfg, .cache = &cache,
//                                            .clock = &clock, .api = &api}));
//   s->OnPodAdd(pod);
//   s->Run(stop, {.wait = absl::Milliseconds(500)});          // live: until `stop` is set
//   s->Run(never, {.on_idle = [&] { return AdvanceClock(); }});  // bench: until idle
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/framework.h"
#include "scheduler/gang/gang_book.h"
#include "scheduler/gang/gang_status.h"
#include "scheduler/core/nominator.h"
#include "scheduler/gang/planner.h"
#include "scheduler/queue/scheduling_queue.h"
#include "scheduler/quota/queue_store.h"
#include "scheduler/state/cache.h"

namespace tessel {

// Why an attempt failed, for the live reporter (Events, PodScheduled=False) and metrics.
enum class FailureKind {
  kUnschedulable,  // no node fits, or a plugin rejected the pod (incl. Permit)
  kError,          // a plugin or the cache failed; retried with backoff
  kBindFailed,     // the binding cycle failed (PreBind, Bind, the node vanished); retried
  // Every node rejected the pod only for its queue's quota (plugin "QueueQuota"): the cluster
  // has room, so it is not reported as Unschedulable (which cluster autoscalers act on).
  kQuotaExceeded,
};

// The quota plugin's name (plugins/queue_quota): a pod that only it rejected is reported as
// FailureKind::kQuotaExceeded.
inline constexpr std::string_view kQueueQuotaPlugin = "QueueQuota";
// Whether only the queue's quota said no (the contract with plugins/queue_quota).
inline bool QuotaOnly(const std::vector<std::string>& rejecting_plugins) {
  return !rejecting_plugins.empty() &&
         std::all_of(rejecting_plugins.begin(), rejecting_plugins.end(),
                     [](const std::string& p) { return p == kQueueQuotaPlugin; });
}

// Receives the outcome of every attempt: the bench records them, the live scheduler turns them
// into Events, pod conditions and metrics.
class SchedulingObserver {
 public:
  virtual ~SchedulingObserver() = default;
  virtual void PodScheduled(const Pod& pod, const std::string& node) = 0;
  // No node fits, or the attempt failed (see `kind`); `message` reads like kube-scheduler's.
  virtual void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) = 0;
  // The pod has scheduling gates (spec.schedulingGates): it waits outside the queue until they
  // are removed. Called once per pod; live, this is PodScheduled=False, reason SchedulingGated.
  virtual void PodSchedulingGated(const Pod& /*pod*/) {}
  // A preemption for `preemptor` evicted `victims` (to make room on `node`, "" when its
  // candidates were refused): for metrics (scheduler_preemption_victims{reason}).
  virtual void PodsPreempted(const Pod& /*preemptor*/, const std::string& /*node*/,
                             const std::vector<PreemptionVictim>& /*victims*/) {}
  // A preemption for a more important pod chose the node this pending pod was nominated to: the
  // room it was promised may be gone, so its nomination is dropped (live: status.nominatedNodeName
  // removed, as kube-scheduler does) and it looks for a node afresh at its next attempt.
  virtual void NominationCleared(const Pod& /*pod*/) {}
  // The pod waits as unschedulable; these plugins rejected it in its last attempt (for
  // scheduler_unschedulable_pods{plugin}).
  virtual void PodRejected(const Pod& /*pod*/, const std::vector<std::string>& /*plugins*/) {}
  // A bound member of a gang that was rolled back was evicted (evictions by reason "gang").
  virtual void GangMemberEvicted(const Pod& /*pod*/) {}
  // The attempt took this long (for the attempt-duration histogram); result is
  // "scheduled", "unschedulable" or "error".
  virtual void AttemptFinished(const Pod& /*pod*/, std::string_view /*result*/,
                               absl::Duration /*latency*/) {}
};

// Runs binding cycles off the scheduling thread (live); the bench runs them inline.
class BindExecutor {
 public:
  virtual ~BindExecutor() = default;
  virtual void Submit(std::function<void()> task) = 0;
};

// How Scheduler::Run loops. The live binary blocks for pods and pauses while it may not write;
// the bench does not block and moves its virtual clock when nothing is ready.
struct RunOptions {
  // How long one wait for a pod may block (zero: never block).
  absl::Duration wait = absl::ZeroDuration();
  // While this returns false no pod is popped (the leader lease is being lost); null: always.
  std::function<bool()> may_schedule;
  // Called when no pod was ready: true goes on looping (e.g. the bench advanced its clock to
  // NextWakeup()), false returns. Null: return when idle, unless `wait` is set (live).
  std::function<bool()> on_idle;
  // Stop after this many scheduling cycles (0: no limit).
  int64_t max_cycles = 0;
};

struct SchedulerParams {
  const Registry* registry = nullptr;
  const SchedulerConfig* config = nullptr;
  // The default profile every configured profile is resolved against (plugins/defaults.h).
  const ProfileConfig* defaults = nullptr;
  Cache* cache = nullptr;
  const Clock* clock = nullptr;
  ClusterApi* api = nullptr;               // may be null in unit tests (then nothing binds)
  SchedulingObserver* observer = nullptr;  // optional
  BindExecutor* bind_executor = nullptr;   // null: bind inline
  uint64_t seed = 42;
  QueueOptions queue_options;
  // Gangs (scheduler/gang): PodGroup status reports go here; optional.
  gang::GangStatusSink* gang_status = nullptr;
  // How often one member's failed bind is tried before the gang is rolled back.
  int gang_bind_attempts = 3;
  // Evaluate every node in every cycle, without the decision caches (FrameworkOptions::reference);
  // the differential test compares the two.
  bool reference_evaluation = false;
};

class Scheduler final : public Handle {
 public:
  static absl::StatusOr<std::unique_ptr<Scheduler>> New(SchedulerParams params);
  ~Scheduler() override;

  // --- Inputs (informers, loaders). Thread-safe. ---
  // Pending pods of one of our profiles go to the queue, unless the core already holds them
  // (in flight, assumed or bound) or they are gated; pods with a node go to the cache. Identity
  // is the UID: a known name with a new UID ends the old pod first.
  void OnPodAdd(Pod pod);
  void OnPodUpdate(Pod pod);
  // The pod is gone: it leaves the queue, the cache and Permit; an in-flight cycle or bind of it
  // ends without a retry. With a UID, only that pod (a late delete of an older pod of the same
  // name leaves the new one alone).
  void OnPodDelete(const std::string& key, const std::string& uid = {});
  // A pod that does not decode (DecodePod failed with `problem`; `identity` holds what could be
  // read: name, namespace, uid, schedulerName, nodeName). A pending pod of this scheduler leaves
  // the queue (its older copy must not be placed in its stead) and is reported as a
  // FailedScheduling error naming the field; it comes back when an update makes it readable.
  void OnPodUndecodable(const Pod& identity, const absl::Status& problem);
  void OnNodeAdd(Node node);
  void OnNodeUpdate(Node node);
  void OnNodeDelete(const std::string& name);
  void OnPriorityClass(PriorityClass pc);
  void OnPriorityClassDelete(const std::string& name);
  // PodDisruptionBudgets, by namespace/name (preemption counts the ones victims violate).
  void OnPodDisruptionBudget(PodDisruptionBudget pdb);
  void OnPodDisruptionBudgetDelete(const std::string& key);
  // Other watched objects (PodGroups, Queues) changed: parked pods may now be schedulable.
  void OnCustomObjectChange();
  // PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes (kStorageChange) and Namespaces
  // (kNamespaceChange): the store plugins read (Handle::Objects), and the queue's events.
  // A Namespace's labels also decide which Queues its pods may choose (spec.namespaceSelector):
  // when that changes, the queue's event is a Queue change too.
  template <typename T>
  void OnClusterObject(T object) {
    uint32_t events = kStorageChange;
    if constexpr (std::is_same_v<T, Namespace>) {
      events = kNamespaceChange;
      if (queue_store_.PutNamespace(object.meta.name, object.meta.labels)) {
        events |= kCustomObjectChange;
      }
    }
    objects_.Put(std::move(object));
    queue_->OnClusterEvent(events);
  }
  // `kind` is PersistentVolumeClaim (key namespace/name), PersistentVolume, StorageClass,
  // CSINode or Namespace.
  void OnClusterObjectDelete(std::string_view kind, std::string_view key);
  // A gang object (PodGroup, Workload, v1alpha2 PodGroup, Job) was added, changed or deleted.
  // True when it was one of those kinds; an object that does not decode is an error naming it
  // and the field.
  absl::StatusOr<bool> OnGangObject(const nlohmann::json& object);
  void OnGangObjectDelete(const nlohmann::json& object);
  // The informers deliver every Job (see GangBook::SetJobsWatched).
  void OnJobsWatched() { gangs_.SetJobsWatched(true); }
  // A Queue (tessel.io/v1alpha1) was added or changed / deleted. A Queue that does not decode
  // is an error naming it and the field; that queue is ignored, the others stay. A namespace two
  // queues list is an error naming both; the older keeps it, and a Warning Event
  // (NamespaceConflict) is recorded on the newer one when the conflict appears.
  absl::Status OnQueueObject(const nlohmann::json& object);
  void OnQueueDelete(const std::string& name);
  const QueueStore& queue_store() const { return queue_store_; }

  // --- The loop (one thread). ---
  // The scheduling loop of the live binary, replay and inflate alike: housekeeping (permit
  // timeouts), then one cycle for the next ready pod; until `stop` is set, `max_cycles` ran, or
  // (see RunOptions::on_idle) nothing is ready. Returns the number of cycles run.
  int64_t Run(const std::atomic<bool>& stop, const RunOptions& options = {});
  // Ends Run: the queue closes and waits no more.
  void Stop() { queue_->Close(); }
  // When something next becomes due without any outside event: a backoff ends or a permit
  // wait times out. The bench moves its virtual clock there when idle.
  std::optional<absl::Time> NextWakeup() const;
  // One step of Run: housekeeping, then schedules the next pod from the queue; false when the
  // queue has no ready pod.
  bool ScheduleOne();
  // Like ScheduleOne, but waits up to `timeout` for a pod.
  bool ScheduleOneWait(absl::Duration timeout);
  // Rejects permit-waiting pods whose timeout passed, runs the tasks given to RunOnLoop;
  // called by the loop each step.
  void Housekeeping();
  // Runs `task` on the scheduling thread between two cycles, where the snapshot and the
  // frameworks may be used (the admin API's dry runs: scheduler/core/explain.h). Tasks given
  // while no loop runs wait for one.
  void RunOnLoop(std::function<void()> task);
  // Scheduling thread only: brings snapshot() up to date with the cache.
  void RefreshSnapshot() { cache_->UpdateSnapshot(snapshot_); }

  SchedulingQueue& queue() { return *queue_; }
  // Every pod waiting to be scheduled: the queue's, and the members a pending gang holds back
  // behind its head (each once). For status, metrics and the admin API.
  std::vector<PodRef> PendingPods() const;
  const gang::GangBook& gangs() const { return gangs_; }
  Cache& cache() { return *cache_; }
  const Framework* FrameworkFor(std::string_view scheduler_name) const override;
  std::vector<std::string> ProfileNames() const;

  // --- Permit "Wait" plumbing (gangs): a waiting pod is assumed and reserved, and binds once
  // every plugin that asked it to wait allows it. ---
  bool AllowWaitingPod(const std::string& key);
  bool RejectWaitingPod(const std::string& key, const std::string& message);
  std::vector<std::string> WaitingPodKeys() const;

  // --- Handle ---
  const Snapshot& snapshot() const override { return snapshot_; }
  const Clock& clock() const override { return *clock_; }
  ClusterApi* api() const override { return api_; }
  uint64_t seed() const override { return seed_; }
  std::optional<int32_t> PriorityClassValue(std::string_view name) const override;
  std::shared_ptr<const Nominations> NominatedPods() const override { return nominator_.Snapshot(); }
  std::vector<PodDisruptionBudget> PodDisruptionBudgets() const override;
  std::string GangKeyOf(const Pod& pod) const override;
  bool PodEnded(const Pod& pod) const override;
  void PodEvicted(const Pod& pod) override;
  int32_t PriorityOf(const Pod& pod) const override;
  int32_t PriorityFloor() const override;
  // The node a pending pod is nominated to ("" for none).
  std::string NominatedNodeOf(const std::string& key) const { return nominator_.NodeOf(key); }
  std::shared_ptr<const QueueDirectory> Queues() const override { return queue_store_.directory(); }
  ClusterObjectStore* ObjectStore() const override { return &objects_; }

 private:
  explicit Scheduler(SchedulerParams params);

  struct WaitingPod {
    const Framework* fw;
    std::shared_ptr<CycleState> state;
    QueuedPodInfo info;
    std::string node;
    absl::Time deadline;
  };

  // Fills in priority (and preemptionPolicy) from the PriorityClass, as admission would.
  void ResolvePriority(Pod& pod) const;
  // The class that gives a pod without spec.priority its priority: its priorityClassName's,
  // else the globalDefault one (the highest, if several); null for none.
  const PriorityClass* ClassFor(const Pod& pod) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies a PostFilter's nomination to the pod the cycle requeues (and the nominator).
  void ApplyNomination(const PostFilterResult& pf, QueuedPodInfo& info);
  // A preemption for `preemptor` chose `node`: pods of lower priority nominated there lose
  // their nomination (kube-scheduler's prepareCandidate does the same).
  void ClearLowerNominations(const Pod& preemptor, const std::string& node);
  // A pending gang member's copy (in its gang's state) replaced by a newer one of the same pod,
  // e.g. with a changed nomination; nothing for a pod that is no pending gang member.
  void ReplacePendingMember(const PodRef& pod) ABSL_LOCKS_EXCLUDED(gang_mu_);
  bool Ours(const Pod& pod) const;
  // A pod released `node` (deleted, finished): the queue's kAssignedPodDelete with the node's room.
  void NotifyPodLeft(const std::string& node);
  void ExpireWaitingPods();
  void OnPodObserved(Pod pod);
  // Ends a pod's life in the scheduler: out of the queue, Permit and the cache; in flight, it is
  // marked ended so that nothing requeues it.
  void EndPod(const std::string& key, const std::string& uid);
  // Forgets that a pod waits on its gates; true if it did.
  bool EndGated(const std::string& key);
  void RunCycle(SchedulingQueue::Popped popped);
  // `unschedulable_kind`: how a rejection (not an error) is reported.
  void HandleFailure(const Framework& fw, QueuedPodInfo info, int64_t cycle, const Status& status,
                     const std::string& message, const std::vector<std::string>& rejecting_plugins,
                     FailureKind unschedulable_kind = FailureKind::kUnschedulable);
  void StartBinding(const Framework& fw, std::shared_ptr<CycleState> state, QueuedPodInfo info,
                    std::string node);
  void Bind(const Framework& fw, std::shared_ptr<CycleState> state, QueuedPodInfo info,
            std::string node);
  // Records an Event on each Queue that newly lost a namespace to an older queue.
  void ReportQueueConflicts();
  // Unreserve and forget the pod's assumption; `notify` raises the event that its resources
  // are free (not for an assumption made and dropped within one cycle).
  void UndoAssume(const Framework& fw, CycleState& state, const QueuedPodInfo& info,
                  const std::string& node, bool notify = true);

  // --- Gangs (gang_cycle.cc). A pending gang is one queue entry: its "head" member stands for
  // it; the other pending members wait here. One cycle plans the whole gang. ---
  struct GangState {
    gang::GangId id;
    StringKeyedMap<PodRef> pending;  // members without a node, not assumed
    StringSet placed;                // members bound, assumed or being bound
    StringSet evicting;              // bound members evicted by a rollback (not counted)
    std::string head;                // the member in the queue or in a cycle; "" when none
    std::optional<absl::Time> waiting_since;  // first failed attempt of the current wait
    std::optional<absl::Duration> timeout;    // scheduleTimeoutSeconds
    bool timed_out = false;                   // reported Failed for the current wait
    int32_t min_member = 0;
    std::string last_message;                 // why the last attempt fell short
    // Members by pod phase, from the informer: running among `placed`; the finished ones are
    // kept while the gang has members left.
    StringSet running, succeeded, failed;
    // The core's last report, re-sent with new counts when a member's phase changes.
    std::optional<gang::GangStatusUpdate> last_report;
  };
  struct GangBinding;
  // Takes a pending pod of ours if it belongs to a gang (true), else leaves it (false).
  bool AdmitGangMember(const PodRef& pod);
  void NoteGangMemberPlaced(const Pod& pod);
  void ForgetGangMember(const std::string& key);
  bool IsGangHead(const Pod& pod) const;
  void RunGangCycle(QueuedPodInfo info, int64_t cycle);
  // Assumes, reserves and permits the members of a complete plan in order, all or none (what
  // it held is released; the status of the member that failed). Members beyond the first
  // `required` that a plugin rejects are dropped from the plan instead: they wait.
  Status HoldGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements,
                  size_t required);
  void ReleaseGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements, size_t count);
  void BindGangMember(const std::shared_ptr<GangBinding>& binding, size_t i);
  void FinishGangBinding(const std::shared_ptr<GangBinding>& binding);
  // Puts the earliest pending member in the queue as the gang's head, if there is none.
  void RequeueGangHead(GangState& g, std::optional<QueuedPodInfo> previous, bool backoff)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(gang_mu_);
  void ReportGang(const gang::GangId& id, gang::GangStatusUpdate update);
  // A gang that does not fit: evicts lower-priority pods across nodes so that `need` of its
  // pending `members` fit (scheduler/preemption), nominating each placed member (updated in
  // `members`), within one domain of `topology_key` if set. Not while a member's earlier
  // victims are still terminating. Returns what it did for the gang's message, "" when it
  // evicted nothing.
  std::string PreemptForGang(const Framework& fw, std::vector<PodRef>& members, int32_t need,
                             const std::string& topology_key);
  // Records a member's pod phase; true if the gang's counts changed.
  static bool NoteMemberPhase(GangState& g, const std::string& key, PodPhase phase);
  // Marks gangs whose scheduleTimeoutSeconds passed as Failed (their pods stay queued).
  void ExpireGangWaits();
  // A rolled-back gang's bound member is evicted; a refused or failed eviction is tried again
  // (RetryRollbackEvictions, with backoff) until the pod is gone, so no half-started gang keeps
  // its nodes; not while this replica may no longer write (the next leader takes over).
  void EvictRolledBack(const PodRef& pod, const std::string& message, absl::Duration backoff);
  void RetryRollbackEvictions();

  const Registry* registry_;
  Cache* cache_;
  const Clock* clock_;
  ClusterApi* api_;
  SchedulingObserver* observer_;
  BindExecutor* bind_executor_;
  uint64_t seed_;
  std::unique_ptr<SchedulingQueue> queue_;
  std::vector<std::unique_ptr<Framework>> profiles_;
  Snapshot snapshot_;

  QueueStore queue_store_;
  mutable ClusterObjectStore objects_;  // thread-safe; mutable: plugins assume writes through it
  gang::GangStatusSink* gang_status_;
  int gang_bind_attempts_;
  gang::GangBook gangs_;
  mutable absl::Mutex gang_mu_;
  std::map<std::string, GangState> gang_states_ ABSL_GUARDED_BY(gang_mu_);  // by GangId::Key()
  StringKeyedMap<std::string> gang_of_ ABSL_GUARDED_BY(gang_mu_);          // pod key -> gang key
  struct PendingEviction {
    PodRef pod;
    std::string message;
    absl::Time due;
    absl::Duration backoff;
  };
  // Rollback evictions to try again, by pod key (dropped when the pod is gone).
  StringKeyedMap<PendingEviction> rollback_evictions_ ABSL_GUARDED_BY(gang_mu_);

  mutable absl::Mutex mu_;
  StringKeyedMap<PriorityClass> priority_classes_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<WaitingPod> waiting_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<std::string> gated_ ABSL_GUARDED_BY(mu_);  // key -> UID of gated pods
  StringKeyedMap<PodDisruptionBudget> pdbs_ ABSL_GUARDED_BY(mu_);  // by namespace/name
  std::vector<std::function<void()>> loop_tasks_ ABSL_GUARDED_BY(mu_);
  Nominator nominator_;
};

}  // namespace tessel
