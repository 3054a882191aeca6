// The scheduler's cluster state: nodes and the pods holding resources on them, fed by the
// informers (live) or the trace loader (bench), plus pods the scheduler has assumed but not yet
// seen bound. Thread-safe; every method takes the lock.
//
// Optimistic binding, as in kube-scheduler:
//   cache.AssumePod(pod_with_node);   // after Reserve: resources are held at once
//   ... bind through the API ...
//   cache.FinishBinding(key);         // bind accepted; the informer's update confirms it
//   cache.ForgetPod(key);             // bind failed: resources are released
// An assumed pod whose binding finished but that the informer never confirms expires after
// `assumed_ttl` (CleanupExpiredAssumedPods).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/state/node_info.h"
#include "scheduler/state/snapshot.h"
#include "scheduler/util/clock.h"

namespace tessel {

class Cache {
 public:
  explicit Cache(const Clock* clock, absl::Duration assumed_ttl = absl::Seconds(30))
      : clock_(clock), assumed_ttl_(assumed_ttl) {}

  void AddOrUpdateNode(Node node);
  void RemoveNode(std::string_view name);

  // An informer's view of a pod. Pods without a node, and finished pods (Succeeded, Failed),
  // hold nothing and are dropped; a pod the scheduler assumed is confirmed.
  void AddOrUpdatePod(Pod pod);
  void RemovePod(std::string_view key);

  // `pod.node_name` must name a node in the cache.
  absl::Status AssumePod(Pod pod);
  absl::Status FinishBinding(std::string_view key);
  absl::Status ForgetPod(std::string_view key);
  // Drops assumed pods whose binding finished more than assumed_ttl ago; returns their keys.
  std::vector<std::string> CleanupExpiredAssumedPods();

  void UpdateSnapshot(Snapshot& snapshot);

  bool IsAssumed(std::string_view key) const;
  // The node a pod is accounted on, if any.
  std::optional<std::string> NodeOf(std::string_view key) const;
  size_t NodeCount() const;
  size_t PodCount() const;
  // A copy of one node's state (tests, metrics).
  std::optional<NodeInfo> GetNodeInfo(std::string_view name) const;
  std::vector<std::string> NodeNames() const;

 private:
  struct PodState {
    PodRef pod;
    bool assumed = false;
    bool binding_finished = false;
    absl::Time deadline;
  };

  NodeInfo& NodeLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Touch(NodeInfo& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddPodLocked(PodRef pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemovePodLocked(std::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropGhostIfEmpty(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  const absl::Duration assumed_ttl_;
  mutable absl::Mutex mu_;
  StringKeyedMap<std::unique_ptr<NodeInfo>> nodes_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<PodState> pods_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Generation of the last change to the set of nodes (added, removed, got its Node object).
  int64_t membership_generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessel
