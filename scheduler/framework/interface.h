// The extension points of a scheduling cycle. A plugin is one class that implements the
// interfaces of the points it needs, like kube-scheduler's framework/interface.go:
//
//   QueueSort   orders the queue                  PreScore    once per pod, before Score
//   PreFilter   once per pod, before Filter       Score       per feasible node, 0..100
//   Filter      per node: can the pod go here?    Reserve     claim resources; Unreserve undoes
//   PostFilter  when no node fits (preemption)    Permit      allow, reject or wait
//   PreBind     before the API bind (annotations) Bind        the bind itself
//
// Filter and Score are const and may run in parallel over nodes: they read only the pod, the
// node and the CycleState, never mutate, never do I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/framework/disruption_ledger.h"
#include "scheduler/framework/status.h"
#include "scheduler/state/cluster_objects.h"
#include "scheduler/state/node_info.h"
#include "scheduler/state/snapshot.h"
#include "scheduler/util/clock.h"

namespace tessel {

class QueueDirectory;  // scheduler/quota/queue.h

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMinNodeScore = 0;

// Changes in the cluster that may make an unschedulable pod schedulable. Plugins declare the
// ones that can undo their rejections; the queue retries a pod only on those.
enum ClusterEvent : uint32_t {
  kNodeAdd = 1u << 0,
  kNodeUpdate = 1u << 1,      // labels, taints, allocatable, unschedulable, readiness
  kAssignedPodDelete = 1u << 2,  // a pod released its node (deleted, finished, preempted)
  kAssignedPodAdd = 1u << 3,
  kUnassignedPodAdd = 1u << 4,   // e.g. a gang member arrives
  kCustomObjectChange = 1u << 5, // PodGroups, Queues, PriorityClasses
  kStorageChange = 1u << 6,      // PersistentVolumeClaims, PersistentVolumes, StorageClasses
  kNamespaceChange = 1u << 7,    // Namespaces (their labels)
  kResourceChange = 1u << 8,     // ResourceSlices, DeviceClasses, ResourceClaims (DRA)
  kAllEvents = 0xffffffffu,
};

// kube-scheduler's finalizer on a ResourceClaim it allocated: the resourceclaim controller
// deallocates the claim (and removes it) once no pod holds it.
inline constexpr std::string_view kResourceClaimFinalizer = "resource.kubernetes.io/delete-protection";

// The outside world, as plugins and the scheduling loop reach it: the API server (live) or
// the simulated cluster (bench).
class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  // POST pods/{name}/binding, one write: `annotations` (e.g. the chosen GPU devices) travel in
  // the Binding's metadata and land on the pod with the bind. Resolves once the API server has
  // answered. The code says what happened (see scheduler/framework/binding.h):
  //   OK                  bound;
  //   NotFound            the pod is gone (deleted, or another pod holds its name now);
  //   AlreadyExists       the pod is bound already (the informer tells where);
  //   FailedPrecondition  this replica may not write (not the leader, shutting down);
  //   anything else       transient (Unavailable, DeadlineExceeded, ...): retry later.
  virtual absl::Status Bind(const Pod& pod, const std::string& node,
                            const StringMap& annotations) = 0;
  // POST pods/{name}/eviction (honours PodDisruptionBudgets), with the pod's UID as a
  // precondition. The code says what happened:
  //   OK                  evicted (the pod is terminating);
  //   NotFound            already gone (or its name holds another pod): counts as evicted;
  //   ResourceExhausted   refused for now: a PodDisruptionBudget blocks it (HTTP 429);
  //   FailedPrecondition  this replica may not write (not the leader, shutting down);
  //   anything else       failed (transient or refused).
  virtual absl::Status Evict(const Pod& pod, std::string_view reason) = 0;
  // Tells an evicted pod why (status condition DisruptionTarget=True with `reason` and
  // `message`, as kube-scheduler marks its victims). Best effort; the pod may be gone already.
  virtual void MarkDisruptionTarget(const Pod& /*pod*/, std::string_view /*reason*/,
                                    std::string_view /*message*/) {}
  // A Kubernetes Event about the pod ("Normal"/"Warning", reason, message).
  virtual void RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                           std::string_view message) = 0;
  // A Kubernetes Event about another object, e.g. a Queue that does not get a namespace it
  // lists. Best effort; nothing by default (the bench reports such problems as warnings).
  virtual void RecordObjectEvent(const ObjectReference& /*object*/, std::string_view /*type*/,
                                 std::string_view /*reason*/, std::string_view /*message*/) {}
  // Volume binding's writes (VolumeBinding PreBind), answered like Bind's. Sets one annotation
  // on the claim (volume.kubernetes.io/selected-node) / the PV's spec.claimRef to the claim.
  // Unimplemented by default (fakes that never bind volumes).
  virtual absl::Status AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                                     std::string_view value);
  virtual absl::Status SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim);
  // DynamicResources PreBind: replaces the status of ResourceClaim namespace/name (its uid and
  // resourceVersion as preconditions, when set) with `status_json` (a ResourceClaimStatus:
  // allocation and reservedFor), answered like Bind's (a conflict is not retried here: the
  // pod's cycle is undone and it is scheduled again). Unimplemented by default.
  virtual absl::Status WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json);
  // DynamicResources PreBind, for a pod's extended resources backed by DRA (dra_extended.h):
  // creates the ResourceClaim `claim_json` (with metadata.generateName) in its namespace and
  // answers the claim as created (name, uid, resourceVersion). Unimplemented by default.
  virtual absl::StatusOr<ObjectMeta> CreateResourceClaim(const std::string& claim_json);
  // Deletes a ResourceClaim the scheduler created (its uid as a precondition), after taking away
  // the finalizer the status write gave it; a claim already gone counts as deleted.
  virtual absl::Status DeleteResourceClaim(const ObjectMeta& claim);
  // Sets the pod's status.extendedResourceClaimStatus (`status_json`), the pod's uid as a
  // precondition, before the bind (the kubelet reads it to hand the devices to the containers).
  virtual absl::Status WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json);
};

