// The live ClusterApi: the scheduler's binds, annotation patches, evictions and events as
// requests to the API server, plus StatusReporter, the SchedulingObserver that tells users
// (and cluster autoscalers) what happened to their pods.
//
//   LiveCluster cluster(client, {.eviction_api = *DiscoverEvictionApi(*client),
//                                .may_write = [&] { return elector.IsLeader(); }});
//   StatusReporter reporter(&cluster, &status_pool, {});
//
// Bind semantics: a 201 is final and never repeated. A 409 means the pod is bound already: if
// it is bound to the node we chose (an earlier attempt of ours whose answer was lost), the bind
// counts as done; otherwise it fails, the core forgets the assumed pod, and the informer
// delivers where the pod really is.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/backoff.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/work_queue.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

// "policy/v1" when the server serves it, else "policy/v1beta1" (Kubernetes before 1.22).
absl::StatusOr<std::string> DiscoverEvictionApi(KubeClient& client);

struct LiveClusterOptions {
  std::string eviction_api = "policy/v1";
  std::string component = "tessel";  // Event source
  std::string identity;              // Event reportingInstance
  // False while this replica must not write (not the leader): writes fail with Unavailable.
  std::function<bool()> may_write;
  // Event spam limits: all events, and per pod.
  double events_qps = 10;
  int64_t events_burst = 50;
  absl::Duration same_event_interval = absl::Minutes(1);  // an identical event is not repeated sooner
};

class LiveCluster final : public ClusterApi {
 public:
  // Events are posted on `event_pool` (not on the caller's thread).
  LiveCluster(KubeClient* client, WorkerPool* event_pool, LiveClusterOptions options);

  absl::Status Bind(const Pod& pod, const std::string& node) override;
  absl::Status PatchAnnotations(const Pod& pod, const StringMap& annotations) override;
  absl::Status Evict(const Pod& pod, std::string_view reason) override;
  void RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                   std::string_view message) override;

  // Sets PodScheduled=False with `reason` and `message` through pods/status (synchronous).
  absl::Status SetUnschedulableCondition(const Pod& pod, std::string_view reason,
                                         std::string_view message);
  // Whether a bind of this pod found it bound elsewhere recently (then it must not be reported
  // unschedulable).
  bool FoundBoundElsewhere(const std::string& key) const;
  // The pod is gone: drop what is remembered about it.
  void ForgetPod(const std::string& key);

  bool MayWrite() const { return !options_.may_write || options_.may_write(); }
  int64_t binds() const { return binds_.load(); }
  int64_t bind_conflicts() const { return bind_conflicts_.load(); }
  int64_t evictions() const { return evictions_.load(); }
  int64_t events_posted() const { return events_posted_.load(); }
  int64_t events_suppressed() const { return events_suppressed_.load(); }
  const LiveClusterOptions& options() const { return options_; }

 private:
  struct EventState {
    std::string reason;
    std::string message;
    std::string event_name;  // the Event object to bump for repeats
    int64_t count = 0;
    absl::Time last_posted = absl::InfinitePast();
  };
  void PostEvent(const Pod& pod, std::string type, std::string reason, std::string message);

  KubeClient* client_;
  WorkerPool* event_pool_;
  const LiveClusterOptions options_;
  TokenBucket event_limiter_;
  std::atomic<int64_t> binds_{0}, bind_conflicts_{0}, evictions_{0}, events_posted_{0},
      events_suppressed_{0};
  mutable absl::Mutex mu_;
  StringKeyedMap<EventState> events_ ABSL_GUARDED_BY(mu_);  // by pod key
  StringSet bound_elsewhere_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> bound_elsewhere_order_ ABSL_GUARDED_BY(mu_);
};

// Turns scheduling outcomes into what users see: a Scheduled event for a bound pod; a
// FailedScheduling event and the PodScheduled=False condition (reason Unschedulable, or
// SchedulerError for errors) for a pod that could not be placed. Writes run on `pool`, never
// on the scheduling thread; the condition is written only when its message changes.
class StatusReporter final : public SchedulingObserver {
 public:
  StatusReporter(LiveCluster* cluster, WorkerPool* pool) : cluster_(cluster), pool_(pool) {}

  void PodScheduled(const Pod& pod, const std::string& node) override;
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override;
  // The informer saw the pod bound: a condition write still queued for it is dropped (it would
  // turn the apiserver's PodScheduled=True back to False).
  void Bound(const std::string& key);
  // The informer saw the pod deleted: forget everything about it.
  void Forget(const std::string& key);

 private:
  bool Placed(const std::string& key);

  LiveCluster* cluster_;
  WorkerPool* pool_;
  absl::Mutex mu_;
  StringKeyedMap<std::string> condition_ ABSL_GUARDED_BY(mu_);  // last message set, by pod key
  StringSet placed_ ABSL_GUARDED_BY(mu_);                       // bound pods
};

}  // namespace tessel::kube
