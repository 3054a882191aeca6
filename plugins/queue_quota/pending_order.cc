// The order of pending pods across team queues (see pending_order.h).
#include "plugins/queue_quota/pending_order.h"

#include <algorithm>
#include <tuple>

#include "scheduler/quota/quota_usage.h"

namespace tessel::queue_quota {

std::string PendingGroupOf(const Pod& pod) { return pod.meta.namespace_; }

bool WithinNominalQuota(const QuotaTracker& usage, const Queue& queue, const Resources& charge) {
  if (!queue.flavored()) return usage.WithinNominal(queue.name(), charge);
  for (const ResourceGroup& group : queue.resource_groups) {
    if (!group.UsedBy(charge)) continue;
    const bool fits_one = std::any_of(group.flavors.begin(), group.flavors.end(), [&](const std::string& flavor) {
      return usage.WithinNominal(queue.name(), group.InFlavor(charge, flavor));
    });
    if (!fits_one) return false;
  }
  return true;
}

size_t ChooseNextPending(std::span<const QueuedPodInfo* const> heads, const QueueDirectory& directory,
                         const QuotaTracker& usage, const QuotaTracker* decayed) {
  // Smaller is earlier: (borrows, -priority, share, position in the QueueSort order).
  using Key = std::tuple<bool, int64_t, int64_t, size_t>;
  std::optional<Key> best;
  size_t chosen = 0;
  for (size_t i = 0; i < heads.size(); ++i) {
    const Pod& pod = *heads[i]->pod;
    const QueueDirectory::Lookup lookup = directory.QueueFor(pod);
    bool borrows = false;
    int64_t share = 0;
    if (lookup.queue != nullptr) {
      borrows = !WithinNominalQuota(usage, *lookup.queue, QuotaCharge(pod, nullptr));
      share = usage.WeightedDominantShare(lookup.queue->name());
      if (decayed != nullptr) share += decayed->WeightedDominantShare(lookup.queue->name());
    }
    const Key key{borrows, -int64_t{pod.PriorityValue()}, share, i};
    if (!best.has_value() || key < *best) {
      best = key;
      chosen = i;
    }
  }
  return chosen;
}

}  // namespace tessel::queue_quota