class Framework;

// Pods nominated to nodes, by node name.
using NominatedPodMap = StringKeyedMap<std::vector<PodRef>>;

// A Reserve plugin that holds a pod's place only because pods nominated earlier, of lower
// priority, yielded what they claim (a queue's quota: queue_quota.h) writes their keys under
// this key of the pod's CycleState (a std::vector<std::string>). Once the pod holds its node
// the scheduler drops their nominations, as a preemption drops the less important nominations
// on its node: a claim a more important pod outgrew would hold what nobody can use.
inline constexpr std::string_view kOutgrownNominationsKey = "OutgrownNominations";

// The nominations as one view shared between cycles: the pods by node, and per node a version
// that moves whenever the pods nominated there change (a verdict about a node beside its
// nominated pods holds while the node's generation and this version do).
struct Nominations {
  NominatedPodMap pods;
  StringKeyedMap<uint64_t> versions;
  // The node's version; 0 when nothing is nominated there.
  uint64_t VersionOf(std::string_view node) const {
    auto it = versions.find(node);
    return it == versions.end() ? 0 : it->second;
  }
};

// What a plugin may reach besides its arguments.
class Handle {
 public:
  virtual ~Handle() = default;
  // The snapshot of the cycle in progress.
  virtual const Snapshot& snapshot() const = 0;
  virtual const Clock& clock() const = 0;
  // May be null in unit tests that never bind or evict.
  virtual ClusterApi* api() const = 0;
  // Seed for plugins that randomise; runs are repeatable for a given seed.
  virtual uint64_t seed() const = 0;
  // Priority value of a PriorityClass by name, if known.
  virtual std::optional<int32_t> PriorityClassValue(std::string_view name) const = 0;
  // The team queues (tessel.io/v1alpha1 Queue) as last seen; null when nothing feeds them
  // (then no pod is in a queue). Hold the pointer for the whole cycle.
  virtual std::shared_ptr<const QueueDirectory> Queues() const { return nullptr; }
  // PVCs, PVs, StorageClasses and Namespaces as last seen (scheduler/state/cluster_objects.h);
  // null when nothing feeds them. Objects() is the view to hold for a whole cycle.
  virtual ClusterObjectStore* ObjectStore() const { return nullptr; }
  std::shared_ptr<const ClusterObjects> Objects() const {
    ClusterObjectStore* store = ObjectStore();
    return store == nullptr ? nullptr : store->view();
  }
  // Pods waiting for the node an earlier preemption nominated them to (status.nominatedNodeName),
  // by node name: the space their victims free is theirs (see Framework::RunFiltersWithNominatedPods).
  // Shared, not copied: hold it for the cycle.
  virtual std::shared_ptr<const Nominations> NominatedPods() const {
    return std::make_shared<const Nominations>();
  }
  // The PodDisruptionBudgets the scheduler knows (preemption counts the ones a victim violates).
  virtual std::vector<PodDisruptionBudget> PodDisruptionBudgets() const { return {}; }
  // The gang a pod belongs to (scheduler/gang: GangId::Key()), or "" for none: preemption
  // evicts a gang whole or not at all.
  virtual std::string GangKeyOf(const Pod& /*pod*/) const { return {}; }
  // The own DRA claims of the scheduling.k8s.io PodGroup the pod names (spec.schedulingGroup);
  // nullopt when it names none or the PodGroup is not known.
  virtual std::optional<PodGroupClaims> PodGroupClaimsOf(const Pod& /*pod*/) const { return std::nullopt; }
  // A pod's priority: spec.priority, else its PriorityClass's value, else the globalDefault
  // class's, else 0 (the core resolves pods on arrival; this also covers pods that arrived
  // before their class).
  virtual int32_t PriorityOf(const Pod& pod) const { return pod.PriorityValue(); }
  // No pod without spec.priority has a PriorityOf below this: min(0, the lowest PriorityClass
  // value). Preemption's index bounds such pods with it.
  virtual int32_t PriorityFloor() const { return 0; }
  // The profile that schedules pods of this schedulerName (preemption runs its filters); null
  // when unknown.
  virtual const Framework* FrameworkFor(std::string_view /*scheduler_name*/) const { return nullptr; }
  // Whether the pod was deleted (or its name taken by a new UID) since its cycle began: a
  // binding-cycle plugin that waits (PreBind) stops waiting for it.
  virtual bool PodEnded(const Pod& /*pod*/) const { return false; }
  // Every PriorityClass the scheduler knows: their annotations carry the disruption settings
  // (scheduler/preemption/disruption.h).
  virtual std::vector<PriorityClass> PriorityClasses() const { return {}; }
  // The record of moves and preemptions per workload (disruption_ledger.h); null when nothing
  // keeps one (then no move limit holds).
  virtual DisruptionLedger* disruptions() const { return nullptr; }
  // A preemption evicted the pod (the API server accepted): the scheduler counts it as
  // terminating at once, before the informer says so, so that no later cycle charges its
  // quota beside the nomination it made room for.
  virtual void PodEvicted(const Pod& /*pod*/) {}
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

// A pod waiting in the queue, with its queueing bookkeeping.
struct QueuedPodInfo {
  PodRef pod;
  absl::Time timestamp;         // when it (re-)entered the queue
  absl::Time initial_attempt;   // first time it was popped
  int attempts = 0;
};

class QueueSortPlugin : public virtual Plugin {
 public:
  virtual bool Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const = 0;
};

// Which pending pod goes next among groups of pods (the scheduling queue's NextPodChoice): pods
// of a group wait in the QueueSort order, and the plugin picks among the groups' heads, as Kueue
// picks among its ClusterQueues' heads. Like a victim policy it needs no extension point: being
// in the profile is enough (the first profile's serves the shared queue).
class PendingOrderPlugin : public virtual Plugin {
 public:
  // The pod's group. Depends on the pod alone: it runs on informer threads.
  virtual std::string PendingGroupOf(const Pod& pod) const = 0;
  // The index into `heads` (one per group, in the QueueSort order) of the pod to try next. Runs
  // on the scheduling loop's thread, between cycles, under the queue's lock. The snapshot may be
  // behind the cache: call `refresh_snapshot` before reading it (only when the choice needs it).
  virtual size_t ChooseNext(std::span<const QueuedPodInfo* const> heads,
                            absl::FunctionRef<void()> refresh_snapshot) = 0;
};

// A plugin that keeps a measure over time from what the cluster holds (QueueQuota's usage decay)
// and must look at the cluster while nothing is scheduled too: otherwise what ran before a quiet
// spell counts for the whole spell. Like a pending order it needs no extension point. Runs on the
// scheduling loop's thread between cycles, often (before every pop, and while idle at each wait);
// the plugin decides when a look is due. `refresh_snapshot` as for PendingOrderPlugin.
class TimekeeperPlugin : public virtual Plugin {
 public:
  virtual void Tick(absl::Time now, absl::FunctionRef<void()> refresh_snapshot) = 0;
};

class EnqueueExtensions : public virtual Plugin {
 public:
  // The events that may undo this plugin's rejection (default: any).
  virtual uint32_t EventsToRegister() const { return kAllEvents; }
  // Those of the events above after which this plugin's rejection can be undone only on a node
  // whose room (Cache::RoomOn: allocatable - requested, and the GPU room of
  // scheduler/gpu/gpu_devices.h) now holds what RoomNeed says (kube-scheduler's queueing hints
  // by resource): the queue keeps the pod parked when the event's node has less room.
  virtual uint32_t EventsHintedByRoom() const { return 0; }
  // What a node's room must hold for this plugin to pass the pod there (a necessary condition,
  // merged by maximum with the other rejecting plugins'); nothing: any room may help.
  virtual void AddRoomNeed(const Pod& /*pod*/, Resources& /*need*/) const {}
};

// Implemented by PreFilter plugins whose cycle state depends on other pods (what they use,
// where they run). Preemption's dry run removes victims (and re-adds reprieved ones) through
// these, so every filter sees the node and the cluster as they would be after the evictions.
class PreFilterExtensions {
 public:
  virtual ~PreFilterExtensions() = default;
  virtual Status AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                        const NodeInfo& node) const = 0;
  virtual Status RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                           const NodeInfo& node) const = 0;
};

