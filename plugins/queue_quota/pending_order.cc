// The order of pending pods across team queues (see pending_order.h).
#include "plugins/queue_quota/pending_order.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

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
  // A queue's shares down its path in the tree: the subtree under the root that holds it first,
  // the queue last (flat cohorts: the queue alone). Compared from the front, two queues are
  // ordered by the first level where their paths part, as fair-share preemption compares them
  // (the children of the cohort where they meet): judged by the queues' own shares alone, a
  // queue within its department's share went first while its department was above the other's,
  // and the other's next pod took the room straight back.
  const CohortTree& tree = directory.tree();
  std::map<int, std::pair<int64_t, int64_t>> shares;  // tree node -> (share now, with decay)
  auto share_of = [&](int node) {
    auto [it, fresh] = shares.try_emplace(node);
    if (fresh) {
      it->second.first = usage.ShareOfNode(node);
      if (decayed != nullptr) it->second.second = it->second.first + decayed->ShareOfNode(node);
    }
    return it->second;
  };
  // Smaller is earlier: (borrows, -priority, shares now, shares with decay, position in the
  // QueueSort order).
  using Key = std::tuple<bool, int64_t, std::vector<int64_t>, std::vector<int64_t>, size_t>;
  std::optional<Key> best;
  size_t chosen = 0;
  for (size_t i = 0; i < heads.size(); ++i) {
    const Pod& pod = *heads[i]->pod;
    const QueueDirectory::Lookup lookup = directory.QueueFor(pod);
    Key key{false, -int64_t{pod.PriorityValue()}, {}, {}, i};
    if (lookup.queue != nullptr) {
      std::get<0>(key) = !WithinNominalQuota(usage, *lookup.queue, QuotaCharge(pod, nullptr));
      if (const int node = tree.QueueNode(lookup.queue->name()); node != CohortTree::kNone) {
        std::vector<int> path = tree.Ancestors(node);  // parent first, root last
        if (!path.empty()) path.pop_back();            // the root has no share
        std::reverse(path.begin(), path.end());
        path.push_back(node);
        for (const int n : path) {
          const auto [now, with_decay] = share_of(n);
          std::get<2>(key).push_back(now);
          std::get<3>(key).push_back(with_decay);
        }
      }
    }
    if (!best.has_value() || key < *best) {
      best = std::move(key);
      chosen = i;
    }
  }
  return chosen;
}

}  // namespace tessel::queue_quota
