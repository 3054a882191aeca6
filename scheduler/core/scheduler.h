// The scheduling loop shared by the live scheduler and the bench. It owns the queue, the
// profiles and the cycle; the cache is fed from outside (informers or a trace loader), and the
// outside world is reached only through ClusterApi and SchedulingObserver. Laid out as
// kube-scheduler's:
//   scheduler.cc       construction, the loop, the framework Handle, and one pod's scheduling
//                      cycle: SchedulingCycle returns a CycleResult (a node, or a Status and a
//                      Diagnosis) and RecordFailure is the one failure sink
//   event_handlers.cc  pods, nodes and cluster objects arriving (the informers' side)
//   binding_cycle.cc   the binding cycle, and pods waiting in Permit (framework/waiting_pods.h)
//   gang_cycle.cc      a gang's cycle (one plan for the whole gang), gang_binding.cc its binds
// The state it reads lives below it: PriorityClasses and PDBs in state/priority_classes.h,
// nominations in framework/nominator.h, gang bookkeeping in gang/gang_tracker.h; a popped pod
// is an InFlightPod (queue/in_flight_pod.h) that tells the queue when the core is done with it.
//
// One cycle (ScheduleOne): pop a pod -> refresh the snapshot -> PreFilter -> Filter over all
// nodes -> (none: PostFilter, report Unschedulable, park the pod) -> PreScore/Score -> pick the
// best node (ties: first by name) -> PreAssume (e.g. pick GPU devices) -> assume in the cache ->
// Reserve -> Permit -> binding cycle (PreBind, Bind). A failure after assuming forgets the pod,
// unreserves and requeues it with backoff. The binding cycle runs inline, or on a BindExecutor
// (the live binder pool).
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
#include <set>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/core/scheduling_observer.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/framework.h"
#include "scheduler/framework/nominator.h"
#include "scheduler/framework/waiting_pods.h"
#include "scheduler/gang/gang_book.h"
#include "scheduler/gang/gang_status.h"
#include "scheduler/gang/gang_tracker.h"
#include "scheduler/gang/planner.h"
#include "scheduler/provisioning/provisioner.h"
#include "scheduler/queue/in_flight_pod.h"
#include "scheduler/queue/scheduling_queue.h"
#include "scheduler/quota/queue_store.h"
#include "scheduler/state/cache.h"
#include "scheduler/state/priority_classes.h"

