// Queue charges and reports (see quota_usage.h).
#include "scheduler/quota/quota_usage.h"

#include "scheduler/quota/quota_tracker.h"

namespace tessel {

Resources QuotaCharge(const Pod& pod, const GpuInventory& inventory) {
  Resources charge = pod.requests;
  charge.Set(kNvidiaGpuShared, 0);
  charge.Set(kNvidiaGpu, HeldGpuMilli(ReadGpuRequest(pod), inventory));
  return charge;
}

bool ChargesQuota(const Pod& pod) { return !pod.meta.deletion_timestamp.has_value(); }

void AddNodeUsage(const QueueDirectory& directory, const NodeInfo& node, QueueUsage& usage) {
  for (const PodRef& pod : node.pods()) {
    if (!ChargesQuota(*pod)) continue;
    const Queue* queue = directory.QueueFor(*pod).queue;
    if (queue == nullptr) continue;
    (void)usage[queue->name()].Add(QuotaCharge(*pod, node.gpus().inventory()));
  }
}

std::vector<QueueReport> ReportQueues(const QueueDirectory& directory, const QueueUsage& usage,
                                      const std::vector<const Pod*>& pending) {
  QuotaTracker tracker(&directory);
  for (const auto& [queue, amount] : usage) tracker.AddUsage(queue, amount);
  std::map<std::string, int64_t, std::less<>> waiting;
  for (const Pod* pod : pending) {
    if (const Queue* q = directory.QueueFor(*pod).queue; q != nullptr) ++waiting[q->name()];
  }
  std::vector<QueueReport> out;
  for (const Queue& q : directory.queues()) {
    auto w = waiting.find(q.name());
    out.push_back(QueueReport{.name = q.name(),
                              .cohort = q.cohort,
                              .nominal = q.nominal,
                              .usage = tracker.Usage(q.name()),
                              .borrowed = tracker.Borrowed(q.name()),
                              .pending_pods = w == waiting.end() ? 0 : w->second});
  }
  return out;
}

}  // namespace tessel
