// The core's bookkeeping of gangs between cycles. A pending gang is one queue entry: its "head"
// (the earliest pending member) stands for it, so the gang is ordered by the priority and age of
// its first member; the other pending members wait here. The tracker knows which members are
// pending, placed or being evicted, their pod phases, the last status reported, and the
// rollback evictions still to retry. It puts heads into the queue through GangQueue, under its
// own lock, so that a head and the queue never disagree. Thread-safe.
//
//   GangTracker tracker(book, queue);
//   tracker.Admit(pod);                       // a pending member: waits, or heads the gang
//   GangTracker::Cycle c = tracker.BeginCycle(head, book.Resolve(*head));
//   if (auto placed = tracker.Commit(c.key, head_key, placements)) ...  // else superseded
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/framework/interface.h"
#include "scheduler/gang/gang_book.h"
#include "scheduler/gang/gang_status.h"
#include "scheduler/gang/planner.h"
#include "scheduler/util/strings.h"

namespace tessel::gang {

// The scheduling queue as the tracker uses it (the core adapts its queue).
class GangQueue {
 public:
  virtual ~GangQueue() = default;
  virtual void Add(PodRef head) = 0;
  virtual void Update(PodRef head) = 0;
  virtual void Delete(const std::string& key) = 0;
  virtual bool Contains(const std::string& key) const = 0;
  virtual void AddBackoff(QueuedPodInfo info) = 0;
};

// A status to report for a gang (the tracker decides; the core sends).
using GangReport = std::pair<GangId, GangStatusUpdate>;

// How long a gang may hold fewer than minMember members placed when its PodGroup sets no
// spec.scheduleTimeoutSeconds (docs/gang.md).
inline constexpr absl::Duration kDefaultStrandedTimeout = absl::Minutes(10);

class GangTracker {
 public:
  GangTracker(const GangBook* book, GangQueue* queue) : book_(book), queue_(queue) {}

  // --- Members as the informers see them. ---
  // Takes a pending pod if it belongs to a gang (true): it heads the gang in the queue or waits
  // behind its head. An ordinary pod is left alone (false).
  bool Admit(const PodRef& pod);
  // A member has a node (bound or assumed) or finished: it counts as placed, or leaves. The
  // gang's last report again, with new counts, when its members' phases changed.
  std::optional<GangReport> NotePlaced(const Pod& pod);
  // The pod is gone (deleted, or finished before it was placed).
  std::optional<GangReport> Forget(const std::string& key);
  // A pending member's copy replaced by a newer one (e.g. with a changed nomination).
  void ReplacePending(const PodRef& pod);
  bool IsHead(const Pod& pod) const;
  // The members that wait behind their gang's head (for status, metrics, the admin API).
  std::vector<PodRef> PendingMembers() const;

  // --- One gang cycle (scheduler/core/gang_cycle.cc). ---
  struct Cycle {
    enum class Kind {
      kSuperseded,  // the popped pod no longer heads its gang
      kDissolved,   // no longer a gang (e.g. a basic policy): see Dissolve
      kWaiting,     // its gang object does not exist (yet)
      kReady,
    };
    Kind kind = Kind::kReady;
    std::vector<PodRef> members;  // pending, earliest first
    int32_t placed = 0;
    std::vector<std::string> placed_keys;  // the members placed (namespace/name)
  };
  Cycle BeginCycle(const Pod& head, const GangBook::Resolution& resolution);
  // Its members go to the queue as ordinary pods. The head must not be in flight any more.
  void Dissolve(const std::string& gang_key);
  // The plan fell short at `now`: remembered for the timeout's message. True when the gang's
  // wait already timed out.
  bool NoteShortfall(const std::string& gang_key, const std::string& message, absl::Time now);
  // The plan is held: its members count as placed and the rest wait behind a new head. The
  // placed count, or nullopt when a member changed or left during the cycle (nothing changed).
  std::optional<int32_t> Commit(const std::string& gang_key, const std::string& head_key,
                                const std::vector<MemberPlacement>& placements);
  // The cycle let go of its head without placing the gang: another member (or it) heads again.
  // The head must not be in flight any more (the queue would keep it out).
  void Abandon(const std::string& gang_key, const std::string& head_key);
  // A gang's bind failed for some members. Members bound (`bound[i]`) are being evicted when
  // `may_write` (no longer counted), the others pending again; the gang waits with backoff.
  void RollBack(const GangId& id, const std::vector<MemberPlacement>& members,
                const std::vector<bool>& bound, bool may_write, const QueuedPodInfo& head_info);

