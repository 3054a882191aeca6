// DynamicResources (PreFilter, Filter, Reserve, PreBind): kube-scheduler's plugin of that name,
// which allocates Dynamic Resource Allocation (DRA, resource.k8s.io/v1) claims. It reads the
// ResourceSlices, DeviceClasses and ResourceClaims the informers keep as JSON in the cluster-object
// store (Handle::Objects) and decodes them with scheduler/dra.
//   - PreFilter resolves the pod's claims: spec.resourceClaims[].resourceClaimName, or for a
//     template the claim status.resourceClaimStatuses names. A claim not made yet or not found
//     makes the pod wait (Unresolvable, the claim named; a ResourceClaim change requeues it).
//     Devices held by claims allocated by anyone, and by allocations this plugin made and has
//     not seen come back from the informer, count as in use.
//   - Filter runs the allocator (scheduler/dra/allocator.h) on the node: the claims' requests
//     must all be satisfied there, else "cannot allocate all claims"; a claim allocated already
//     to devices the node cannot use: "resourceclaim not available on the node".
//   - Device choice and scores follow the GPU policy (scheduler/framework/dra_gpu_units.h): with
//     FGD or Tessel in the profile, Score and Reserve choose among up to 16 allocations the one
//     that leaves the node's GPU units (each partitionable GPU, each device without partitions)
//     the least expected fragmentation under the policy's target workload
//     (dra::LeastFragmentation), and the policy scores DRA nodes by the same gradient as
//     device-plugin nodes (UnitsOn), so a pod either kind could serve is placed in one cluster;
//     this plugin's PreScore then skips. Without such a policy, Score packs: dra::PackingScore
//     of the allocation the node would get, chosen by dra::KeepWholeDevices (whole
//     partitionable GPUs and whole devices kept), as Reserve chooses it.
//   - Reserve allocates on the chosen node and records the allocation in memory, so the next
//     pods see its devices taken; Unreserve forgets it (and undoes a status write PreBind made).
//   - PreBind writes each claim's status (ClusterApi::WriteResourceClaimStatus): the new
//     allocation, and reservedFor with the pod added. A claim already allocated keeps its devices
//     and only gains the pod in reservedFor.
//   - A scheduling.k8s.io PodGroup's own claims (spec.resourceClaims, DRAWorkloadResourceClaims):
//     a pod whose entry equals one of them shares it with the group; it is reserved for the
//     PodGroup (Handle::PodGroupClaimsOf gives its uid), allocated once: a member reserved after
//     another takes that one's allocation (in flight) and writes nothing, and AddPod allocates a
//     claim the other pod shares with this one on the other pod's node, in this pod's view.
// Extended resources backed by DRA (scheduler/framework/dra_extended.h): PreFilter finds the
// DeviceClasses that serve the pod's extended resources (spec.extendedResourceName, or the
// implicit deviceclass.resource.kubernetes.io/<class>; of two classes naming one resource the
// newer wins, as in kube-scheduler) and tells NodeResourcesFit and GpuShare to leave them alone on
// nodes whose allocatable has none. On such a node Filter allocates them too, as one more claim
// (scheduler/dra/extended_resources.h); PreBind creates that claim (owned by the pod), writes its
// allocation and sets the pod's status.extendedResourceClaimStatus; Unreserve deletes it. A claim
// left from an earlier attempt (its pod was not bound) is deleted and the pod waits for that.
// A DRA object that does not decode fails closed: a pod that needs it waits, told the object and
// the field. An undecodable ResourceSlice makes its pool invalid wherever it is seen (its devices
// are unknown; dra::SliceIdentity), the other pools serving as before; only one whose driver or
// pool cannot be read, or an undecodable allocated ResourceClaim (its devices cannot be
// counted), holds every pod with claims. "cannot allocate all claims" is resolvable (Unschedulable):
// preemption frees the devices of its victims' claims (RemovePod); the other rejections are not.
//
//   Status st = plugin.PreFilter(state, pod);  // Skip without claims
#pragma once

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/dra/allocator.h"
#include "scheduler/dra/cel_matcher.h"
#include "scheduler/dra/extended_resources.h"
#include "scheduler/framework/dra_gpu_units.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::dynamic_resources {

