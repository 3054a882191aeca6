// The informers the live scheduler runs, and the handlers that decode what they deliver and
// hand it to the Scheduler's thread-safe inputs:
//   pods (all namespaces, every scheduler: pods bound by others hold capacity too; finished
//   pods excluded by a field selector), nodes, priorityclasses, the gang objects (PodGroup
//   scheduling.x-k8s.io/v1alpha1, and in the versions the server serves (gang_apis.h) Workload
//   scheduling.k8s.io/v1alpha1 and the scheduling.k8s.io PodGroup; Jobs for implicit gangs), and the optional CRD Queue
//   (tessel.io/v1alpha1) that the QueueQuota plugin enforces (a missing CRD is no queues);
//   PodDisruptionBudgets (policy/v1, or v1beta1 on servers before 1.21) for preemption;
//   PersistentVolumeClaims, PersistentVolumes, StorageClasses (volume plugins) and Namespaces
//   (pod affinity's namespaceSelector).
// An object that fails to decode is logged and skipped, once per resourceVersion. An update of a
// Queue, Cohort, ResourceFlavor, Job or scheduler-plugins PodGroup that changes only its status
// is not passed on (no decision reads their status; each delivery wakes the parked pods).
//
//   SchedulerFeed feed(client, scheduler.get(), {.on_pod_gone = [&](auto& key) { ... }});
//   feed.Start();
//   feed.WaitForSync(absl::Seconds(60));
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/core/scheduler.h"
#include "scheduler/kube/gang_apis.h"
#include "scheduler/kube/informer.h"

namespace tessel::kube {

// Pods that are not finished: what kube-scheduler lists and watches.
inline constexpr std::string_view kActivePodsSelector = "status.phase!=Succeeded,status.phase!=Failed";

// Drop from a pod / node what no decoder reads (volumes other than claims, env, probes, container statuses,
// images, the last-applied-configuration annotation, ...), so the informer's transient JSON
// and the decoded objects stay small.
void PrunePod(nlohmann::json& pod);
void PruneNode(nlohmann::json& node);

struct FeedOptions {
  // A pod was seen bound to a node / deleted: observers may drop what they remember about it.
  std::function<void(const std::string& key)> on_pod_bound;
  std::function<void(const std::string& key)> on_pod_gone;
  // A Queue object was seen (before it is delivered): its status is read here (the decayed
  // usage a restarted scheduler restores, usage_decay.h).
  std::function<void(const nlohmann::json& object)> on_queue_object;
  // Extra optional (CRD) collections to watch, beyond PodGroup and Queue.
  std::vector<ResourceSpec> extra_custom;
  // The policy group version that serves PodDisruptionBudgets (as DiscoverEvictionApi finds it).
  std::string pdb_api = "policy/v1";
  // The upstream gang API versions the server serves (DiscoverGangApis); none by default.
  GangApis gang_apis;
  InformerOptions informer;
};

class SchedulerFeed {
 public:
  SchedulerFeed(KubeClient* client, Scheduler* scheduler, FeedOptions options = {});
  ~SchedulerFeed();

  void Start();
  void Stop();
  bool HasSynced() const;
  // Waits until every informer has synced; false on timeout.
  bool WaitForSync(absl::Duration timeout) const;
  const std::vector<std::unique_ptr<Informer>>& informers() const { return informers_; }

 private:
  std::vector<std::unique_ptr<InformerHandler>> handlers_;
  std::vector<std::unique_ptr<Informer>> informers_;
};

}  // namespace tessel::kube