namespace tessel {

// Why a pod got no node: what is reported, and which cluster events may help it.
struct Diagnosis {
  std::string message;
  // The plugins that rejected it: their registered events (and hints by room) decide when the
  // pod is tried again.
  std::vector<std::string> rejecting_plugins;
  // Any event may help, whatever rejected it (the victims of its preemption are leaving).
  bool wake_on_any_event = false;
  // How a rejection (not an error) is reported.
  FailureKind kind = FailureKind::kUnschedulable;
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
  // ProvisioningRequests for marked gangs that fit nowhere (docs/provisioning.md); optional:
  // without one (replay, the bench) nothing is asked for.
  provisioning::Provisioner* provisioner = nullptr;
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
  // The Node `name` does not decode (`problem` names the field): it takes no new pods until a
  // version that reads arrives (FenceUnreadableNode over its last readable version), its pods
  // stay charged, and a Warning Event NodeUnreadable on the Node says why.
  void OnNodeUndecodable(const std::string& name, const absl::Status& problem);
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
  // The object of type T (PersistentVolumeClaim by namespace/name, PersistentVolume,
  // StorageClass, CSINode or Namespace by name) was deleted.
  template <typename T>
  void OnClusterObjectDelete(std::string_view key) {
    if constexpr (std::is_same_v<T, Namespace>) {
      const bool queues_changed = queue_store_.DeleteNamespace(key);
      objects_.DeleteNamespace(key);
      queue_->OnClusterEvent(kNamespaceChange | (queues_changed ? kCustomObjectChange : 0u));
      return;
    } else if constexpr (std::is_same_v<T, PersistentVolumeClaim>) {
      objects_.DeleteClaim(key);
    } else if constexpr (std::is_same_v<T, PersistentVolume>) {
      objects_.DeleteVolume(key);
    } else if constexpr (std::is_same_v<T, StorageClass>) {
      objects_.DeleteClass(key);
    } else {
      static_assert(std::is_same_v<T, CSINode>, "a kind the cluster-object store does not hold");
      objects_.DeleteCSINode(key);
    }
    queue_->OnClusterEvent(kStorageChange);
  }
  // A Dynamic Resource Allocation object (ResourceSlice, DeviceClass, ResourceClaim), kept as
  // JSON for the DynamicResources plugin (kResourceChange). An error names the kind and field
  // when the object has no name; the store is then unchanged.
  // A claim or class that changes may change what pending pods' claims charge their queues
  // (dra_charge.h): they are charged again.
  absl::Status OnRawObject(RawKind kind, const nlohmann::json& object) {
    absl::Status st = objects_.PutRaw(kind, object);
    if (st.ok()) {
      if (kind != RawKind::kResourceSlice) RechargePendingClaims();
      queue_->OnClusterEvent(kResourceChange);
    }
    return st;
  }
  void OnRawObjectDelete(RawKind kind, std::string_view key) {
    objects_.DeleteRaw(kind, key);
    if (kind != RawKind::kResourceSlice) RechargePendingClaims();
    queue_->OnClusterEvent(kResourceChange);
  }
  // A gang object (PodGroup, Workload, v1alpha2 PodGroup, Job) was added or changed (decoded at
  // the edge: scheduler/kinds/object_kinds.h).
  void OnGangObject(gang::GangObject object);
  // The gang object of that kind and namespace/name (or name) was deleted.
  void OnGangObjectDelete(gang::GangKind kind, std::string_view key);
  // The gang object of that kind, namespace and name does not decode (`problem` names the
  // field): a version that decoded before stays in force; with none, its members wait, each
  // told so (FailedScheduling naming the object and field), and its status says InvalidSpec.
  void OnGangObjectUndecodable(gang::GangKind kind, const std::string& namespace_, const std::string& name,
                               const absl::Status& problem);
  // The informers deliver every Job (see GangBook::SetJobsWatched).
  void OnJobsWatched() { gangs_.SetJobsWatched(true); }
  // A Queue (tessel.io/v1alpha1) was added or changed. A namespace two queues list is an error
  // naming both; the older keeps it, and a Warning Event (NamespaceConflict) is recorded on the
  // newer one when the conflict appears.
  absl::Status OnQueue(Queue queue);
  // The Queue `name` does not decode (`problem` names it and the field): its last good version
  // stays in force, or its pods wait (`namespaces`: its spec.namespaces as far as they read);
  // the others stay. Returns the error as reported.
  absl::Status OnQueueUndecodable(const std::string& name, const absl::Status& problem,
                                  std::vector<std::string> namespaces = {});
  void OnQueueDelete(const std::string& name);
  // A ResourceFlavor (tessel.io/v1alpha1) was added, changed, did not decode (`problem` names
  // the field; its last good version stays) or was deleted.
  void OnResourceFlavor(ResourceFlavor flavor);
  absl::Status OnResourceFlavorUndecodable(const std::string& name, const absl::Status& problem);
  void OnResourceFlavorDelete(const std::string& name);
  // Cohorts: the quota tree (scheduler/quota/cohort.h).
  void OnCohort(Cohort cohort);
  absl::Status OnCohortUndecodable(const std::string& name, const absl::Status& problem);
  void OnCohortDelete(const std::string& name);
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
  // When an unschedulable pod is next retried for having waited the longest it may (the queue's
  // max_unschedulable_wait, 5 minutes): a simulation that still has events to come moves its
  // clock there too, as a live scheduler's timer would retry the pod.
  std::optional<absl::Time> NextUnschedulableRetry() const;
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
  std::vector<PriorityClass> PriorityClasses() const override { return priority_classes_.All(); }
  DisruptionLedger* disruptions() const override { return &disruptions_; }
  std::string GangKeyOf(const Pod& pod) const override;
  std::optional<PodGroupClaims> PodGroupClaimsOf(const Pod& pod) const override;
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
  class TrackerQueue;  // the queue as the gang tracker uses it

  // What a scheduling cycle decided: a node, or why not.
  struct CycleResult {
    std::string node;  // set when status is ok
    Status status;     // not ok: the failure, reported and requeued by RecordFailure
    Diagnosis diagnosis;
  };

  // --- Event handlers (event_handlers.cc). ---
  void OnPodObserved(Pod pod);
  // Pending pods with DRA claims whose charge (dra_charge.h) changed are observed again with it.
  void RechargePendingClaims();
  // Ends a pod's life in the scheduler: out of the queue, Permit and the cache; in flight, it is
  // marked ended so that nothing requeues it.
  void EndPod(const std::string& key, const std::string& uid);
  // A pending pod of ours leaves the queue, its nomination, its gates and its gang.
  void ForgetPending(const std::string& key, std::string_view uid);
  // Forgets that a pod waits on its gates; true if it did.
  bool EndGated(const std::string& key);
  bool Ours(const Pod& pod) const;
  // A pod released `node` (deleted, finished): the queue's kAssignedPodDelete with the node's room.
  void NotifyPodLeft(const std::string& node);
  // Records an Event on each Queue that newly lost a namespace to an older queue.
  void ReportQueueConflicts();