// Filter's rejections, in kube-scheduler's words.
inline constexpr std::string_view kReasonCannotAllocate = "cannot allocate all claims";
inline constexpr std::string_view kReasonNotAvailable = "resourceclaim not available on the node";

// The pod's claims, resolved and decoded, and what the rest of the cluster holds: the cycle's
// view, shared (read-only) between the cycle's Filter calls and its clones.
struct PodClaims {
  std::shared_ptr<const ClusterObjects> objects;  // keeps the JSON the decoded objects came from
  std::vector<std::shared_ptr<const dra::ResourceSlice>> slices;
  dra::DeviceClasses classes;
  dra::AllocatedDevices allocated;  // devices held by every other allocation
  // The pod's claims, each once, in spec order; an allocation recorded in memory is applied.
  std::vector<dra::ResourceClaim> claims;
  // Per claim, whom PreBind reserves it for: the pod, or its scheduling.k8s.io PodGroup when the
  // pod's entry is one of the PodGroup's spec.resourceClaims (DRAWorkloadResourceClaims).
  std::vector<dra::ConsumerReference> bind_to;
  // The pod's extended resources DeviceClasses serve: resource -> class.
  std::map<std::string, std::string, std::less<>> extended;
  // Claims of other pods this cycle placed beside the pod (AddPod: a gang's members, nominated
  // pods), their devices in `allocated`.
  std::set<std::string, std::less<>> added;
  // The in-flight allocations PreFilter counted (in `allocated`, or on the pod's own claims).
  // Reserve counts the ones made since (a gang's members are reserved one after another, each
  // from a state made before the first was).
  std::set<std::string, std::less<>> in_flight_counted;
  // Pods this cycle took off their nodes (RemovePod: preemption's victims), by UID, and their
  // allocated claims whose devices that freed (every pod the claim is reserved for is removed).
  std::set<std::string, std::less<>> removed_pods;
  std::map<std::string, dra::AllocationResult, std::less<>> freed;
};

// The claim for the pod's extended resources on one node, before it exists.
struct ExtendedClaim {
  dra::ResourceClaim claim;  // named "<extended-resources>" until PreBind creates it
  dra::ExtendedResourceClaim requests;
};

// What Reserve chose, for PreBind and Unreserve.
struct Reservation {
  std::vector<dra::ResourceClaim> claims;             // as PreFilter resolved them
  std::vector<dra::ConsumerReference> bind_to;        // per claim (PodClaims::bind_to)
  std::vector<dra::AllocationResult> allocations;     // one per claim (kept or new)
  std::vector<bool> newly_allocated;                  // per claim
  std::vector<bool> written;                          // per claim: PreBind wrote its status
  // The claim for extended resources, when the node serves some through DRA.
  std::optional<ExtendedClaim> extended;
  std::optional<dra::AllocationResult> extended_allocation;
  std::optional<ObjectMeta> extended_created;  // PreBind created it
};

