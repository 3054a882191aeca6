// One report of the cluster over a snapshot: node totals, GPU accounting in physical-GPU
// equivalents, FGD's fragmentation and every team Queue's usage. The live metrics, the admin
// API's queue list and tessel-bench replay all read it, so each figure has one definition.
//
// GPUs are counted as scheduler/gpu accounts them, in exact integer milli: every device is 1000,
// R time-slicing or MPS replicas of one GPU together are 1000 (a replica 1000/R), a fraction is
// its milli, a MIG slice N/7 of 1000 (fragmentation.h, SumGpuEquivalents). Queue usage is what
// quota charges (quota_usage.h).
//
//   Snapshot snapshot;
//   cache.UpdateSnapshot(snapshot);
//   ClusterReport r = ReportCluster(snapshot, {.queues = directory.get(), .pending = pending});
//   r.gpus.allocated_milli, r.gpus.fragmented_milli, r.queues[0].borrowed ...
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/api/resources.h"
#include "scheduler/gpu/fragmentation.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/state/snapshot.h"

namespace tessel {

// The cluster's GPUs, in milli-GPU (physical-GPU equivalents).
struct GpuReport {
  int64_t devices = 0;          // physical GPUs
  int64_t capacity_milli = 0;   // every device 1000, plus allocatable MIG slices N/7 x 1000
  int64_t allocated_milli = 0;  // what pods hold: whole GPUs, fractions, replicas, MIG slices
  int64_t whole_free_devices = 0;          // devices no pod uses
  int64_t partially_used_free_milli = 0;   // free milli of devices some pod uses
  int64_t idle_milli = 0;                  // free milli of every device
  // FGD's fragmentation: the idle milli that the workload's pod classes could not use where it
  // sits (fragmentation.h, MeasureFragmentation).
  int64_t fragmented_milli = 0;

  int64_t free_milli() const { return capacity_milli - allocated_milli; }
};

struct ClusterReport {
  int64_t nodes = 0;
  Resources allocatable;  // sum of the nodes' allocatable (nvidia.com/gpu as advertised: replicas)
  Resources requested;    // sum of what their pods request
  GpuReport gpus;
  std::vector<QueueReport> queues;  // every team Queue in name order; empty without queues
  std::vector<CohortReport> cohorts;  // every cohort of the tree in name order
};

// What a report reads besides the snapshot.
struct ClusterReportInputs {
  // The team queues; null: no queue report.
  const QueueDirectory* queues = nullptr;
  // The pods waiting to be scheduled (each queue's pending count and oldest wait).
  std::vector<const Pod*> pending;
  // The workload fragmentation is measured against; null: the mix of the pods on the nodes.
  const gpu::FragModel* workload = nullptr;
};

ClusterReport ReportCluster(const Snapshot& snapshot, const ClusterReportInputs& inputs);

// The parts, for callers that need only one.
GpuReport ReportGpus(const Snapshot& snapshot, const gpu::FragModel* workload = nullptr);
// Usage (pods on nodes), pods admitted and pending per queue; see ReportQueues. With
// `cohorts`, the cohorts of the tree too (ReportCohorts).
std::vector<QueueReport> ReportQueueUsage(const Snapshot& snapshot, const QueueDirectory& queues,
                                          const std::vector<const Pod*>& pending,
                                          std::vector<CohortReport>* cohorts = nullptr);

}  // namespace tessel
