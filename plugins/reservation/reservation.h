// Reservation (PreFilter, Filter, PostFilter, Reserve): room for a pod that keeps losing it to
// smaller pods (docs/defrag.md, "Reservation"). When the pod that has waited longest at its
// priority level has waited `waitSeconds`, the node closest to fitting it is reserved for it:
// while the reservation holds, a pod of no higher priority is placed there only if it leaves
// the holder's need covered, so smaller pods keep landing elsewhere (and beside the holder
// where there is room for both) while the node drains towards the holder.
//
//   waiting   every pod whose attempt failed (this PostFilter runs after preemption and
//             consolidation did not help) is a waiter of its priority level, since its first
//             failure; the head of a level is its longest waiter (ties by namespace/name). A
//             pod its quota holds back (the quota plugins' filters pass it on no node) is no
//             waiter: its attempt renews nothing, ends its wait and releases its reservation.
//   reserve   at its own failed attempt, a head that waited `waitSeconds` and has no
//             nomination gets the level's one reservation: among the nodes that rejected it
//             as resolvable (not UnschedulableAndUnresolvable), that its quota plugins pass,
//             not reserved for another level, and whose allocatable could hold it, the one
//             whose shortfall (the holder's need, as the profile's filters state it for the
//             queue's room hints, less the node's room) is smallest: GPUs, then cpu, then
//             memory, then the rest;
//             ties by node name. A flavored pod is offered its tiers in turn (node_tiers.h):
//             it reserves in the first tier that has such a node, and keeps that node while
//             later tiers are tried.
//   filter    on a reserved node, a pod other than the holder whose priority is not higher is
//             rejected when taking what it asks (a fraction counted as taking a whole free
//             GPU) would leave less room than the holder needs in a resource the holder needs;
//             not on the node it is nominated to (a preemption or moves promised it the room).
//   release   the holder is placed (Reserve, on any node): "Placed"; the node is gone or can
//             no longer hold it, or its own filters reject it there as unresolvable (whatever
//             tier the attempt tries): "NoFit"; its quota holds it back, everywhere or on the
//             node: "QuotaExceeded"; the holder has not failed an attempt for 10 minutes (the
//             queue retries a waiting pod at least every 5): "Expired", which is how a deleted
//             holder or one nominated by a preemption lets go.
//
// Gangs (PostFilterGang, asked by the gang cycle after gang preemption and moves found no room):
// a gang waits like a pod, under its gang key, from the first attempt its plan fell short; at
// the head of its level after `waitSeconds` it reserves, in one go, a node for each member still
// to place (several members may share one): each member in turn takes the candidate node where
// the members' shortfall there grows least (ties: a node already reserved for the gang, then by
// name); a compact gang's nodes lie in one `tessel.io/topology-key` domain, and a flavored
// gang's in one tier (its queue's flavor), the pair with the least total shortfall. Candidates
// are the nodes a member's filters accept or reject as resolvable. The gang's members pass its
// reserved nodes; others are filtered against what the members reserved there need together.
// A member's Reserve step releases the gang's reservation ("Placed"); a member its quota holds
// back ends the gang's wait and reservation ("QuotaExceeded").
//
// Only pods (and gangs, counting their pending members) that ask for at least `minPodGpus` GPUs
// wait for a reservation: smaller pods are not starved by smaller ones, and a 1-GPU head would
// hold a whole node for one GPU. Time is the handle's clock.
//
// Args: waitSeconds (>= 0; 0, the default, turns the plugin off: on the shipped trace scenarios
// a reservation after 300 s made delays and allocation worse, docs/defrag.md); minPodGpus
// (0..1024, default 0: any pod).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::reservation {

struct ReservationArgs {
  int64_t wait_seconds = 0;
  int64_t min_pod_gpus = 0;
};

// Why a reservation ended (label of tessel_reservations_released_total{reason}).
inline constexpr std::string_view kPlaced = "Placed";
inline constexpr std::string_view kNoFit = "NoFit";
inline constexpr std::string_view kExpired = "Expired";
inline constexpr std::string_view kQuotaExceeded = "QuotaExceeded";

// A reserved node, the holder's pods that would go there, and what they need of its room together.
struct ReservedNode {
  std::string node;
  std::vector<std::string> pods;  // namespace/name
  Resources need;
};
// A pod to reserve for: what it needs of a node's room, and the nodes it may take.
struct MemberCandidates {
  std::string pod;  // namespace/name
  Resources need;
  std::vector<const NodeInfo*> nodes;
};
// One reservation, as explain and the tests read it.
struct Held {
  std::string holder;  // namespace/name, or a gang's key (scheduler/gang: GangId::Key())
  bool gang = false;
  std::string uid;     // a pod's ("" for a gang)
  int32_t priority = 0;
  std::vector<ReservedNode> nodes;  // one for a pod
  absl::Time since;     // the holder's first failed attempt
  absl::Time reserved;  // when the nodes were reserved
};

