// The scheduler's cluster state: nodes and the pods holding resources on them, fed by the
// informers (live) or the trace loader (bench), plus pods the scheduler has assumed but not yet
// seen bound. Thread-safe; every method takes the lock.
//
// Optimistic binding, as in kube-scheduler:
//   cache.AssumePod(pod_with_node);   // after Reserve: resources are held at once
//   ... bind through the API ...
//   cache.FinishBinding(key, uid);    // bind accepted; the informer's update confirms it
//   cache.ForgetPod(key, uid);        // bind failed: resources are released
// An assumed pod is held until the informer confirms it or the pod is deleted, however long the
// informer lags: releasing it earlier would let the next pods overcommit its node.
//
// Identity is the UID: a pod that the informer shows under a known name with another UID is a
// new pod, and the old one's charge is released. Calls that name a UID act only on that pod
// (an empty UID matches any, for callers that have none).
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
  explicit Cache(const Clock* clock) : clock_(clock) {}

  // Returns whether anything the scheduling filters read changed (or the node is new): a
  // heartbeat that only moves resourceVersion or condition timestamps returns false.
  bool AddOrUpdateNode(Node node);
  void RemoveNode(std::string_view name);

  // An informer's view of a pod. Pods without a node, and finished pods (Succeeded, Failed),
  // hold nothing and are dropped; a pod the scheduler assumed is confirmed. An unbound copy of
  // a pod the cache holds under the same UID is stale (a bound pod never becomes unbound) and
  // changes nothing. Returns whether what other pods' scheduling reads of it changed: a bound
  // pod new here, confirmed, moved, resized or relabelled; not a status write (the kubelet's).
  bool AddOrUpdatePod(Pod pod);
  // The pod is gone. With a UID, only that pod: a late delete of an older pod of the same name
  // leaves the new one alone.
  void RemovePod(std::string_view key, std::string_view uid = {});

  // The scheduler evicted the pod: it is terminating from `when` on (the informer's update
  // confirms it). Nothing changes for a pod the cache does not hold under `uid`, or that is
  // terminating already.
  void MarkTerminating(std::string_view key, std::string_view uid, absl::Time when);

  // `pod.node_name` must name a node in the cache.
  absl::Status AssumePod(Pod pod);
  absl::Status FinishBinding(std::string_view key, std::string_view uid = {});
  absl::Status ForgetPod(std::string_view key, std::string_view uid = {});

  // The invariant that the cache never accounts less than is bound: on every node, the bound and
  // assumed pods fit its allocatable resources and its GPU devices. OK, or a description of
  // every node that is overcommitted.
  absl::Status CheckNodesFit() const;

  void UpdateSnapshot(Snapshot& snapshot);

  bool IsAssumed(std::string_view key, std::string_view uid = {}) const;
  // The node a pod is accounted on, if any.
  std::optional<std::string> NodeOf(std::string_view key) const;
  // What the cache holds under a pod's name: which pod (UID), where, and whether assumed.
  struct HeldPod {
    std::string uid;
    std::string node;
    bool assumed = false;
  };
  std::optional<HeldPod> Held(std::string_view key) const;
  // Whether the node exists (has its Node object; not a ghost kept for its pods).
  bool HasNode(std::string_view name) const;
  size_t NodeCount() const;
  size_t PodCount() const;
  // A copy of one node's state (tests, metrics).
  std::optional<NodeInfo> GetNodeInfo(std::string_view name) const;
  std::vector<std::string> NodeNames() const;
  // A node's free room (allocatable - requested, and its GPU room: AddGpuRoom), for the queue's
  // hints; none for an unknown or ghost node.
  std::optional<Resources> RoomOn(std::string_view name) const;

 private:
  struct PodState {
    PodRef pod;
    bool assumed = false;
    bool binding_finished = false;
    absl::Time assumed_at;
  };

  NodeInfo& NodeLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Touch(NodeInfo& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddPodLocked(PodRef pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemovePodLocked(std::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropGhostIfEmpty(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  mutable absl::Mutex mu_;
  StringKeyedMap<std::unique_ptr<NodeInfo>> nodes_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<PodState> pods_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Generation of the last change to the set of nodes (added, removed, got its Node object).
  int64_t membership_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // (generation, node) of every Touch since touched_floor_, in generation order.
  std::vector<std::pair<int64_t, std::string>> touched_ ABSL_GUARDED_BY(mu_);
  int64_t touched_floor_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessel
