// Queue charges and reports (see quota_usage.h).
#include "scheduler/quota/quota_usage.h"

#include <algorithm>

#include "scheduler/quota/quota_tracker.h"

namespace tessel {
namespace {

// The amounts of `flavor`'s keys (flavor.h), by resource name.
Resources OfFlavor(const Resources& amounts, std::string_view flavor) {
  Resources out;
  for (const auto& [key, amount] : amounts.Entries()) {
    const QuotaKey k = SplitQuotaKey(key);
    if (k.flavor == flavor) out.Set(k.resource, amount);
  }
  return out;
}

// Every flavor's amounts summed by resource name.
Resources SumOverFlavors(const Resources& amounts) {
  Resources out;
  for (const auto& [key, amount] : amounts.Entries()) {
    const std::string_view r = SplitQuotaKey(key).resource;
    out.Set(r, out.Get(r) + amount);
  }
  return out;
}

// A flavored queue's report: its flavors one by one, and the sums by resource name.
void SplitFlavors(const Queue& q, QueueReport& report) {
  for (const ResourceGroup& group : q.resource_groups) {
    for (const std::string& flavor : group.flavors) {
      report.flavors.push_back(FlavorReport{.name = flavor,
                                            .nominal = OfFlavor(report.nominal, flavor),
                                            .usage = OfFlavor(report.usage, flavor),
                                            .borrowed = OfFlavor(report.borrowed, flavor),
                                            .lent = OfFlavor(report.lent, flavor)});
    }
  }
  for (Resources* r : {&report.nominal, &report.usage, &report.borrowed, &report.lendable, &report.lent}) {
    *r = SumOverFlavors(*r);
  }
}

}  // namespace

int64_t HeldGpuMilliOn(const gpu::GpuRequest& request, const NodeInfo* node) {
  if (node == nullptr) return gpu::HeldGpuMilli(request, gpu::GpuInventory{});
  const gpu::GpuInventory& inventory = node->gpus().inventory();
  if (inventory.count == 0 && request.needs_devices()) {
    return int64_t{request.kind == gpu::GpuRequest::Kind::kFraction ? 1 : request.count} * gpu::kMilliPerGpu;
  }
  return gpu::HeldGpuMilli(request, inventory);
}

Resources QuotaCharge(const Pod& pod, const NodeInfo* node) {
  Resources charge = pod.requests;
  charge.Set(kNvidiaGpuShared, 0);
  charge.Set(kNvidiaGpu, HeldGpuMilliOn(gpu::ReadGpuRequest(pod), node));
  (void)charge.Add(pod.dra_charge);  // devices its DRA claims take (dra_charge.h)
  return charge;
}

Resources QueueCharge(const QueueDirectory& directory, const Queue& queue, const Pod& pod,
                      const NodeInfo& node) {
  Resources charge = QuotaCharge(pod, &node);
  if (!queue.flavored() || node.node() == nullptr) return charge;
  return directory.Place(queue, charge, node.node()->meta.labels).charge;
}

std::optional<std::vector<const ResourceFlavor*>> FlavorsWithQuota(const QueueDirectory& directory,
                                                                  const Queue& queue, const QuotaTracker& usage,
                                                                  const Resources& charge) {
  std::vector<const ResourceFlavor*> chosen;
  if (!queue.flavored()) {  // the queue's own quota, for the whole charge
    if (!usage.Check(queue.name(), charge).fits) return std::nullopt;
    return chosen;
  }
  for (const ResourceGroup& group : queue.resource_groups) {
    if (!group.UsedBy(charge)) continue;
    const ResourceFlavor* by_borrowing = nullptr;
    const ResourceFlavor* taken = nullptr;
    for (const std::string& name : group.flavors) {
      auto it = directory.flavors().find(name);
      if (it == directory.flavors().end()) continue;
      const QuotaVerdict verdict = usage.Check(queue.name(), group.InFlavor(charge, name));
      if (!verdict.fits) continue;
      if (verdict.borrows && queue.when_can_borrow == WhenCanBorrow::kTryNextFlavor) {
        if (by_borrowing == nullptr) by_borrowing = &it->second;
        continue;
      }
      taken = &it->second;
      break;
    }
    if (taken == nullptr) taken = by_borrowing;
    if (taken == nullptr) return std::nullopt;
    chosen.push_back(taken);
  }
  return chosen;
}

bool ChargesQuota(const Pod& pod) { return !pod.meta.deletion_timestamp.has_value(); }

void AddNodeUsage(const QueueDirectory& directory, const NodeInfo& node, QueueUsage& usage,
                  QueueCounts* admitted) {
  for (const PodRef& pod : node.pods()) {
    if (!ChargesQuota(*pod)) continue;
    const Queue* queue = directory.QueueFor(*pod).queue;
    if (queue == nullptr) continue;
    (void)usage[queue->name()].Add(QueueCharge(directory, *queue, *pod, node));
    if (admitted != nullptr) ++(*admitted)[queue->name()];
  }
}

std::vector<QueueReport> ReportQueues(const QueueDirectory& directory, const QueueUsage& usage,
                                      const std::vector<const Pod*>& pending,
                                      const QueueCounts& admitted) {
  QuotaTracker tracker(&directory);
  for (const auto& [queue, amount] : usage) tracker.AddUsage(queue, amount);
  struct Waiting {
    int64_t pods = 0;
    std::optional<absl::Time> oldest;
  };
  std::map<std::string, Waiting, std::less<>> waiting;
  for (const Pod* pod : pending) {
    const Queue* q = directory.QueueFor(*pod).queue;
    if (q == nullptr) continue;
    Waiting& w = waiting[q->name()];
    ++w.pods;
    if (!w.oldest || pod->meta.creation_timestamp < *w.oldest) w.oldest = pod->meta.creation_timestamp;
  }
  std::vector<QueueReport> out;
  for (const Queue& q : directory.queues()) {
    auto w = waiting.find(q.name());
    auto a = admitted.find(q.name());
    out.push_back(QueueReport{.name = q.name(),
                              .cohort = q.cohort,
                              .nominal = q.nominal,
                              .usage = tracker.Usage(q.name()),
                              .borrowed = tracker.Borrowed(q.name()),
                              .lendable = tracker.Lendable(q.name()),
                              .lent = tracker.Lent(q.name()),
                              .weighted_share_milli = tracker.WeightedDominantShare(q.name()),
                              .pending_pods = w == waiting.end() ? 0 : w->second.pods,
                              .admitted_pods = a == admitted.end() ? 0 : a->second,
                              .oldest_pending = w == waiting.end() ? std::nullopt : w->second.oldest});
    if (q.flavored()) SplitFlavors(q, out.back());
  }
  return out;
}

bool QueueIsBelow(const std::vector<CohortReport>& cohorts, const QueueReport& queue, std::string_view cohort) {
  for (const CohortReport& c : cohorts) {
    if (c.name == queue.cohort) return std::find(c.path.begin(), c.path.end(), cohort) != c.path.end();
  }
  return false;
}

std::vector<CohortReport> ReportCohorts(const QueueDirectory& directory, const QueueUsage& usage) {
  QuotaTracker tracker(&directory);
  for (const auto& [queue, amount] : usage) tracker.AddUsage(queue, amount);
  const CohortTree& tree = directory.tree();
  std::vector<CohortReport> out;
  for (int i = 0; i < static_cast<int>(tree.nodes().size()); ++i) {
    const CohortTree::Node& n = tree.node(i);
    if (n.queue) continue;
    CohortReport r{.name = n.name,
                   .parent = n.parent == CohortTree::kNone ? "" : tree.node(n.parent).name,
                   .defined = n.quota.has_value(),
                   .nominal = n.quota.has_value() ? n.quota->nominal : Resources{},
                   .subtree = n.subtree,
                   .usage = tracker.SubtreeUsage(i),
                   .borrowed = tracker.BorrowedOfNode(i),
                   .lent = tracker.LentOfNode(i),
                   .weighted_share_milli = tracker.ShareOfNode(i),
                   .problem = n.problem};
    std::vector<int> up = tree.Ancestors(i);
    for (auto it = up.rbegin(); it != up.rend(); ++it) r.path.push_back(tree.node(*it).name);
    r.path.push_back(n.name);
    for (int k : n.children) (tree.node(k).queue ? r.queues : r.cohorts).push_back(tree.node(k).name);
    if (r.problem.empty()) {
      for (int a : up) {
        if (!tree.node(a).problem.empty()) {
          r.problem = tree.node(a).problem;
          break;
        }
      }
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const CohortReport& a, const CohortReport& b) { return a.name < b.name; });
  return out;
}

}  // namespace tessel
