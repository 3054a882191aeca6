// Team queues: the tessel.io/v1alpha1 Queue object and how pods map onto queues.
//
// A Queue gives a team a nominal quota (a resource map, GPUs in physical-GPU equivalents), and
// may belong to a cohort whose members lend each other what they are not using. The rules are
// Kueue's ClusterQueue rules (nominalQuota, borrowingLimit, lendingLimit, preemption), enforced
// by Tessel when a pod is scheduled (quota_tracker.h) rather than at a separate admission step.
//
// A pod belongs to the queue that lists its namespace in spec.namespaces. The label
// tessel.io/queue chooses another queue only if that queue admits the pod's namespace: lists it,
// or matches it with spec.namespaceSelector (Kueue's ClusterQueue namespaceSelector), so no pod
// can charge a team that did not let it in. A namespace two queues list goes to the older one.
//
//   absl::StatusOr<Queue> q = DecodeQueue(json);   // errors name the object and field
//   QueueDirectory dir;  dir.Set(queues, namespace_labels);
//   QueueDirectory::Lookup l = dir.QueueFor(pod);  // l.queue; l.missing / l.refused: it waits
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/quota/cohort.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/quota_spec.h"
#include "scheduler/util/strings.h"

namespace tessel {

inline constexpr std::string_view kQueueLabel = "tessel.io/queue";
inline constexpr std::string_view kQueueApiVersion = "tessel.io/v1alpha1";
inline constexpr std::string_view kQueueKind = "Queue";

// spec.preemption.reclaimWithinCohort: whom a queue below its nominal quota may evict from
// cohort members that are borrowing.
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
// spec.preemption.withinQueue: whether a pod may evict lower-priority pods of its own queue.
enum class WithinQueuePolicy { kNever, kLowerPriority };
// spec.flavorFungibility.whenCanPreempt (Kueue's): when a pod's first flavor has room only by
// preempting and a later flavor has room as it is, TryNextFlavor (the default) takes the later
// flavor; Preempt preempts in the earlier one.
enum class WhenCanPreempt { kTryNextFlavor, kPreempt };
// spec.flavorFungibility.whenCanBorrow: Borrow (the default) takes the first flavor with room,
// borrowing or not; TryNextFlavor prefers a later flavor where the pod fits without borrowing.
enum class WhenCanBorrow { kBorrow, kTryNextFlavor };

// A team's queue: its quota (QuotaSpec: nominal, limits, flavors, weight) and who may use it.
struct Queue : QuotaSpec {
  ObjectMeta meta;  // creationTimestamp decides who keeps a namespace two queues list
  std::vector<std::string> namespaces;
  // spec.namespaceSelector over Namespace labels: further namespaces whose pods may choose the
  // queue with the label tessel.io/queue. nullopt: none beyond spec.namespaces; {}: every one.
  std::optional<LabelSelector> namespace_selector;
  // spec.cohort: the Cohort it hangs from (cohort.h: an object, or a name only); "" = no cohort:
  // never above nominal.
  std::string cohort;
  WhenCanPreempt when_can_preempt = WhenCanPreempt::kTryNextFlavor;
  WhenCanBorrow when_can_borrow = WhenCanBorrow::kBorrow;
  ReclaimPolicy reclaim_within_cohort = ReclaimPolicy::kNever;
  WithinQueuePolicy within_queue = WithinQueuePolicy::kNever;
  // spec.disruption (scheduler/preemption/disruption.h): whether the queue's running pods may be
  // moved to make room (consolidation), and how long a pod runs before it may be disrupted.
  std::optional<bool> movable;
  std::optional<int64_t> min_run_seconds;
  // spec.provisioning: the queue's gangs that fit nowhere ask for capacity with a
  // ProvisioningRequest of this class (docs/provisioning.md). nullopt: they do not.
  std::optional<ProvisioningClass> provisioning;

