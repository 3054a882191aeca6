// StatusReporter: the SchedulingObserver that tells users (and cluster autoscalers) what
// happened to their pods, as kube-scheduler does:
//   - a bound pod gets a Normal "Scheduled" event;
//   - a pod that could not be placed gets a Warning "FailedScheduling" event and the condition
//     PodScheduled=False, reason Unschedulable (no node fits), QuotaExceeded (only its queue's
//     quota said no) or SchedulerError (an error, or a bind that failed), with the same message;
//     the same status patch sets status.nominatedNodeName to the node a preemption chose for
//     it (or clears it).
// The failure class comes typed (FailureKind), never from the message text.
//
// Condition writes are never silently lost: the reporter keeps, per pod, the condition it wants
// and the condition the API server is known to have; a KeyedQueue writes the difference on the
// events and status client and retries failures with backoff. Only a write the server answered
// 2xx counts as written; one the server refuses for good is counted in conditions_dropped()
// and not recorded as written, so the next attempt of the pod writes it again.
//
//   StatusReporter reporter(status_client, &events, {.write_budget = budget});
//   scheduler observer -> reporter;  informer: reporter.Bound(key) / reporter.Forget(key)
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/event_recorder.h"
#include "scheduler/kube/keyed_queue.h"

namespace tessel::kube {

struct StatusReporterOptions {
  std::function<std::optional<absl::Duration>()> write_budget;  // see Request::write_budget
  KeyedQueueOptions queue = {};
};

struct PodCondition {
  // "Unschedulable", "QuotaExceeded", "SchedulerError" or "SchedulingGated"; "" writes no
  // condition, only nominatedNodeName.
  std::string reason;
  std::string message;
  // status.nominatedNodeName, written with the condition as kube-scheduler does ("" clears it).
  std::string nominated_node;
  bool operator==(const PodCondition&) const = default;
};

// The PodScheduled=False reason kube-scheduler uses for each failure class.
std::string_view ConditionReason(FailureKind kind);

class StatusReporter final : public SchedulingObserver {
 public:
  StatusReporter(KubeClient* client, EventRecorder* events, StatusReporterOptions options = {});
  ~StatusReporter() override;

  void PodScheduled(const Pod& pod, const std::string& node) override;
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override;
  // PodScheduled=False, reason SchedulingGated, as kube-scheduler writes it (no Event).
  void PodSchedulingGated(const Pod& pod) override;
  // Removes status.nominatedNodeName: with the condition this reporter wants for the pod, or
  // alone if it wants none (a nomination an earlier leader wrote).
  void NominationCleared(const Pod& pod) override;

  // The informer saw the pod bound: a condition write still queued for it is dropped (it
  // would turn the apiserver's PodScheduled=True back to False).
  void Bound(const std::string& key);
  // The informer saw the pod deleted: forget everything about it.
  void Forget(const std::string& key);
  // Stops writing; queued writes are abandoned (the next leader reports again).
  void Shutdown();

  // The condition the API server acknowledged for the pod, if any.
  std::optional<PodCondition> WrittenCondition(const std::string& key) const;
  int64_t conditions_written() const { return written_.load(); }
  int64_t conditions_dropped() const { return queue_->dropped(); }
  int64_t condition_retries() const { return queue_->retries(); }
  size_t pending() const { return queue_->pending(); }

 private:
  struct PodRecord {
    std::string namespace_, name, uid;
    std::optional<PodCondition> wanted;
    std::optional<PodCondition> written;  // only what a 2xx confirmed
  };
  KeyedQueue::Outcome Write(const std::string& key);
  // Records the condition the pod should show and queues its write unless the server has it.
  void Want(const Pod& pod, PodCondition condition);

  KubeClient* client_;
  EventRecorder* events_;
  const StatusReporterOptions options_;
  std::atomic<int64_t> written_{0};
  mutable absl::Mutex mu_;
  StringKeyedMap<PodRecord> pods_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<KeyedQueue> queue_;  // last: its threads use the members above
};

}  // namespace tessel::kube
