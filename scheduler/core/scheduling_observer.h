// What the scheduling loop reports and where it runs binds: the interfaces between the core
// and the world it schedules for (the live reporter and metrics, the bench's recorder, the
// binder pool). Kept apart from scheduler.h so that observers need not see the loop.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/framework/interface.h"

namespace tessel {

// Why an attempt failed, for the live reporter (Events, PodScheduled=False) and metrics.
enum class FailureKind {
  kUnschedulable,  // no node fits, or a plugin rejected the pod (incl. Permit)
  kError,          // a plugin or the cache failed; retried with backoff
  kBindFailed,     // the binding cycle failed (PreBind, Bind, the node vanished); retried
  // Every node rejected the pod only for its queue's quota (QuotaPlugin): the cluster has room,
  // so it is not reported as Unschedulable (which cluster autoscalers act on).
  kQuotaExceeded,
  // A gang short only of capacity waits on its ProvisioningRequest (docs/provisioning.md): not
  // Unschedulable either, so that no autoscaler adds nodes for it a second time.
  kWaitingForProvisioning,
};

// How a scheduling attempt ended, for the attempt-duration histogram.
enum class AttemptResult { kScheduled, kUnschedulable, kError };
// "scheduled", "unschedulable", "error": the metric's result label.
std::string_view AttemptResultName(AttemptResult result);

// Receives the outcome of every attempt: the bench records them, the live scheduler turns them
// into Events, pod conditions and metrics.
class SchedulingObserver {
 public:
  virtual ~SchedulingObserver() = default;
  virtual void PodScheduled(const Pod& pod, const std::string& node) = 0;
  // No node fits, or the attempt failed (see `kind`); `message` reads like kube-scheduler's.
  virtual void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) = 0;
  // The pod has scheduling gates (spec.schedulingGates): it waits outside the queue until they
  // are removed. Called once per pod; live, this is PodScheduled=False, reason SchedulingGated.
  virtual void PodSchedulingGated(const Pod& /*pod*/) {}
  // A preemption for `preemptor` evicted `victims` (to make room on `node`, "" when its
  // candidates were refused): for metrics (scheduler_preemption_victims{reason}).
  virtual void PodsPreempted(const Pod& /*preemptor*/, const std::string& /*node*/,
                             const std::vector<PreemptionVictim>& /*victims*/) {}
  // A preemption for a more important pod chose the node this pending pod was nominated to: the
  // room it was promised may be gone, so its nomination is dropped (live: status.nominatedNodeName
  // removed, as kube-scheduler does) and it looks for a node afresh at its next attempt.
  virtual void NominationCleared(const Pod& /*pod*/) {}
  // The pod waits as unschedulable; these plugins rejected it in its last attempt (for
  // scheduler_unschedulable_pods{plugin}).
  virtual void PodRejected(const Pod& /*pod*/, const std::vector<std::string>& /*plugins*/) {}
  // A bound member of a gang that was rolled back was evicted (evictions by reason "gang").
  virtual void GangMemberEvicted(const Pod& /*pod*/) {}
  // The attempt took this long (for the attempt-duration histogram).
  virtual void AttemptFinished(const Pod& /*pod*/, AttemptResult /*result*/, absl::Duration /*latency*/) {}
};

// Runs binding cycles off the scheduling thread (live); the bench runs them inline.
class BindExecutor {
 public:
  virtual ~BindExecutor() = default;
  virtual void Submit(std::function<void()> task) = 0;
};

}  // namespace tessel