class PreFilterPlugin : public virtual EnqueueExtensions {
 public:
  virtual Status PreFilter(CycleState& state, const Pod& pod) = 0;
  // Non-null when the plugin's state depends on other pods (see PreFilterExtensions).
  virtual const PreFilterExtensions* Extensions() const { return nullptr; }
};

class FilterPlugin : public virtual EnqueueExtensions {
 public:
  virtual Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const = 0;
  // Preemption's screen before a node's dry run: false only if Filter would reject `pod` on
  // `node` even after pods whose requests sum to `freed` left it (and others, nominated there,
  // came). The default: it may.
  virtual bool MayFitAfterFreeing(const CycleState& /*state*/, const Pod& /*pod*/, const NodeInfo& /*node*/,
                                  const Resources& /*freed*/) const {
    return true;
  }
};

// A filter whose rejection is kube-scheduler's short wording, the same on every node so that
// "0/N nodes are available" sums it, and which can say more about one node: why exactly (e.g.
// which claim, request and selector). The admin API's explain shows it.
class ExplainingFilterPlugin {
 public:
  virtual ~ExplainingFilterPlugin() = default;
  // "" when there is nothing more to say.
  virtual std::string ExplainRejection(const CycleState& state, const Pod& pod, const NodeInfo& node) const = 0;
};