class DynamicResources final : public PreFilterPlugin, public FilterPlugin, public PreScorePlugin,
                               public ScorePlugin, public ReservePlugin, public PreBindPlugin,
                               public NodeLocalPlugin, public ExplainingFilterPlugin, public DraGpuUnits {
 public:
  static constexpr std::string_view kName = "DynamicResources";
  static absl::StatusOr<std::unique_ptr<DynamicResources>> New(Handle& handle);  // takes no args
  explicit DynamicResources(Handle& handle) : handle_(handle), ids_(handle.seed()) {}
  std::string_view Name() const override { return kName; }
  // Slices, classes and claims coming or changing; nodes coming or relabelled.
  uint32_t EventsToRegister() const override { return kResourceChange | kNodeAdd | kNodeUpdate; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  // AddPod: the claims of a pod placed beside this one in the cycle (a gang's earlier members, a
  // pod nominated to the node) are allocated on that node in the cycle's view, so the devices
  // they need are not counted free for this pod; a pod RemovePod took off comes back with its
  // devices. RemovePod (preemption's victims): an allocated claim whose every consumer is
  // removed frees its devices in the cycle's view, so preemption frees DRA devices. A moved
  // pod's replacement (the same name, another UID: preemption/moves.cc) told its running self is
  // removed has the claims that pod owned alone unallocated (made anew), and a template claim a
  // removal freed is allocated again on the node a pod of its owner's name is added to.
  const PreFilterExtensions* Extensions() const override { return &others_; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // The allocator's own reason on the node: the claim, the request and what failed (a selector,
  // devices in use, counters, constraints), for explain.
  std::string ExplainRejection(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // Skip unless PreFilter found claims or extended resources to allocate, and when a GPU policy
  // scores them (its workload is in the state).
  Status PreScore(CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>& feasible) override;
  // dra::PackingScore of the allocation Reserve would make on the node (0 where the pod needs no
  // DRA device there).
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // The decision cache may serve pods PreScore skips; the others' scores read the cluster's
  // claims, which no key holds (node_local.h).
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  // The node's GPU units before and after the allocation Reserve would make there under `workload`.
  std::optional<GpuUnitsOnNode> UnitsOn(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                        const gpu::FragModel& workload) const override;
  Status Reserve(CycleState& state, const Pod& pod, const std::string& node) override;
  void Unreserve(CycleState& state, const Pod& pod, const std::string& node) override;
  Status PreBind(CycleState& state, const Pod& pod, const std::string& node) override;

  // Claims (namespace/name) with an allocation recorded in memory and not yet seen allocated
  // from the informer. For tests and metrics.
  size_t InFlight() const;
  // ResourceSlices decoded since the plugin started (each version once). For tests.
  int64_t SlicesDecoded() const;

 private:
  struct InFlightAllocation {
    dra::AllocationResult allocation;
    std::string pod_uid;
    // Whom the reserving pod's PreBind reserves the claim for (its pod, or its PodGroup): another
    // pod that shares the claim (a member of that PodGroup) sees it reserved already.
    dra::ConsumerReference consumer;
    // An extended-resource claim not created yet, or created but not yet seen by the informer:
    // its absence from the store does not mean it is gone.
    bool awaiting_creation = false;
    // The claim's resourceVersion when it was reserved (for a created claim: as created).
    std::string reserved_version;
    // A created claim's UID: the informer's delete of it ends the record at once.
    std::string created_uid;
    // PreBind wrote the allocation (and the finalizer before it), at `written_at`.
    bool written = false;
    absl::Time written_at;
  };
  // Whether the informer's copy of the claim (null: none) says the record is no longer needed:
  // the claim is allocated there (the store counts its devices), gone, or released after the
  // write (a newer version with no allocation and no kube-scheduler finalizer: the
  // resourceclaim controller deallocated it once its pods ended, possibly before any PreFilter
  // saw it allocated). A created claim the informer never showed counts as gone when the
  // informer deleted it (`deleted`: made and deleted between two looks), else
  // kUnseenCreatedLimit after its write.
  bool RecordDone(const InFlightAllocation& record, const RawObject* stored, bool allocated, bool deleted) const;
  static constexpr absl::Duration kUnseenCreatedLimit = absl::Minutes(5);
  // ... and sooner, once kUnseenCreatedGrace has passed, when its pod is no longer in the
  // snapshot (it ran and ended while its claim was made and deleted between two looks).
  static constexpr absl::Duration kUnseenCreatedGrace = absl::Seconds(2);
  // Marks the in-flight record of claim `key` written.
  void MarkWritten(const std::string& key);
  // The claim for the pod's extended resources that `node` serves through DRA; nullopt when the
  // node serves none of them that way.
  std::optional<ExtendedClaim> ExtendedClaimOn(const PodClaims& claims, const Pod& pod, const Node& node) const;
  // Filter asks only whether the claims fit (the first allocation found, no share IDs); Score and
  // Reserve choose among up to kAlternatives allocations by dra::KeepWholeDevices.
  enum class Purpose { kFit, kChoose, kReserve };
  static constexpr int kAlternatives = 16;
  // `choice` (kChoose, kReserve): nullptr takes dra::KeepWholeDevices.
  absl::StatusOr<dra::AllocationOutcome> AllocateOn(const PodClaims& claims, const ExtendedClaim* extended,
                                                     const Node& node, Purpose purpose,
                                                     dra::NodeDevices* gathered = nullptr,
                                                     const dra::DeviceChoice* choice = nullptr) const;
  // Score's and Reserve's device choice on a node: dra::LeastFragmentation under the GPU
  // policy's workload (the node's CPU after the pod), else `fallback`.
  class NodeChoice {
   public:
    NodeChoice(const CycleState& state, const Pod& pod, const NodeInfo& info, const dra::DeviceChoice& fallback);
    NodeChoice(const gpu::FragModel* workload, const Pod& pod, const NodeInfo& info,
               const dra::DeviceChoice& fallback);
    NodeChoice(const NodeChoice&) = delete;
    NodeChoice& operator=(const NodeChoice&) = delete;
    const dra::DeviceChoice* get() const { return choice_; }

   private:
    std::optional<dra::LeastFragmentation> fgd_;
    const dra::DeviceChoice* choice_;
  };
  // `claims` with the devices of allocations reserved since its PreFilter (in flight, not counted
  // there, not the pod's own, not added by AddPod) taken too.
  std::shared_ptr<const PodClaims> WithLaterReservations(std::shared_ptr<const PodClaims> claims, const Pod& pod) const;
  // The key of the in-flight record of a pod's extended-resource claim before it is created.
  static std::string PendingExtendedKey(const Pod& pod);
  // PreBind of the extended-resource claim: create it, write its allocation and reservedFor, and
  // the pod's status.extendedResourceClaimStatus.
  Status CreateExtendedClaim(Reservation& r, const Pod& pod, ClusterApi& api);
  std::string NewShareId() const;

  // The slices as decoded, by key: a slice is decoded again only when the store holds another
  // JSON for it (an update replaces the shared JSON; holding it keeps its address from reuse).
  struct DecodedSlice {
    std::shared_ptr<const nlohmann::json> source;
    absl::StatusOr<std::shared_ptr<const dra::ResourceSlice>> slice;
  };
  // Every current slice, decoded (from the cache where it is still current); the first that does
  // not decode is the error. Entries of slices gone are dropped.
  absl::StatusOr<std::vector<std::shared_ptr<const dra::ResourceSlice>>> Slices(const ClusterObjects& objects);

  class OtherPods final : public PreFilterExtensions {
   public:
    explicit OtherPods(const DynamicResources* plugin) : plugin_(plugin) {}
    Status AddPod(CycleState& state, const Pod& to_schedule, const Pod& other, const NodeInfo& node) const override {
      return plugin_->AddOtherPod(state, to_schedule, other, node);
    }
    Status RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other, const NodeInfo& node) const override {
      return plugin_->RemoveOtherPod(state, to_schedule, other, node);
    }

   private:
    const DynamicResources* plugin_;
  };
  Status AddOtherPod(CycleState& state, const Pod& to_schedule, const Pod& other, const NodeInfo& node) const;
  Status RemoveOtherPod(CycleState& state, const Pod& to_schedule, const Pod& other, const NodeInfo& node) const;
  // Frees in `view` the devices of allocated claims that only the node's terminating pods hold;
  // false when there are none.
  bool ReleaseTerminating(PodClaims& view, const ClusterObjects& objects, const NodeInfo& node) const;
  // The other pod's claims that are allocated: those it names, and the one made for its
  // extended resources.
  std::vector<dra::ResourceClaim> AllocatedClaimsOf(const ClusterObjects& objects, const Pod& other) const;

  Handle& handle_;
  OtherPods others_{this};
  dra::CelDeviceMatcher matcher_;
  dra::KeepWholeDevices keep_whole_;
  mutable absl::Mutex slices_mu_;
  std::map<std::string, DecodedSlice, std::less<>> decoded_slices_ ABSL_GUARDED_BY(slices_mu_);
  int64_t slices_decoded_ ABSL_GUARDED_BY(slices_mu_) = 0;
  mutable absl::Mutex mu_;
  std::map<std::string, InFlightAllocation, std::less<>> in_flight_ ABSL_GUARDED_BY(mu_);
  mutable std::mt19937_64 ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::dynamic_resources
