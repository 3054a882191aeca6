// The order of pending pods across team queues (QueueQuota as a PendingOrderPlugin): Kueue's
// order of ClusterQueue heads. The scheduling queue keeps pods in groups by namespace, each in
// the QueueSort order: a function of the pod alone that no pod author can multiply (a label
// value could be anything, and every pop looks at every group's head); a queue whose pods fall
// in several namespaces is judged as one queue all the same, and the pods of one namespace that
// name different queues by label wait in one group. Among the groups' heads the next pod is, in this order:
//   1. one its queue holds within its nominal quota (Kueue: "request under nominal quota"), so a
//      team that asks for its own quota is not queued behind another team's borrowing;
//   2. the higher priority;
//   3. the lower weighted dominant share (borrows least for its weight), compared where the two
//      queues' paths in the tree of cohorts part, as fair-share preemption compares them: the
//      departments first when the teams are in two, then the teams; with usage decay on, the
//      shares now decide and, where they tie, the shares now plus those the decayed usages give
//      (decay ordering freed room against the shares now was taken back by preemption);
//   4. the QueueSort order (priority, then age).
// A pod in no queue counts as within its quota with a share of 0. Usage is what the scheduler's
// snapshot shows when the pod is popped (the core refreshes it first), with the pods reserved
// since, as QueueQuota's PreFilter counts it.
#pragma once

#include <span>
#include <string>

#include "scheduler/framework/interface.h"
#include "scheduler/quota/quota_tracker.h"

namespace tessel::queue_quota {

std::string PendingGroupOf(const Pod& pod);
// The index of the head to try next (heads in the QueueSort order). `decayed`: the queues'
// decayed usages, when decay is on.
size_t ChooseNextPending(std::span<const QueuedPodInfo* const> heads, const QueueDirectory& directory,
                         const QuotaTracker& usage, const QuotaTracker* decayed = nullptr);
// Whether `queue` holds `charge` (QuotaCharge: plain resource names) within its nominal quota on
// top of its usage: a flat queue on every resource it governs; a flavored one, for each of its
// resource groups the charge uses, in at least one of the group's flavors.
bool WithinNominalQuota(const QuotaTracker& usage, const Queue& queue, const Resources& charge);

}  // namespace tessel::queue_quota