using NodeStatusMap = StringKeyedMap<Status>;
// One distinct rejection and how many nodes gave it: a pod that fits nowhere is described by a
// few of these ("0/5000 nodes are available: ...") rather than by every node's.
struct NodeRejections {
  const Status* status;
  int64_t nodes;
};

// A pod a preemption evicts, and why it was eligible: "LowerPriority", or the reason a
// VictimPolicyPlugin gave (label of scheduler_preemption_victims{reason}).
struct PreemptionVictim {
  PodRef pod;
  std::string reason;
};

struct PostFilterResult {
  Status status;
  // Whether the pod's nomination changes: kNoop keeps what it has (e.g. it waits for victims
  // already leaving); kOverride sets `nominated_node` ("" clears it).
  enum class Nomination { kNoop, kOverride };
  Nomination nomination = Nomination::kNoop;
  std::string nominated_node;  // where the pod should go once its victims are gone
  std::vector<PreemptionVictim> victims;  // evicted for it
};

class PostFilterPlugin : public virtual Plugin {
 public:
  virtual PostFilterResult PostFilter(CycleState& state, const Pod& pod,
                                      const NodeStatusMap& filtered) = 0;
};

// A PostFilter plugin that makes room other than by priority preemption and reclaim (moves,
// reservations: docs/defrag.md), for a pod or a gang that fits nowhere. Such room frees no
// quota, and is never sought on a queue's earlier tiers first (node_tiers.h ChooseTier): there
// only the other PostFilter plugins run. A marker: it adds no extension point.
class NoFitPostFilterPlugin : public virtual Plugin {};

// A gang that falls short of room in the gang cycle: what the cycle asks of the profile's
// GangPostFilterPlugins, in postFilter order, until one makes room (the default profile:
// DefaultPreemption, then Consolidation's moves, then Reservation).
struct PendingGang {
  std::vector<PodRef> members;              // the pending members, the head first
  std::vector<const CycleState*> states;    // theirs, after PreFilter
  int32_t need = 0;                         // members still to place
  std::string topology_key;                 // a compact gang's node label ("" when none)
  std::shared_ptr<const Nominations> nominations;  // without the gang's own members
  bool may_preempt = true;                  // false: the gang's preemptionPolicy is Never
  // Only plugins that preempt (no NoFitPostFilterPlugin): its queue preempts on earlier tiers
  // before it takes a later one, and `below_tier` (node_tiers.h) bounds the tiers tried.
  bool preemption_only = false;
  std::optional<int64_t> below_tier;
  // Its quota holds it back: only evictions free quota, so it is preemption only too; the
  // NoFitPostFilterPlugins are still told (a reservation it holds ends, docs/defrag.md), but
  // make no room for it.
  bool quota_short = false;
};
// Where a member of a gang goes once room is made (nominated: it waits there meanwhile).
struct GangMemberTarget {
  PodRef member;
  std::string node;
};
struct GangPostFilterResult {
  std::vector<GangMemberTarget> targets;
  std::vector<PreemptionVictim> victims;  // evicted (some, when an eviction was refused)
  bool refused = false;                   // a PodDisruptionBudget or the API refused one
  std::string message;                    // for the gang's status: what was done, or why not
};
// A PostFilter plugin that can also make room for a whole gang (plugins/default_preemption,
// plugins/consolidation, plugins/reservation).
class GangPostFilterPlugin : public virtual Plugin {
 public:
  virtual GangPostFilterResult PostFilterGang(const PendingGang& gang) = 0;
};