  // --- The scheduling cycle of one pod (scheduler.cc). ---
  void RunCycle(InFlightPod pod);
  // `pod` is the popped copy, which RunCycle holds for the whole cycle; a PostFilter may nominate
  // a newer one through `in_flight`.
  CycleResult SchedulingCycle(const Framework& fw, CycleState& state, const Pod& pod, InFlightPod& in_flight);
  // Filter: the nominated node first, then the decision cache, then every node.
  // `cached`: the decision cache's answer (kFallback when it left it to the full evaluation).
  FilterOutcome FindNodes(const Framework& fw, CycleState& state, const Pod& pod,
                          DecisionCache::Choice& cached);
  // The decision cache's answer, asked within each of the pod's tiers in turn (node_tiers.h); a
  // fallback when it cannot answer as the full evaluation would.
  DecisionCache::Choice ChooseCachedByTier(const Framework& fw, CycleState& state, const Pod& pod,
                                           const DecisionCache::HeldNodes* held);
  // No node fits: PostFilter (preemption) may nominate a node while victims leave.
  void PostFilter(const Framework& fw, CycleState& state, InFlightPod& pod, const NodeStatusMap& rejected,
                  CycleResult& result, PostFilterOptions options = {});
  // PostFilter for a pod with strict node tiers (framework/node_tiers.h): tier by tier, lowest
  // first, up to `below` (every tier when nullopt), until one frees room; without tiers, once.
  // With `below` (a preempt-first pod that fits on tier `below`) only preemption runs: moves
  // and reservations are for a pod that fits nowhere.
  // True when a node was nominated.
  bool PostFilterByTier(const Framework& fw, CycleState& state, InFlightPod& pod,
                        const NodeStatusMap& rejected, CycleResult& result,
                        std::optional<int64_t> below = std::nullopt);
  // PreScore and Score over the feasible nodes: the best (ties: the first by name).
  absl::StatusOr<std::string> SelectNode(const Framework& fw, CycleState& state, const Pod& pod,
                                         const std::vector<const NodeInfo*>& feasible);
  // PreAssume, Assume, Reserve and Permit on the chosen node; Wait parks the pod in waiting_.
  Status AssumeAndPermit(const Framework& fw, std::shared_ptr<CycleState> state, InFlightPod& pod,
                         const std::string& node);
  // The one failure sink: the nomination, the report and the requeue of a failed attempt.
  void RecordFailure(const Framework& fw, InFlightPod pod, const CycleResult& result);
  // Nominates the pod the cycle requeues to `node` ("" drops its nomination), in the nominator too.
  void ApplyNomination(const std::string& node, InFlightPod& pod);
  // A preemption for `preemptor` chose `node`: pods of lower priority nominated there lose
  // their nomination (kube-scheduler's prepareCandidate does the same).
  void ClearLowerNominations(const Pod& preemptor, const std::string& node);
  // Drops the nominations a Reserve plugin named outgrown for the pod it reserved
  // (kOutgrownNominationsKey in its state).
  void ClearOutgrownNominations(const CycleState& state);
  void ClearNomination(const Pod& pod);
  void ReportAttempt(const Pod& pod, AttemptResult result, absl::Time start);

  // --- The binding cycle and Permit waits (binding_cycle.cc). ---
  void StartBinding(const Framework& fw, std::shared_ptr<CycleState> state, InFlightPod pod,
                    std::string node);
  void Bind(const Framework& fw, CycleState& state, InFlightPod pod, const std::string& node);
  void ExpireWaitingPods();
  // Unreserve and forget the pod's assumption; `notify` raises the event that its resources
  // are free (not for an assumption made and dropped within one cycle).
  void UndoAssume(const Framework& fw, CycleState& state, const Pod& pod, const std::string& node,
                  bool notify = true);

