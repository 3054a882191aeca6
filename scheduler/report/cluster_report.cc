// The cluster report (see cluster_report.h).
#include "scheduler/report/cluster_report.h"

namespace tessel {

GpuReport ReportGpus(const Snapshot& snapshot, const gpu::FragModel* workload) {
  std::vector<gpu::GpuNode> nodes;
  nodes.reserve(snapshot.size());
  GpuReport out;
  for (const NodeInfo* info : snapshot.nodes()) {
    const gpu::GpuDevices& gpus = info->gpus();
    nodes.push_back({.gpus = &gpus, .cpu_free = info->FreeMilliCpu()});
    out.whole_free_devices += gpus.whole_free_devices();
    for (int32_t i = 0; i < gpus.count(); ++i) {
      if (gpus.AllocatedMilli(i) > 0) out.partially_used_free_milli += gpus.FreeMilli(i);
    }
  }
  gpu::FragModel running;
  if (workload == nullptr) {
    std::vector<const Pod*> pods;
    for (const NodeInfo* info : snapshot.nodes()) {
      for (const PodRef& pod : info->pods()) pods.push_back(pod.get());
    }
    running = gpu::WorkloadOfPods(pods);
    workload = &running;
  }
  const gpu::GpuEquivalents sum = gpu::SumGpuEquivalents(nodes);
  const gpu::ClusterFragmentation frag = gpu::MeasureFragmentation(nodes, *workload);
  out.devices = sum.devices;
  out.capacity_milli = sum.capacity_milli;
  out.allocated_milli = sum.allocated_milli;
  out.idle_milli = frag.idle_milli;
  out.fragmented_milli = frag.fragmented_milli;
  return out;
}

std::vector<QueueReport> ReportQueueUsage(const Snapshot& snapshot, const QueueDirectory& queues,
                                          const std::vector<const Pod*>& pending,
                                          std::vector<CohortReport>* cohorts) {
  QueueUsage usage;
  QueueCounts admitted;
  for (const NodeInfo* info : snapshot.nodes()) AddNodeUsage(queues, *info, usage, &admitted);
  if (cohorts != nullptr) *cohorts = ReportCohorts(queues, usage);
  return ReportQueues(queues, usage, pending, admitted);
}

ClusterReport ReportCluster(const Snapshot& snapshot, const ClusterReportInputs& inputs) {
  ClusterReport out;
  out.nodes = static_cast<int64_t>(snapshot.size());
  for (const NodeInfo* info : snapshot.nodes()) {
    (void)out.allocatable.Add(info->allocatable());
    (void)out.requested.Add(info->requested());
  }
  out.gpus = ReportGpus(snapshot, inputs.workload);
  if (inputs.queues != nullptr) {
    out.queues = ReportQueueUsage(snapshot, *inputs.queues, inputs.pending, &out.cohorts);
  }
  return out;
}

}  // namespace tessel