  const std::string& name() const { return meta.name; }
};

// Where a pod's charge goes on one node, for a flavored queue (QueueDirectory::Place).
struct FlavorPlacement {
  // False when the node is in none of the flavors of a group the charge needs (or the pod does
  // not tolerate that flavor's node taints); `why` then says so.
  bool in_flavor = true;
  std::string why;
  // The node's rank in the queue's flavor order, lowest first: the flavor index of each group
  // the charge uses, most significant first.
  int64_t tier = 0;
  Resources charge;  // covered resources under flavored keys; uncovered ones are not limited
};

// Decodes a Queue (cluster-scoped). Quantities are exact; nvidia.com/gpu counts physical-GPU
// equivalents ("1.5" is 1500 milli-GPU). Negative amounts, a lending limit above nominal,
// a non-positive weight, and spec.nominalQuota (or its limits) beside spec.resourceGroups are
// errors naming the field.
absl::StatusOr<Queue> DecodeQueue(const nlohmann::json& object);

// A namespace two queues list in spec.namespaces. The older queue (metadata.creationTimestamp,
// then name) keeps it; the newer one stays in force for its other namespaces.
struct NamespaceConflict {
  std::string namespace_;
  std::string kept_by;      // the older queue
  std::string refused;      // the newer queue, which does not get the namespace
  std::string refused_uid;  // for an Event about it
  // 'Queue NEWER: spec.namespaces: namespace "NS" already belongs to the older Queue OLDER; ...'
  std::string Message() const;
  bool operator==(const NamespaceConflict&) const = default;
};

// The Cohort objects in force, and those that do not decode and never did.
struct CohortObjects {
  std::vector<Cohort> cohorts;
  HeldCohortMap held;
};

// Namespace labels by namespace name: what spec.namespaceSelector is matched against.
using NamespaceLabelMap = std::map<std::string, StringMap, std::less<>>;

// A Queue that does not decode and has no earlier version that did: it must not leave its pods
// unlimited, so they wait. `namespaces` is its spec.namespaces as far as it reads
// (ReadQueueNamespaces); `problem` the decode error, naming the field.
struct HeldQueue {
  std::vector<std::string> namespaces;
  std::string problem;
};
using HeldQueueMap = std::map<std::string, HeldQueue, std::less<>>;
// spec.namespaces of a Queue object, the entries that read (never fails).
std::vector<std::string> ReadQueueNamespaces(const nlohmann::json& object);

// The queues by name, and the mapping of pods onto them. Immutable once set, so a cycle can hold
// one snapshot (QueueStore makes a new one on every change).
class QueueDirectory {
 public:
  // Replaces every queue; selectors are matched against `namespaces` (a namespace missing there
  // matches only the empty selector). Fails, changing nothing, when a name is defined twice or
  // two queues list one namespace (naming both). `held`: Queues that do not decode, whose pods
  // wait (those labelled for one, and those of a namespace one lists that no queue in force has).
  absl::Status Set(std::vector<Queue> queues, const NamespaceLabelMap& namespaces = {},
                   FlavorMap flavors = {}, HeldQueueMap held = {}, CohortObjects cohorts = {});
  // Replaces every queue, giving a namespace that several queues list to the oldest; returns one
  // conflict per namespace a newer queue does not get. Names must be unique (QueueStore keys
  // queues by name); a repeated name is left out.
  std::vector<NamespaceConflict> SetResolvingConflicts(std::vector<Queue> queues,
                                                       const NamespaceLabelMap& namespaces = {},
                                                       FlavorMap flavors = {}, HeldQueueMap held = {},
                                                       CohortObjects cohorts = {});
  // The pod's queue: the queue its label tessel.io/queue names, if that queue admits the pod's
  // namespace (Admits), else the queue that got its namespace. `queue` is null when neither
  // applies (such pods are not limited by quota), and also when the label names a queue that
  // does not exist: then `missing` holds that name and the pod must wait for it (a typo must
  // not escape quota). When the labelled queue does not admit the namespace, `refused` says so
  // and `queue` is the namespace's: the pod must wait, and pods already placed are charged to
  // their own namespace's queue, never to the one they named. A pod of a held Queue (one that
  // does not decode: labelled for it, or in a namespace it lists that no queue in force has)
  // gets `refused` naming the Queue's problem, and so does a pod of a queue below a cohort that
  // breaks the tree (CohortTree::QueueProblem).
  struct Lookup {
    const Queue* queue = nullptr;
    std::string missing;
    std::string refused;
  };
  Lookup QueueFor(const Pod& pod) const;
  // Whether pods of `namespace_` may choose the queue by label: it got the namespace through
  // spec.namespaces, or its spec.namespaceSelector matches the namespace's labels.
  bool Admits(std::string_view queue, std::string_view namespace_) const;
  const Queue* Find(std::string_view name) const;
  const std::vector<Queue>& queues() const { return queues_; }
  // The Cohort objects in force (by name), and the quota tree of cohorts and queues.
  const std::vector<Cohort>& cohorts() const { return cohorts_; }
  const CohortTree& tree() const { return tree_; }

  // The ResourceFlavors in force, by name. A flavor a queue lists that does not exist has no
  // nodes (its quota cannot be used).
  const FlavorMap& flavors() const { return flavors_; }
  // Where `charge` (QuotaCharge) of a pod of `queue` goes on a node with `node_labels`: per
  // resource group it uses, the first of the group's flavors the node belongs to (a node's
  // flavor follows its labels now: see docs/flavors.md). With `tolerations` (a pod being
  // scheduled), a flavor whose node taints the pod does not tolerate is refused. A flat queue's
  // charge is returned as it is.
  FlavorPlacement Place(const Queue& queue, const Resources& charge, const StringMap& node_labels,
                        const std::vector<Toleration>* tolerations = nullptr) const;

 private:
  // The namespaces a queue admits besides the ones it got through spec.namespaces.
  struct Selected {
    bool every_namespace = false;  // spec.namespaceSelector: {}
    std::set<std::string, std::less<>> namespaces;
  };
  // Builds every index; conflicts are resolved (oldest wins) and returned.
  std::vector<NamespaceConflict> Build(std::vector<Queue> queues,
                                       const NamespaceLabelMap& namespaces, FlavorMap flavors,
                                       HeldQueueMap held, CohortObjects cohorts);
  // QueueFor without the cohort tree's problems.
  Lookup FindQueueFor(const Pod& pod) const;
  // Why a pod of the held queue `name` waits.
  std::string HeldMessage(const std::string& name) const;

  std::vector<Queue> queues_;                                  // sorted by name
  std::vector<Cohort> cohorts_;                                // sorted by name
  CohortTree tree_;
  std::vector<Selected> selected_;                             // parallel to queues_
  StringKeyedMap<size_t> by_name_;       // lookups only: hashed
  StringKeyedMap<size_t> by_namespace_;  // spec.namespaces, conflicts resolved
  FlavorMap flavors_;
  HeldQueueMap held_;
  std::map<std::string, std::string, std::less<>> held_namespaces_;  // namespace -> held queue
};

}  // namespace tessel
