// The record of disruptions: when each workload's pods were moved or preempted, so that a pod is
// not moved again within a window (the anti-thrash limit) and its events can say how often it
// was disrupted. A workload is what its controller recreates: the controller's UID (with the
// Job completion index when there is one), else the pod itself. Thread-safe; kept in memory by
// the scheduler (a restart forgets it, as kube-scheduler forgets its nominations).
//
//   ledger.Record(WorkloadKey(pod), DisruptionKind::kMove, now);
//   int moves = ledger.Count(WorkloadKey(pod), DisruptionKind::kMove, now - window);
#pragma once

#include <deque>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/util/strings.h"

namespace tessel {

enum class DisruptionKind { kMove, kPreemption };

// Who the pod is across its controller's recreations (see the file comment).
std::string WorkloadKey(const Pod& pod);

class DisruptionLedger {
 public:
  // Notes a disruption of `workload` at `at`.
  void Record(const std::string& workload, DisruptionKind kind, absl::Time at);
  // How many disruptions of this kind `workload` had at or after `since`.
  int Count(const std::string& workload, DisruptionKind kind, absl::Time since) const;
  // Forgets what happened before `before` (the longest window any rule looks back). Costs
  // O(entries forgotten): the scheduler calls it every loop.
  void Prune(absl::Time before);

 private:
  struct Entry {
    DisruptionKind kind;
    absl::Time at;
  };
  mutable absl::Mutex mu_;
  StringKeyedMap<std::deque<Entry>> history_ ABSL_GUARDED_BY(mu_);
  // Every entry's time and workload in the order recorded (the clock does not go back), so
  // Prune finds the old ones at the front.
  std::deque<std::pair<absl::Time, std::string>> recorded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
