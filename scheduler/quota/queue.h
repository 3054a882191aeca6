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

namespace tessel {

inline constexpr std::string_view kQueueLabel = "tessel.io/queue";
inline constexpr std::string_view kQueueApiVersion = "tessel.io/v1alpha1";
inline constexpr std::string_view kQueueKind = "Queue";

// Per-resource limits. A resource that is not listed has no limit.
using ResourceLimits = std::map<std::string, int64_t, std::less<>>;

// spec.preemption.reclaimWithinCohort: whom a queue below its nominal quota may evict from
// cohort members that are borrowing.
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
// spec.preemption.withinQueue: whether a pod may evict lower-priority pods of its own queue.
enum class WithinQueuePolicy { kNever, kLowerPriority };

// spec.provisioning of a Queue.
struct QueueProvisioning {
  std::string class_name;  // spec.provisioning.className, e.g. queued-provisioning.gke.io
  StringMap parameters;    // spec.provisioning.parameters, copied to the request's spec.parameters
  bool operator==(const QueueProvisioning&) const = default;
};

struct Queue {
  ObjectMeta meta;  // creationTimestamp decides who keeps a namespace two queues list
  std::vector<std::string> namespaces;
  // spec.namespaceSelector over Namespace labels: further namespaces whose pods may choose the
  // queue with the label tessel.io/queue. nullopt: none beyond spec.namespaces; {}: every one.
  std::optional<LabelSelector> namespace_selector;
  std::string cohort;  // "" = no cohort: never above nominal
  Resources nominal;
  // Every resource spec.nominalQuota lists, zeros included ("nvidia.com/gpu: 0" is a quota of
  // none, not no quota; Resources drops zeros).
  std::vector<std::string> listed;
  ResourceLimits borrowing_limit;  // how far above nominal it may borrow
  ResourceLimits lending_limit;    // how much of its nominal it lends; unlisted: all of it
  ReclaimPolicy reclaim_within_cohort = ReclaimPolicy::kNever;
  WithinQueuePolicy within_queue = WithinQueuePolicy::kNever;
  int64_t weight_milli = 1000;  // spec.weight, fair sharing of borrowed capacity
  // spec.disruption (scheduler/preemption/disruption.h): whether the queue's running pods may be
  // moved to make room (consolidation), and how long a pod runs before it may be disrupted.
  std::optional<bool> movable;
  std::optional<int64_t> min_run_seconds;
  // spec.provisioning: the queue's gangs that fit nowhere ask for capacity with a
  // ProvisioningRequest of this class (docs/provisioning.md). nullopt: they do not.
  std::optional<QueueProvisioning> provisioning;

  const std::string& name() const { return meta.name; }
};

// Decodes a Queue (cluster-scoped). Quantities are exact; nvidia.com/gpu counts physical-GPU
// equivalents ("1.5" is 1500 milli-GPU). Negative amounts, a lending limit above nominal and
// a non-positive weight are errors naming the field.
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

// Namespace labels by namespace name: what spec.namespaceSelector is matched against.
using NamespaceLabelMap = std::map<std::string, StringMap, std::less<>>;

// The queues by name, and the mapping of pods onto them. Immutable once set, so a cycle can hold
// one snapshot (QueueStore makes a new one on every change).
class QueueDirectory {
 public:
  // Replaces every queue; selectors are matched against `namespaces` (a namespace missing there
  // matches only the empty selector). Fails, changing nothing, when a name is defined twice or
  // two queues list one namespace (naming both).
  absl::Status Set(std::vector<Queue> queues, const NamespaceLabelMap& namespaces = {});
  // Replaces every queue, giving a namespace that several queues list to the oldest; returns one
  // conflict per namespace a newer queue does not get. Names must be unique (QueueStore keys
  // queues by name); a repeated name is left out.
  std::vector<NamespaceConflict> SetResolvingConflicts(std::vector<Queue> queues,
                                                       const NamespaceLabelMap& namespaces = {});
  // The pod's queue: the queue its label tessel.io/queue names, if that queue admits the pod's
  // namespace (Admits), else the queue that got its namespace. `queue` is null when neither
  // applies (such pods are not limited by quota), and also when the label names a queue that
  // does not exist: then `missing` holds that name and the pod must wait for it (a typo must
  // not escape quota). When the labelled queue does not admit the namespace, `refused` says so
  // and `queue` is the namespace's: the pod must wait, and pods already placed are charged to
  // their own namespace's queue, never to the one they named.
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

 private:
  // The namespaces a queue admits besides the ones it got through spec.namespaces.
  struct Selected {
    bool every_namespace = false;  // spec.namespaceSelector: {}
    std::set<std::string, std::less<>> namespaces;
  };
  // Builds every index; conflicts are resolved (oldest wins) and returned.
  std::vector<NamespaceConflict> Build(std::vector<Queue> queues,
                                       const NamespaceLabelMap& namespaces);

  std::vector<Queue> queues_;                                  // sorted by name
  std::vector<Selected> selected_;                             // parallel to queues_
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, size_t, std::less<>> by_namespace_;   // spec.namespaces, conflicts resolved
};

}  // namespace tessel
