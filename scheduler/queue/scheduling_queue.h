// The queue of pods waiting to be scheduled, in three parts as in kube-scheduler:
//   active         ordered by the profile's QueueSort (priority, then age, then name)
//   backoff        failed recently; back in active when their backoff (1s doubling to 10s) ends
//   unschedulable  no node fits; they wait for a cluster event that could help them (a node
//                  added, a pod deleted, ...), or at most `max_unschedulable_wait`
// Thread-safe. The scheduling loop Pops; informers Add/Update/Delete and report cluster events.
//
// In flight: a popped pod is in flight until the core hands it back (AddUnschedulable,
// AddBackoff) or says it is Done (bound, or its life ended). While in flight, an informer's copy
// of the same pod (same UID) is not queued again: it is kept as the pod's latest copy, which a
// requeue then uses. A delete marks the in-flight pod ended, and its requeue is dropped. A pod
// under the same name with another UID is a new pod: it replaces the old one, queued or in
// flight.
//
//   queue.Add(pod);
//   auto info = queue.Pop();                        // non-blocking (bench)
//   auto info = queue.PopWait(absl::Seconds(1));    // blocking (live)
//   queue.AddUnschedulable(*info, cycle, kNodeAdd | kAssignedPodDelete, kAssignedPodDelete);
//   queue.OnClusterEvent(kNodeAdd);
//   queue.OnClusterEvent(kAssignedPodDelete, &room_left_on_that_node);
//
// The next pod (optional, NextPodChoice): active pods wait in groups (a team's queue, say), each
// in the QueueSort order, and a chooser picks which group's head is popped, as Kueue picks among
// the heads of its ClusterQueues. Without a chooser there is one group: the QueueSort order.
//
// Queueing hints by resource: a pod parked with `hinted` events (those its rejecting plugins
// undo only where the node's room holds what they need, EnqueueExtensions::EventsHintedByRoom
// and AddRoomNeed) stays parked when such an event comes with the room of its node and the room
// does not hold that need; so does a pod rejected while such events came, when none of their
// rooms holds it. A long backlog of pods that fit nowhere is thus not retried for every pod that
// ends somewhere.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/framework/interface.h"
#include "scheduler/util/clock.h"

namespace tessel {

struct QueueOptions {
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(10);
  absl::Duration max_unschedulable_wait = absl::Minutes(5);
};

struct QueueStats {
  size_t active = 0;
  size_t backoff = 0;
  size_t unschedulable = 0;
};

// How the next pod is chosen among groups of active pods. `group_of` must depend on the pod
// alone (it runs on informer threads); `choose` gets each non-empty group's head, in the QueueSort
// order, and returns the index of the one to pop. It runs on the popping thread under the
// queue's lock, so it must not call into the queue.
struct NextPodChoice {
  std::function<std::string(const Pod&)> group_of;
  std::function<size_t(std::span<const QueuedPodInfo* const> heads)> choose;
};

class SchedulingQueue {
 public:
  using Less = std::function<bool(const QueuedPodInfo&, const QueuedPodInfo&)>;

  SchedulingQueue(const Clock* clock, Less less, QueueOptions options = {}, NextPodChoice next = {});

  // What Add and Update did with a pod.
  enum class AddResult {
    kQueued,    // a new entry (a new pod, or a new UID under a known name)
    kUpdated,   // the queued copy was replaced
    kInFlight,  // the pod is in flight: kept as its latest copy, not queued
    kIgnored,   // Update of a pod the queue does not hold
  };
  // A new pending pod. A pod already queued is updated instead (and moves to active).
  AddResult Add(PodRef pod);
  // The pod object changed: it replaces the queued copy and, if it was waiting as
  // unschedulable, moves to backoff or active (its spec may now fit somewhere).
  AddResult Update(PodRef pod);
  // The pod is gone (or bound by someone else): a queued entry is dropped, an in-flight pod is
  // marked ended. With a UID, only that pod.
  void Delete(const std::string& key, std::string_view uid = {});
  // The core is done with an in-flight pod (bound, or its life ended): forget it.
  void Done(const std::string& key, std::string_view uid);
  // Whether an in-flight pod was deleted (or replaced, or bound elsewhere) since it was popped.
  bool Ended(const std::string& key, std::string_view uid) const;
  size_t InFlightCount() const;

  // Pops the head of the active queue after moving pods whose backoff ended. Also returns the
  // scheduling cycle number, used by AddUnschedulable to detect events during the attempt.
  struct Popped {
    QueuedPodInfo info;
    int64_t cycle = 0;
  };
  std::optional<Popped> Pop();
  // Like Pop, but waits up to `timeout` for a pod. Returns nullopt on timeout or Close().
  std::optional<Popped> PopWait(absl::Duration timeout);
  void Close();