// A plugin whose rejections mean that a team's quota is short, not the cluster: a pod that only
// such plugins rejected is reported as over quota (not Unschedulable, which cluster autoscalers
// act on), and explanations point at the quota. A marker: it adds no extension point.
class QuotaPlugin : public virtual Plugin {};

// Who may be evicted for whom, beyond "lower priority". Asked by preemption for every
// potential victim; the first plugin that does not defer decides.
enum class VictimVerdict { kDefer, kAllow, kDeny };
class VictimPolicyPlugin : public virtual Plugin {
 public:
  // kAllow: the victim may be evicted even if its priority is not lower (reclaim of quota it
  // borrows); kDeny: it may not be, even if it is lower; kDefer: the priority rule decides.
  // `reason` (out) labels scheduler_preemption_victims{reason=...} when this plugin allowed it.
  virtual VictimVerdict MayEvict(const CycleState& state, const Pod& preemptor,
                                 const Pod& victim, std::string* reason) const = 0;
  // Whether MayEvict could allow any victim of priority >= `priority` for this preemptor (true
  // unless the plugin knows better). Preemption skips the nodes whose pods all have such
  // priorities when no policy could allow one.
  virtual bool MayAllowAtOrAbove(const CycleState& /*state*/, const Pod& /*preemptor*/,
                                 int32_t /*priority*/) const {
    return true;
  }
  // Whether MayEvict answers kDefer for every victim of this preemptor, whatever the cluster
  // holds (false unless the plugin knows better). Preemption keeps its dry runs' answers between
  // cycles only then: the priority rule reads nothing but the pods.
  virtual bool DefersEvery(const CycleState& /*state*/, const Pod& /*preemptor*/) const { return false; }
};

class PreScorePlugin : public virtual Plugin {
 public:
  virtual Status PreScore(CycleState& state, const Pod& pod,
                          const std::vector<const NodeInfo*>& feasible) = 0;
};

struct NodeScore {
  std::string name;
  int64_t score = 0;
};
using NodeScoreList = std::vector<NodeScore>;

struct ScoreResult {
  int64_t score = 0;
  Status status;
};

class ScorePlugin : public virtual Plugin {
 public:
  virtual ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const = 0;
  // Rescales the raw scores of all feasible nodes into 0..100 (default: they already are).
  virtual Status NormalizeScore(const CycleState&, const Pod&, NodeScoreList&) const {
    return Status::Ok();
  }
};

// Runs once a node is chosen, before the cache assumes the pod there, on the copy of the pod
// the cache will account: a plugin records placement details the accounting must honour, e.g.
// which GPU devices (the tessel.io/gpu-devices annotation). Every plugin of the profile that
// implements it runs, in the order the profile first names them; it needs no configuration.
class PreAssumePlugin : public virtual Plugin {
 public:
  virtual Status PreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) = 0;
};

class ReservePlugin : public virtual Plugin {
 public:
  virtual Status Reserve(CycleState& state, const Pod& pod, const std::string& node) = 0;
  virtual void Unreserve(CycleState& state, const Pod& pod, const std::string& node) = 0;
};

struct PermitResult {
  Status status;               // Success, Wait, or a rejection
  absl::Duration timeout;      // for Wait
};

class PermitPlugin : public virtual Plugin {
 public:
  virtual PermitResult Permit(CycleState& state, const Pod& pod, const std::string& node) = 0;
};

class PreBindPlugin : public virtual Plugin {
 public:
  virtual Status PreBind(CycleState& state, const Pod& pod, const std::string& node) = 0;
};

class BindPlugin : public virtual Plugin {
 public:
  // Skip passes the pod to the next bind plugin.
  virtual Status Bind(CycleState& state, const Pod& pod, const std::string& node) = 0;
};

}  // namespace tessel
