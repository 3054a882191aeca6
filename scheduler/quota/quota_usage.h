// What pods charge to their team queues, summed from the nodes the scheduler knows: the one
// definition the QueueQuota plugin, the live metrics and replay's report all use.
//
// A pod charges its requests, with nvidia.com/gpu and nvidia.com/gpu.shared replaced by the
// physical-GPU milli it holds where it runs (scheduler/gpu: a whole GPU 1000, a fraction its
// milli, one of R time-slicing replicas 1000/R), plus the devices its DRA claims take
// (Pod::dra_charge, scheduler/state/dra_charge.h). Every pod placed on a node (bound or assumed,
// whoever scheduled it) that maps to a queue is charged; finished pods are not on nodes.
//
//   QueueUsage usage;
//   for (const NodeInfo* n : snapshot.nodes()) AddNodeUsage(directory, *n, usage);
//   std::vector<QueueReport> r = ReportQueues(directory, usage, pending_pods);
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/quota/queue.h"
#include "scheduler/state/node_info.h"

namespace tessel {

// Usage per queue name.
using QueueUsage = std::map<std::string, Resources, std::less<>>;
// Pods per queue name.
using QueueCounts = std::map<std::string, int64_t, std::less<>>;

// The GPU milli a pod asking `request` holds on `node`: gpu::HeldGpuMilli of the node's
// device-plugin GPUs; on a node without them, where DRA serves nvidia.com/gpu, a whole device
// per GPU asked (a fraction too: DRA does not split a device for it). nullptr (no node yet): as
// the device plugin would hold it.
int64_t HeldGpuMilliOn(const gpu::GpuRequest& request, const NodeInfo* node);
// The pod's charge on `node` (nullptr: no node yet; see above).
Resources QuotaCharge(const Pod& pod, const NodeInfo* node);
// What the pod charges `queue` where it runs on `node`: QuotaCharge, with a flavored queue's
// covered resources under the flavor the node belongs to now (QueueDirectory::Place).
Resources QueueCharge(const QueueDirectory& directory, const Queue& queue, const Pod& pod,
                      const NodeInfo& node);

// Adds the charges of the node's pods to their queues, and counts them in `admitted` if given.
// Pods being deleted (a preemption's victims among them) are not charged: their quota goes to
// whoever their room was freed for, while the node still counts them until they are gone.
bool ChargesQuota(const Pod& pod);
void AddNodeUsage(const QueueDirectory& directory, const NodeInfo& node, QueueUsage& usage,
                  QueueCounts* admitted = nullptr);

class QuotaTracker;

// The flavors a set of pods of the flavored `queue`, charging `charge` together (QuotaCharge
// summed), would use on nodes that do not exist yet: per resource group the charge uses, the
// first flavor in the queue's order whose quota takes all of it on top of `usage` (with
// whenCanBorrow TryNextFlavor, the first without borrowing, else the first by borrowing), in
// group order. Flavors that do not exist are skipped. nullopt when a group has no such flavor
// (the quota is short, not the nodes). For a flat queue: empty when its quota takes all of the
// charge, nullopt when not. What a ProvisioningRequest asks for (docs/provisioning.md).
std::optional<std::vector<const ResourceFlavor*>> FlavorsWithQuota(const QueueDirectory& directory,
                                                                  const Queue& queue, const QuotaTracker& usage,
                                                                  const Resources& charge);

// One flavor of a flavored queue (spec.resourceGroups), amounts by resource name.
struct FlavorReport {
  std::string name;
  Resources nominal;
  Resources usage;
  Resources borrowed;
  Resources lent;
};

// One queue, for metrics, Queue status, the admin API and replay. For a flavored queue the
// maps hold the sums over its flavors, by resource name, and `flavors` each flavor's share.
struct QueueReport {
  std::string name;
  std::string cohort;
  Resources nominal;
  Resources usage;
  Resources borrowed;  // usage above nominal (only in a cohort)
  Resources lendable;  // what its cohort may borrow of its nominal quota (only in a cohort)
  Resources lent;      // what the cohort borrows of it now (QuotaTracker::Lent)
  int64_t weighted_share_milli = 0;  // QuotaTracker::WeightedDominantShare
  int64_t pending_pods = 0;
  int64_t admitted_pods = 0;  // pods on nodes charged to it (bound or being bound)
  // The creation time of its oldest pending pod, if any waits.
  std::optional<absl::Time> oldest_pending;
  std::vector<FlavorReport> flavors;  // in the queue's order; empty for a flat queue
};
// One cohort of the tree (cohort.h), for the Cohort status, metrics and replay: resources by key
// (flavored keys "<resource>@<flavor>" as the quota counts them).
struct CohortReport {
  std::string name;
  std::string parent;              // "" for a root
  std::vector<std::string> path;   // from its root down to itself: the metrics' cohort path
  bool defined = false;            // a Cohort object defines it (else Queues only name it)
  Resources nominal;               // its own quota
  Resources subtree;               // its own quota with what its children lend it
  Resources usage;                 // what every queue below it uses
  Resources borrowed;              // beyond its subtree's quota, from its parent
  Resources lent;                  // what its siblings borrow of it now
  int64_t weighted_share_milli = 0;  // among its siblings (QuotaTracker::ShareOfNode)
  std::vector<std::string> queues;   // its children that are Queues
  std::vector<std::string> cohorts;  // its children that are cohorts
  std::string problem;             // why the queues below it wait ("" when they need not)
};
std::vector<CohortReport> ReportCohorts(const QueueDirectory& directory, const QueueUsage& usage);
// Whether `queue` is below the cohort named `cohort`, at any depth, in the tree `cohorts` reports.
bool QueueIsBelow(const std::vector<CohortReport>& cohorts, const QueueReport& queue, std::string_view cohort);

// Every queue of the directory, in name order. `pending` are the pods waiting to be scheduled;
// `admitted` the pods on nodes per queue (AddNodeUsage), if counted.
std::vector<QueueReport> ReportQueues(const QueueDirectory& directory, const QueueUsage& usage,
                                      const std::vector<const Pod*>& pending,
                                      const QueueCounts& admitted = {});

}  // namespace tessel