  // After a failed attempt: the pod waits for one of `events` (a ClusterEvent mask). If such an
  // event arrived while it was being scheduled (after `cycle`), it goes to backoff at once.
  // An in-flight pod comes back as its latest copy, or not at all if it ended meanwhile.
  // `hinted` (a subset of `events`) and `need` (what a room must hold; the pod's requests when
  // not given): see the file comment.
  void AddUnschedulable(QueuedPodInfo info, int64_t cycle, uint32_t events, uint32_t hinted = 0,
                        std::optional<Resources> need = std::nullopt);
  // After an error (not a "no fit"): retry after backoff.
  void AddBackoff(QueuedPodInfo info);
  // Moves unschedulable pods that wait for any of `events` to backoff (or active if their
  // backoff already ended).
  // `room`: the free room (allocatable - requested) the event left on its node, when the event
  // concerns one node; null when unknown (every waiting pod moves).
  void OnClusterEvent(uint32_t event, const Resources* room = nullptr);
  // Parked pods an event left parked by the room hint (for tests and metrics).
  int64_t hint_skips() const;
  // Moves every waiting pod to active or backoff (e.g. the bench's "retry all").
  void MoveAllToActive();

  bool Contains(const std::string& key) const;
  QueueStats Stats() const;
  // Every pod waiting in the queue (active, backoff, unschedulable), e.g. for per-team metrics.
  std::vector<PodRef> PendingPods() const;
  // Every queued pod with where it waits, for the admin API's pending list.
  struct PendingEntry {
    PodRef pod;
    std::string_view state;  // "active", "backoff" or "unschedulable"
    int attempts = 0;
  };
  std::vector<PendingEntry> PendingEntries() const;
  // Keys of pods in the unschedulable part (for status and tests).
  std::vector<std::string> UnschedulableKeys() const;
  // Earliest time a backoff ends, if any pod is backing off (lets the bench advance its clock).
  std::optional<absl::Time> NextBackoffExpiry() const;
  // Earliest time an unschedulable pod is retried for having waited max_unschedulable_wait.
  std::optional<absl::Time> NextUnschedulableRetry() const;

 private:
  struct Entry {
    QueuedPodInfo info;
    enum class Where { kActive, kBackoff, kUnschedulable } where = Where::kActive;
    absl::Time backoff_expiry;
    uint32_t waiting_for = kAllEvents;
    uint32_t hinted = 0;      // of waiting_for: events that help only where the room holds `need`
    Resources need;
    absl::Time parked_until;  // kUnschedulable: retried by then at the latest
    std::string group;        // kActive: its NextPodChoice group
  };
  struct InFlight {
    PodRef latest;  // the newest informer copy seen while in flight, if any
    bool ended = false;
  };
  struct ActiveLess {
    const SchedulingQueue* q;
    bool operator()(const Entry* a, const Entry* b) const;
  };

  absl::Duration BackoffDuration(int attempts) const;
  void ToActive(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ToBackoffOrActive(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Park(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Detach(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  AddResult UpsertLocked(PodRef pod, bool create) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the in-flight record of the pod back: false if it ended (then drop it).
  // `changed`: set when the latest copy differs from the attempted one in what scheduling reads.
  bool ReturnLocked(QueuedPodInfo& info, bool* changed = nullptr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<Popped> PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  const Less less_;
  const QueueOptions options_;
  const NextPodChoice next_;
  mutable absl::Mutex mu_;
  StringKeyedMap<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  // Active pods by group (one group, "", without a chooser); no group is kept empty.
  std::map<std::string, std::set<Entry*, ActiveLess>, std::less<>> active_ ABSL_GUARDED_BY(mu_);
  size_t active_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::multimap<absl::Time, Entry*> backoff_ ABSL_GUARDED_BY(mu_);
  // In-flight pods by (namespace/name, UID).
  std::map<std::pair<std::string, std::string>, InFlight, std::less<>> in_flight_
      ABSL_GUARDED_BY(mu_);
  size_t unschedulable_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Parked (unschedulable) pods, indexed so that neither a cluster event nor a pop scans the
  // whole queue: by the event mask their rejecting plugins registered (few distinct masks), and
  // by the time their longest wait ends.
  // Keyed by (waiting_for, hinted, need; the need only when hinted): an event asks each
  // group's room test once, however many pods wait in it.
  struct ParkedGroup {
    uint32_t events = 0;
    uint32_t hinted = 0;
    Resources need;
  };
  struct ParkedGroupLess {
    bool operator()(const ParkedGroup& a, const ParkedGroup& b) const;
  };
  static ParkedGroup GroupOf(const Entry& e);
  std::map<ParkedGroup, std::set<Entry*>, ParkedGroupLess> parked_by_events_ ABSL_GUARDED_BY(mu_);
  int64_t hint_skips_ ABSL_GUARDED_BY(mu_) = 0;
  std::multimap<absl::Time, Entry*> parked_by_time_ ABSL_GUARDED_BY(mu_);
  int64_t cycle_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t move_request_cycle_ ABSL_GUARDED_BY(mu_) = -1;
  uint32_t events_since_move_ ABSL_GUARDED_BY(mu_) = 0;
  // Of those, the events whose room is not kept; and the rooms of the others (at most
  // kMaxRoomsKept, then the next counts as not kept): a pod rejected meanwhile is retried only if
  // an event its hints cannot judge came, or a room that holds it.
  static constexpr size_t kMaxRoomsKept = 64;
  uint32_t unroomed_since_move_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Resources> rooms_since_move_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessel
