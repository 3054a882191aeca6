// Team queues: the tessel.io/v1alpha1 Queue object and how pods map onto queues.
//
// A Queue gives a team a nominal quota (a resource map, GPUs in physical-GPU equivalents), and
// may belong to a cohort whose members lend each other what they are not using. The rules are
// Kueue's ClusterQueue rules (nominalQuota, borrowingLimit, lendingLimit, preemption), enforced
// by Tessel when a pod is scheduled (quota_tracker.h) rather than at a separate admission step.
//
//   absl::StatusOr<Queue> q = DecodeQueue(json);   // errors name the object and field
//   QueueDirectory dir;  dir.Set(queues);
//   const Queue* team = dir.QueueFor(pod).queue;   // label tessel.io/queue, else namespace
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"

namespace tessel {

inline constexpr std::string_view kQueueLabel = "tessel.io/queue";
inline constexpr std::string_view kQueueApiVersion = "tessel.io/v1alpha1";

// Per-resource limits. A resource that is not listed has no limit.
using ResourceLimits = std::map<std::string, int64_t, std::less<>>;

// spec.preemption.reclaimWithinCohort: whom a queue below its nominal quota may evict from
// cohort members that are borrowing.
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
// spec.preemption.withinQueue: whether a pod may evict lower-priority pods of its own queue.
enum class WithinQueuePolicy { kNever, kLowerPriority };

struct Queue {
  ObjectMeta meta;
  std::vector<std::string> namespaces;
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

  const std::string& name() const { return meta.name; }
};

// Decodes a Queue (cluster-scoped). Quantities are exact; nvidia.com/gpu counts physical-GPU
// equivalents ("1.5" is 1500 milli-GPU). Negative amounts, a lending limit above nominal and
// a non-positive weight are errors naming the field.
absl::StatusOr<Queue> DecodeQueue(const nlohmann::json& object);

// The queues by name, and the mapping of pods onto them.
class QueueDirectory {
 public:
  // Replaces every queue. Fails when two queues claim one namespace (naming both).
  absl::Status Set(std::vector<Queue> queues);
  // Replaces every queue, leaving out each queue that clashes with one before it in name order
  // (a namespace claimed twice): returns one error per queue left out, naming both queues.
  std::vector<std::string> SetSkippingConflicts(std::vector<Queue> queues);
  // The pod's queue: the label tessel.io/queue when set, else the queue listing its namespace.
  // `queue` is null when neither applies (such pods are not limited by quota), and also when
  // the label names a queue that does not exist: then `missing` holds that name and the pod
  // must wait for it (a typo must not escape quota).
  struct Lookup {
    const Queue* queue = nullptr;
    std::string missing;
  };
  Lookup QueueFor(const Pod& pod) const;
  const Queue* Find(std::string_view name) const;
  const std::vector<Queue>& queues() const { return queues_; }

 private:
  std::vector<Queue> queues_;                                  // sorted by name
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, size_t, std::less<>> by_namespace_;
};

}  // namespace tessel
