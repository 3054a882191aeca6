// An in-memory Kubernetes for the bench: it implements ClusterApi (binds with their annotations,
// evictions, events, volume and DRA claim writes) and observes the scheduler's outcomes, so
// `tessel-bench` runs the very same Scheduler as the live binary, with a virtual clock and no
// network. It also plays the controllers a bind relies on: the PV controller and provisioner for
// volumes, and the resourceclaim controller, which releases a DRA claim when its pods end.
//
//   SimulatedCluster sim(&clock);
//   ASSIGN_OR_RETURN(auto s, Scheduler::New({..., .api = &sim, .observer = &sim}));
//   sim.Attach(s.get());
//   sim.Load(objects);          // nodes, priority classes, running and pending pods, ...
//   sim.RunUntilIdle();
//   sim.placements();           // "ns/name" -> node ("" when not placed)
//   sim.EndPod("team-a/train"); // it finished: what it held (its DRA claims too) comes free
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "scheduler/api/decode.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/util/clock.h"

namespace tessel::bench {

class SimulatedCluster final : public ClusterApi,
                               public SchedulingObserver,
                               public gang::GangStatusSink {
 public:
  explicit SimulatedCluster(ManualClock* clock) : clock_(clock) {}
  void Attach(Scheduler* scheduler) { scheduler_ = scheduler; }

  // Feeds objects to the scheduler: priority classes and PodDisruptionBudgets first, then nodes,
  // then the volume kinds, team Queues, gang objects (PodGroups, Workloads, Jobs) and DRA objects
  // (resource.k8s.io/v1 ResourceSlices, DeviceClasses, ResourceClaims), then pods. Pending pods
  // of a Tessel profile are recorded as awaiting a placement, in queue order. Returns a warning
  // for every object of `others` that is not a kind replay reads or does not decode, naming it
  // and the field. A DRA object that does not decode is kept all the same, as the live
  // informers keep it: the DynamicResources plugin then fails closed on it.
  std::vector<std::string> Load(const ObjectList& objects) { return LoadObjects(objects, nullptr); }
  // The same, handing the pods over instead of copying them (`objects.pods` is left empty).
  std::vector<std::string> Load(ObjectList&& objects) { return LoadObjects(objects, &objects.pods); }
  // Schedules until no pod is ready; pods in backoff are waited for on the virtual clock.
  // Stops after `max_cycles` attempts in all.
  void RunUntilIdle(int64_t max_cycles = 0);
  // The pod ("ns/name") finished or was deleted: the scheduler is told it is gone, and, as the
  // resourceclaim controller does, it leaves the reservedFor of its namespace's ResourceClaims; a
  // claim that no pod reserves any more loses its allocation, so its devices are free again. The
  // claims the pod owns (made from a template or for its extended resources) are deleted, as the
  // garbage collector deletes them.
  void EndPod(std::string_view key);

  // ClusterApi
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap& annotations) override;
  absl::Status Evict(const Pod& pod, std::string_view reason) override;
  void RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                   std::string_view message) override;
  // Volume binding: the simulated cluster plays the provisioner and the PV controller, so a
  // claim binds as soon as the scheduler wrote to it. A claim annotated with a selected node
  // gets a new PV of its size and class, pinned to the node's values of the class's
  // allowedTopologies keys (no nodeAffinity when the class has none); a PV given a claimRef is
  // bound to that claim.
  absl::Status AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                             std::string_view value) override;
  absl::Status SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) override;
  // DynamicResources PreBind: the claim's status members in `status_json` replace the claim's
  // (a null one is removed, as the merge patch live does) and the claim gets a new
  // resourceVersion. NotFound when the claim is gone; AlreadyExists (the API server's HTTP 409)
  // when its uid or resourceVersion is not the precondition's.
  absl::Status WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) override;
  // The claim DynamicResources makes for a pod's extended resources served by DRA: stored with a
  // name (generateName and a counter), uid and resourceVersion; deleted (uid precondition; a
  // claim already gone counts as deleted). The pod's status.extendedResourceClaimStatus is for
  // the kubelet: only the pod's identity is checked.
  absl::StatusOr<ObjectMeta> CreateResourceClaim(const std::string& claim_json) override;
  absl::Status DeleteResourceClaim(const ObjectMeta& claim) override;
  absl::Status WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json) override;
  // SchedulingObserver
  void PodScheduled(const Pod& pod, const std::string& node) override;
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override;
  // GangStatusSink
  void GangStatusChanged(const gang::GangId& id, const gang::GangStatusUpdate& update) override;

  // Every pending pod of ours: its node, or "" if it was not placed.
  const std::map<std::string, std::string>& placements() const { return placements_; }
  // The last failure message of each pod that is not placed.
  std::map<std::string, std::string> reasons() const;
  // Every pod evicted (preemption, gang rollback), in order.
  const std::vector<std::string>& evicted() const { return evicted_; }
  // Evictions a PodDisruptionBudget refused (HTTP 429 live).
  int64_t evictions_refused() const { return evictions_refused_; }
  const std::map<std::string, StringMap>& annotations() const { return annotations_; }
  int64_t cycles() const { return cycles_; }
  // Claims the scheduler bound during the run: "ns/name" -> {selected node ("" for a static
  // match), PV}.
  struct ClaimOutcome {
    std::string selected_node;
    std::string volume;
  };
  const std::map<std::string, ClaimOutcome>& claims() const { return claims_; }
  // The last status reported for each gang, by GangId::Describe().
  const std::map<std::string, gang::GangStatusUpdate>& gangs() const { return gangs_; }

 private:
  std::vector<std::string> LoadObjects(const ObjectList& objects, std::vector<Pod>* movable_pods);
  // A DRA object of `others` (simulated_claims.cc): stored raw, as the informers store it, with a
  // warning when it does not decode. Nothing when the object is of no DRA kind.
  std::optional<std::vector<std::string>> LoadDraObject(const nlohmann::json& object);
  // A ResourceClaim changed by the simulated cluster: stored with a new resourceVersion, returned.
  std::string PutClaim(nlohmann::json claim);
  // The controllers' part when pod namespace/name (uid, "" when unknown) ends: the claims it owns
  // are deleted, the others no longer reserved for it.
  void ReleaseClaims(std::string_view namespace_, std::string_view name, std::string_view uid);

  ManualClock* clock_;
  Scheduler* scheduler_ = nullptr;
  // Every pod we know, by key: the unbound ones whole (a bind reads them), the bound ones by
  // their node and uid only (the scheduler's cache holds the object; a copy here doubled the
  // memory).
  struct BoundPod {
    std::string node;
    std::string uid;
  };
  std::map<std::string, PodRef, std::less<>> unbound_;
  std::map<std::string, BoundPod, std::less<>> bound_;
  std::map<std::string, std::string> placements_;
  std::map<std::string, std::string> last_failure_;
  std::vector<std::string> evicted_;
  // PodDisruptionBudgets by namespace/name: an eviction of a pod a budget covers is refused when
  // its status.disruptionsAllowed is 0, and uses one up otherwise (the disruption controller's
  // bookkeeping, simplified: budgets are not replenished when replacements start).
  std::map<std::string, PodDisruptionBudget> pdbs_;
  int64_t evictions_refused_ = 0;
  std::map<std::string, StringMap> annotations_;
  int64_t cycles_ = 0;
  std::map<std::string, gang::GangStatusUpdate> gangs_;
  std::map<std::string, ClaimOutcome> claims_;
  // The last resourceVersion the simulated cluster gave (above every numeric one loaded).
  uint64_t resource_version_ = 0;
  int64_t claims_created_ = 0;
};

}  // namespace tessel::bench