  // --- Reports and timeouts. ---
  // The update as reported: the members' own progress from their pod phases decides the later
  // phases. Remembered to re-send when the counts change.
  GangStatusUpdate Record(const GangId& id, GangStatusUpdate update);
  // Gangs whose scheduleTimeoutSeconds passed at `now`: reported Failed once per wait.
  std::vector<GangReport> ExpireWaits(absl::Time now);

  // --- Gangs stranded below minMember. ---
  // A gang with some members placed but fewer than minMember, none of them still being bound by
  // this process (`binding` says which are), holds nodes it cannot use. It is rolled back when
  // a member was placed before this process started (a crash or a leader change mid-gang), or
  // when its wait passed scheduleTimeoutSeconds (kDefaultStrandedTimeout when unset); a gang
  // with no pending member left starts that wait at the first TakeTimedOutStranded that sees it.
  // Members that succeeded count towards minMember. Its placed members are then counted as
  // evicting, and returned to evict.
  struct Stranded {
    GangId id;
    std::vector<std::string> members;  // placed members to evict ("namespace/name")
    std::string message;               // why, for their events and the gang's status
    int32_t min_member = 0;
  };
  using BindingFn = std::function<bool(const std::string& key)>;
  // At a shortfall of the gang's cycle (after NoteShortfall).
  std::optional<Stranded> TakeStranded(const std::string& gang_key, absl::Time now, const BindingFn& binding);
  // Every gang whose hold below minMember timed out at `now` (the loop's housekeeping).
  std::vector<Stranded> TakeTimedOutStranded(absl::Time now, const BindingFn& binding);

  // --- Evictions of rolled-back members, retried until the pod is gone. ---
  struct PendingEviction {
    PodRef pod;
    std::string message;
    absl::Time due;
    absl::Duration backoff;
  };
  void RetryEvictionLater(PendingEviction eviction);
  void ClearEviction(const std::string& key);
  std::vector<PendingEviction> DueEvictions(absl::Time now) const;

  // The earliest time a gang's wait times out or an eviction is due.
  std::optional<absl::Time> NextWakeup() const;

 private:
  struct GangState {
    GangId id;
    StringKeyedMap<PodRef> pending;  // members without a node, not assumed
    StringSet placed;                // members bound, assumed or being bound
    StringSet evicting;              // bound members evicted by a rollback (not counted)
    StringSet inherited;             // placed members first seen bound (not placed by this process)
    std::string head;                // the member in the queue or in a cycle; "" when none
    std::optional<absl::Time> waiting_since;  // first failed attempt of the current wait
    std::optional<absl::Duration> timeout;    // scheduleTimeoutSeconds
    bool timed_out = false;                   // reported Failed for the current wait
    int32_t min_member = 0;
    std::string last_message;                 // why the last attempt fell short
    // Members by pod phase, from the informer: running among `placed`; the finished ones are
    // kept while the gang has members left.
    StringSet running, succeeded, failed;
    // The last report, re-sent with new counts when a member's phase changes.
    std::optional<GangStatusUpdate> last_report;
  };
  // Puts the earliest pending member in the queue as the gang's head, if there is none; after
  // a failure (`previous`, `backoff`) with its queueing history.
  void RequeueHeadLocked(GangState& g, std::optional<QueuedPodInfo> previous, bool backoff)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why the gang must let its placed members go at `now`, or nullopt (see Stranded).
  // `at_shortfall`: a member placed before this process started counts (the gang had its try).
  std::optional<std::string> StrandedLocked(const GangState& g, absl::Time now, const BindingFn& binding,
                                            bool at_shortfall) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Stranded StrandLocked(GangState& g, std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Some members placed, but with those that succeeded fewer than minMember.
  static bool ShortOfMinMember(const GangState& g);
  // Records a member's pod phase; true if the gang's counts changed.
  static bool NotePhase(GangState& g, const std::string& key, PodPhase phase);

  const GangBook* book_;
  GangQueue* queue_;
  mutable absl::Mutex mu_;
  std::map<std::string, GangState> gangs_ ABSL_GUARDED_BY(mu_);  // by GangId::Key()
  StringKeyedMap<std::string> gang_of_ ABSL_GUARDED_BY(mu_);     // pod key -> gang key
  StringKeyedMap<PendingEviction> evictions_ ABSL_GUARDED_BY(mu_);  // by pod key
};

// The member that stands for a gang: the earliest created (then by key).
bool EarlierMember(const PodRef& a, const PodRef& b);

}  // namespace tessel::gang
