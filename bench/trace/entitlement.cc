// Weighted water-filling down a quota tree (see entitlement.h).
#include "bench/trace/entitlement.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "scheduler/api/resources.h"

namespace tessel::bench {
namespace {

// floor(weight_milli * level / 1000), exactly.
__int128 Raise(int64_t weight_milli, int64_t level) {
  const __int128 x = static_cast<__int128>(weight_milli) * level;
  return x >= 0 ? x / 1000 : -((-x + 999) / 1000);
}

int64_t ShareAt(const WaterFillChild& c, int64_t level) {
  const __int128 v = c.quota_milli + Raise(c.weight_milli, level);
  return static_cast<int64_t>(std::clamp<__int128>(v, 0, c.cap_milli));
}

__int128 TotalAt(const std::vector<WaterFillChild>& children, int64_t level) {
  __int128 total = 0;
  for (const WaterFillChild& c : children) total += ShareAt(c, level);
  return total;
}

template <typename Spec>
QuotaTreeNode NodeOf(const Spec& spec, std::string name, std::string parent, bool queue) {
  QuotaTreeNode n{.name = std::move(name), .parent = std::move(parent), .queue = queue,
                  .nominal_milli = spec.nominal.Get(kNvidiaGpu), .weight_milli = spec.weight_milli};
  if (auto it = spec.borrowing_limit.find(kNvidiaGpu); it != spec.borrowing_limit.end()) {
    n.borrowing_limit_milli = it->second;
  }
  return n;
}

}  // namespace

QuotaTreeNode TreeNodeOf(const Queue& queue) { return NodeOf(queue, queue.name(), queue.cohort, true); }
QuotaTreeNode TreeNodeOf(const Cohort& cohort) { return NodeOf(cohort, cohort.name(), cohort.parent, false); }

std::vector<int64_t> WaterFill(const std::vector<WaterFillChild>& children, int64_t capacity_milli) {
  std::vector<int64_t> out(children.size(), 0);
  if (children.empty()) return out;
  int64_t most_quota = 0, most_cap = 0, least_weight = INT64_MAX;
  __int128 caps = 0;
  for (const WaterFillChild& c : children) {
    most_quota = std::max(most_quota, c.quota_milli);
    most_cap = std::max(most_cap, c.cap_milli);
    least_weight = std::min(least_weight, std::max<int64_t>(1, c.weight_milli));
    caps += c.cap_milli;
  }
  if (caps <= capacity_milli) {
    for (size_t k = 0; k < children.size(); ++k) out[k] = children[k].cap_milli;
    return out;
  }
  // Every share is 0 at `lo` and at its cap at `hi`; the total grows with the level.
  int64_t lo = -(most_quota / least_weight + 1) * 1000;
  int64_t hi = (most_cap / least_weight + 1) * 1000;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (TotalAt(children, mid) <= capacity_milli ? lo : hi) = mid;
  }
  int64_t left = capacity_milli;
  for (size_t k = 0; k < children.size(); ++k) {
    out[k] = ShareAt(children[k], lo);
    left -= out[k];
  }
  // The leftover (less than one step of the level) goes, a milli-GPU each in name order, to the
  // children the next step would raise.
  std::vector<size_t> order(children.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return children[a].name < children[b].name; });
  while (left > 0) {
    for (size_t k : order) {
      if (left > 0 && out[k] < ShareAt(children[k], hi)) {
        ++out[k];
        --left;
      }
    }
  }
  return out;
}

std::map<std::string, int64_t> Entitlements(const std::vector<QuotaTreeNode>& tree,
                                            const std::map<std::string, int64_t>& demand, int64_t capacity_milli) {
  std::map<std::string, QuotaTreeNode> nodes;
  for (const QuotaTreeNode& n : tree) nodes[n.name] = n;
  for (const QuotaTreeNode& n : tree) {
    if (!n.parent.empty() && !nodes.contains(n.parent)) nodes[n.parent] = {.name = n.parent};
  }
  std::map<std::string, std::vector<std::string>> children;  // by parent; "" holds the roots
  for (const auto& [name, n] : nodes) children[n.parent].push_back(name);
  std::map<std::string, int64_t> entitled, demand_of, quota_of;
  for (const auto& [name, n] : nodes) entitled[name] = 0;
  // Demand and subtree quota, from the roots down (nodes on a cycle are never reached).
  auto sum_up = [&](auto& self, const std::string& name) -> void {
    const QuotaTreeNode& n = nodes[name];
    int64_t d = 0, q = n.nominal_milli;
    if (n.queue) {
      auto it = demand.find(name);
      d = it == demand.end() ? 0 : it->second;
    }
    for (const std::string& k : children[name]) {
      self(self, k);
      d += demand_of[k];
      q += quota_of[k];
    }
    demand_of[name] = d;
    quota_of[name] = q;
  };
  for (const std::string& root : children[""]) sum_up(sum_up, root);
  auto share_out = [&](auto& self, const std::string& parent, int64_t capacity) -> void {
    std::vector<WaterFillChild> hungry;
    for (const std::string& k : children[parent]) {
      const QuotaTreeNode& n = nodes[k];
      const int64_t d = demand_of[k], q = quota_of[k];
      if (d <= 0) continue;
      int64_t cap = d;
      if (parent.empty()) cap = std::min(d, q);  // a root borrows from nobody
      if (!parent.empty() && n.borrowing_limit_milli) cap = std::min(d, q + *n.borrowing_limit_milli);
      hungry.push_back({.name = k, .quota_milli = q, .weight_milli = n.weight_milli, .cap_milli = cap});
    }
    const std::vector<int64_t> shares = WaterFill(hungry, capacity);
    for (size_t i = 0; i < hungry.size(); ++i) {
      entitled[hungry[i].name] = shares[i];
      if (!nodes[hungry[i].name].queue) self(self, hungry[i].name, shares[i]);
    }
  };
  share_out(share_out, "", capacity_milli);
  return entitled;
}

}  // namespace tessel::bench