  // --- Gangs (gang_cycle.cc, gang_binding.cc). A pending gang is one queue entry: its head
  // stands for it (scheduler/gang/gang_tracker.h). One cycle plans the whole gang. ---
  struct GangAttempt;
  struct GangBinding;
  void RunGangCycle(InFlightPod head);
  // Holds a feasible plan (HoldGang). False when that failed with an error (reported, the head
  // requeued with backoff); a plugin's refusal makes the plan fall short instead.
  bool HoldPlan(GangAttempt& attempt, gang::GangPlan& plan);
  // The plan fell short: preempts for the gang if it may, reports, and parks the head.
  void GangShortfall(GangAttempt& attempt, gang::GangPlan& plan);
  // A marked gang that falls short only for lack of capacity asks the provisioner for nodes
  // (scheduler/provisioning): how that stands, for its message; nullopt when it does not ask.
  std::optional<provisioning::Outcome> AskForCapacity(const GangAttempt& attempt, const gang::GangPlan& plan);
  // The plan is held: its members count as placed, the gang is reported Scheduled and binds.
  void PlaceGang(GangAttempt& attempt, gang::GangPlan plan);
  // Assumes, reserves and permits the members of a complete plan in order, all or none (what
  // it held is released; the status of the member that failed). Members beyond the first
  // `required` that a plugin rejects are dropped from the plan instead: they wait.
  Status HoldGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements,
                  size_t required);
  void ReleaseGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements, size_t count);
  void StartGangBinding(const Framework& fw, const gang::GangId& id,
                        std::vector<gang::MemberPlacement> placements, QueuedPodInfo head_info);
  void BindGangMember(const std::shared_ptr<GangBinding>& binding, size_t i);
  void FinishGangBinding(const std::shared_ptr<GangBinding>& binding);
  void ReportGang(const gang::GangId& id, gang::GangStatusUpdate update);
  // A gang whose object does not decode: its waiting members (each once per problem) and its
  // status are told why.
  void TellUndecodableGang(const gang::GangId& id);
  void ReportGang(std::optional<gang::GangReport> report);
  // A feasible plan on a later tier of a queue that preempts first (ChooseTier): true when the
  // gang waits instead (room is being freed on an earlier tier), reported as such.
  bool GangPreemptsFirst(GangAttempt& attempt, const gang::GangPlan& plan);
  // Asks the profile's GangPostFilterPlugins (framework/interface.h) to make room for the
  // attempt's gang: preemption (DefaultPreemption), then moves and reservations unless `scope`
  // says preemption_only (and below_tier) or quota_short. The rest of the PendingGang is filled in here: the
  // members' cycle states from PreFilter, the nominations without the members (no room against
  // their own gang). The members are nominated to their targets unless an eviction was refused
  // (updated in the attempt). Its result, whose message is for the gang's status.
  GangPostFilterResult MakeRoomForGang(GangAttempt& attempt, PendingGang scope);
  // Nominates each target's member to its node, clears lower nominations there, and hands the
  // nominated copies to the gang tracker.
  void NominateMembers(std::vector<PodRef>& members, const std::vector<GangMemberTarget>& targets);
  // Marks gangs whose scheduleTimeoutSeconds passed as Failed (their pods stay queued), and
  // rolls back the gangs that held members below minMember for longer (RollBackStranded).
  void ExpireGangWaits();
  // A gang stranded below minMember (gang/gang_tracker.h): its placed members get a
  // GangRolledBack event and are evicted (EvictRolledBack), and its PodGroup says why. True
  // when `gang_key` was stranded at this shortfall and so rolled back.
  bool RollBackIfStranded(const std::string& gang_key);
  void RollBackStranded(const gang::GangTracker::Stranded& stranded);
  gang::GangTracker::BindingFn BindingNow() const;
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
  PriorityClassStore priority_classes_;
  DisruptionBudgetStore budgets_;
  mutable DisruptionLedger disruptions_;  // thread-safe; mutable: plugins record through it
  Nominator nominator_;
  WaitingPods<InFlightPod> waiting_;
  gang::GangStatusSink* gang_status_;
  provisioning::Provisioner* provisioner_;
  int gang_bind_attempts_;
  gang::GangBook gangs_;
  std::unique_ptr<TrackerQueue> tracker_queue_;
  std::unique_ptr<gang::GangTracker> tracker_;

  mutable absl::Mutex mu_;
  StringKeyedMap<std::string> gated_ ABSL_GUARDED_BY(mu_);  // key -> UID of gated pods
  // Gang objects that do not decode, by GangId::Key(): the problem, and the waiting members
  // told about it (by pod key).
  struct UndecodableGang {
    std::string problem;
    std::set<std::string> told;
  };
  std::map<std::string, UndecodableGang> undecodable_gangs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> loop_tasks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
