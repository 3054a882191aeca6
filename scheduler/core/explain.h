// Why a pod waits and what would have to change: the admin API's explain (tesselctl explain).
// Computed by dry runs on the scheduler's live snapshot, on the scheduling thread (give it to
// Scheduler::RunOnLoop): PreFilter and Filter on every node, beside the pods nominated there
// (as a scheduling cycle filters), with nothing assumed, reserved, bound or evicted.
//   - the per-node reasons, grouped as kube-scheduler's "0/N nodes are available" message;
//   - the nearest miss, in this order:
//       gang        the pod's gang: how many members of its size could be placed now, and the
//                   largest free GPU block;
//       quota       its queue's quota said no (before any node, or on a node that would
//                   otherwise take it): the queue's usage, nominal quota and borrowing limit;
//       preemption  the node where the fewest pods (lowest priority first) would have to go
//                   for it to fit, those pods, their priorities and whether it may preempt them;
//       none        not even an emptied node would take it (too small, selectors, taints).
//
//   Explanation e;
//   absl::Notification done;
//   s.RunOnLoop([&] { e = Explain(s, "team-a/train-0"); done.Notify(); });
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scheduler/core/scheduler.h"

namespace tessel {

struct NodeReasonGroup {
  std::string reason;
  std::vector<std::string> nodes;  // sorted
};

struct Explanation {
  std::string pod;    // namespace/name
  std::string queue;  // "" for none
  std::string state;  // "pending", "bound", "unknown"
  std::string node;   // when bound
  std::string message;  // "0/N nodes are available: ..." ("" when it fits now)
  std::vector<NodeReasonGroup> reasons;  // by reason, sorted
  std::string nearest_kind;  // "fits", "gang", "quota", "preemption", "none"
  std::string nearest_miss;  // one sentence
  std::vector<std::string> details;
};

// Scheduling thread only (it refreshes and reads the snapshot).
Explanation Explain(Scheduler& scheduler, std::string_view pod_key);

}  // namespace tessel
