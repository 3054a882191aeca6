// Kubernetes Events about pods and other objects (a Queue), correlated like client-go's
// EventCorrelator: the same (object, type, reason, message) within `window` is one Event object whose count and
// lastTimestamp are bumped, not a new Event. Writes go through a KeyedQueue on the events and
// status client, so a burst of identical events costs one write per distinct event, the
// backlog is bounded by the distinct events in flight, and nothing is dropped to a rate limit:
// a pod's FailedScheduling always reaches the API server unless the pod is gone, this replica
// stops leading, or the server refuses it for good (then it is counted in dropped()).
//
//   EventRecorder events(events_client, {.identity = "host_1234", .may_write = is_leader});
//   events.Record(pod, "Warning", "FailedScheduling", "0/3 nodes are available: ...");
//   events.Record(queue_ref, "Warning", "NamespaceConflict", "...");  // cluster-scoped: in "default"
//   events.ForgetPod("ns/pod");   // the pod was deleted
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/keyed_queue.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

struct EventRecorderOptions {
  std::string component = "tessel";  // Event source and reportingComponent
  std::string identity;              // reportingInstance
  // Identical events within this window bump one Event (client-go's aggregation window).
  absl::Duration window = absl::Minutes(10);
  // How long this replica may still write; nullopt: it may not (see Request::write_budget).
  std::function<std::optional<absl::Duration>()> write_budget;
  int threads = 1;
  KeyedQueueOptions queue = {};
};

class EventRecorder {
 public:
  EventRecorder(KubeClient* client, EventRecorderOptions options);
  ~EventRecorder();

  void Record(const Pod& pod, std::string_view type, std::string_view reason,
              std::string_view message) {
    Record(pod.Reference(), type, reason, message);
  }
  // An Event about any object; one without a namespace (cluster-scoped) is written to "default".
  void Record(const ObjectReference& object, std::string_view type, std::string_view reason,
              std::string_view message);
  // The pod is gone: its written events are forgotten, and no more bumped. One not written yet is
  // still written (the event saying why a pod was evicted is recorded just before its deletion
  // arrives), then forgotten.
  void ForgetPod(const std::string& pod_key);
  // Stops writing (what is queued is abandoned, see KeyedQueue::Shutdown).
  void Shutdown();

  int64_t recorded() const { return recorded_.load(); }
  int64_t created() const { return created_.load(); }      // Event objects POSTed
  int64_t bumped() const { return bumped_.load(); }        // count PATCHes
  int64_t correlated() const { return correlated_.load(); } // records folded into an existing event
  int64_t dropped() const { return queue_->dropped(); }    // refused by the server for good
  int64_t retries() const { return queue_->retries(); }
  size_t pending() const { return queue_->pending(); }
  // Events remembered for correlation (written or not), for tests.
  size_t remembered() const {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }
  // The count last written for an event about a pod (0 when never written), for tests.
  int64_t WrittenCount(const std::string& pod_key, std::string_view reason,
                       std::string_view message) const;

 private:
  struct Entry {
    std::string object_key;  // ObjectKey(object)
    ObjectReference object;
    std::string type, reason, message;
    int64_t count = 0;          // occurrences seen
    int64_t written_count = 0;  // count the API server has
    std::string event_name;     // the Event object, once created
    absl::Time first = absl::InfinitePast(), last = absl::InfinitePast();
  };
  KeyedQueue::Outcome Write(const std::string& key);
  void Prune(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  KubeClient* client_;
  const EventRecorderOptions options_;
  std::atomic<int64_t> recorded_{0}, created_{0}, bumped_{0}, correlated_{0};
  mutable absl::Mutex mu_;
  StringKeyedMap<Entry> entries_ ABSL_GUARDED_BY(mu_);      // by event key
  StringKeyedMap<StringSet> by_object_ ABSL_GUARDED_BY(mu_);  // object key -> event keys
  int64_t records_since_prune_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<KeyedQueue> queue_;  // last: its threads use the members above
};

}  // namespace tessel::kube