// Counts for the metrics, read from any thread.
struct ReservationFigures {
  int64_t active = 0;
  int64_t made = 0;
  std::map<std::string, int64_t, std::less<>> released;  // by reason
};

class Reservation final : public PreFilterPlugin,
                          public FilterPlugin,
                          public PostFilterPlugin,
                          public NoFitPostFilterPlugin,
                          public GangPostFilterPlugin,
                          public ReservePlugin,
                          public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "Reservation";
  using Args = ReservationArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<Reservation>> New(Args args, Handle& handle);
  Reservation(Handle& handle, Args args)
      : handle_(handle), wait_(absl::Seconds(args.wait_seconds)), min_gpu_milli_(args.min_pod_gpus * 1000) {}
  std::string_view Name() const override { return kName; }

  // A rejection is undone by a release (the holder placed, a node changed) or by room freed.
  uint32_t EventsToRegister() const override {
    return kAssignedPodAdd | kAssignedPodDelete | kNodeAdd | kNodeUpdate;
  }
  // Releases what lapsed or no longer fits; Skip when no reservation applies to the pod.
  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // Records the pod's wait and, for a head that waited long enough, reserves a node. Never
  // places or nominates anything: always Unschedulable.
  PostFilterResult PostFilter(CycleState& state, const Pod& pod, const NodeStatusMap& filtered) override;
  // The same for a gang: never evicts; the message says what is reserved for it.
  GangPostFilterResult PostFilterGang(const PendingGang& gang) override;
  // The pod is placed: it waits no more, and its reservation ends.
  Status Reserve(CycleState& state, const Pod& pod, const std::string& node) override;
  void Unreserve(CycleState&, const Pod&, const std::string&) override {}

  // Filter reads what the pod takes and which reservations apply to it (both in the key), and
  // the reservations themselves (their version).
  bool AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  int64_t ResultVersion() const override { return version_; }

  // The reservations in force, by priority level (scheduling thread).
  const std::map<int32_t, Held>& held() const { return held_; }
  ReservationFigures figures() const;

 private:
  struct Waiter {
    std::string uid;
    int32_t priority = 0;
    absl::Time since;
    absl::Time last_failed;
  };
  // Notes the holder's failed attempt now; returns its record.
  const Waiter& NoteFailure(const std::string& key, const std::string& uid, int32_t priority, absl::Time now);
  // The pod waits no more; its reservation, if any, ends for `reason`.
  void Forget(const std::string& key, std::string_view reason);
  // Drops waiters that have not failed within the lease, and reservations that lapsed with them
  // or no longer fit their node.
  void Refresh(absl::Time now);
  bool IsHead(const std::string& key, const Waiter& w) const;
  // Whether the holder may reserve now: it waited long enough at the head of its level.
  bool MayReserve(const std::string& key, const Waiter& w, absl::Time now) const;
  // The member candidates of a gang (empty when a quota holds it back or a member has none).
  std::vector<MemberCandidates> GangCandidates(const Framework& fw, const PendingGang& gang) const;
  // Why the holder's reserved node is lost to it (kNoFit, kQuotaExceeded), or "" when it is kept:
  // its own filters on the node, whatever tier of its queue the attempt is trying.
  std::string_view LostNode(const Framework& fw, const CycleState& state, const Pod& pod, const std::string& node) const;
  // Whether the quota plugins pass the pod on some node (its quota does not hold it back).
  bool QuotaAdmitsSomewhere(const Framework& fw, const CycleState& state, const Pod& pod) const;
  // Whether the members of `candidates` together pass the quota plugins' filters (room aside).
  bool QuotaHolds(const Framework& fw, const PendingGang& gang, const std::vector<MemberCandidates>& candidates) const;
  // Whether node is free to reserve and could ever hold `need`.
  bool Reservable(const NodeInfo* node, const Resources& need) const;
  void Make(Held held);
  void Release(std::map<int32_t, Held>::iterator it, std::string_view reason);

  Handle& handle_;
  const absl::Duration wait_;
  const int64_t min_gpu_milli_;
  // Waiters by pod key, and ordered by level and since (heads) and by last failure (the lease).
  StringKeyedMap<Waiter> waiters_;
  std::map<int32_t, std::set<std::pair<absl::Time, std::string>>> by_level_;
  std::set<std::pair<absl::Time, std::string>> by_last_failure_;
  std::map<int32_t, Held> held_;            // by the holder's priority
  // Reserved node -> its reservation and the node's entry in it.
  StringKeyedMap<std::pair<const Held*, const ReservedNode*>> by_node_;
  int64_t version_ = 0;                     // moves with every reservation made or released
  mutable absl::Mutex mu_;
  ReservationFigures figures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::reservation
