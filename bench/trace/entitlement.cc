// Weighted water-filling down a quota tree (see entitlement.h).
#include "bench/trace/entitlement.h"

#include <algorithm>
#include <numeric>

#include "scheduler/api/resources.h"

namespace tessel::bench {
namespace {

// A child's share at a level >= 0: its quota and weight x level (milli-GPU per unit of weight,
// rounded down), at most its cap.
int64_t ShareAt(const WaterFillChild& c, int64_t level) {
  const __int128 v = c.quota_milli + static_cast<__int128>(c.weight_milli) * level / 1000;
  return static_cast<int64_t>(std::min<__int128>(v, c.cap_milli));
}

__int128 TotalAt(const std::vector<WaterFillChild>& children, int64_t level) {
  __int128 total = 0;
  for (const WaterFillChild& c : children) total += ShareAt(c, level);
  return total;
}

// Gives `left` milli-GPUs, one each in name order, to the children whose share is below `limit`.
void GiveLeftover(const std::vector<WaterFillChild>& children, const std::vector<int64_t>& limit, int64_t left,
                  std::vector<int64_t>& out) {
  std::vector<size_t> order(children.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return children[a].name < children[b].name; });
  while (left > 0) {
    bool gave = false;
    for (size_t k : order) {
      if (left > 0 && out[k] < limit[k]) {
        ++out[k];
        --left;
        gave = true;
      }
    }
    if (!gave) return;
  }
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
  const size_t n = children.size();
  std::vector<int64_t> out(n, 0), floor(n), cap(n);
  __int128 floors = 0, caps = 0;
  int64_t most_cap = 0, least_weight = INT64_MAX;
  for (size_t k = 0; k < n; ++k) {
    const WaterFillChild& c = children[k];
    floor[k] = std::min(c.quota_milli, c.cap_milli);
    cap[k] = c.cap_milli;
    floors += floor[k];
    caps += c.cap_milli;
    most_cap = std::max(most_cap, c.cap_milli);
    least_weight = std::min(least_weight, std::max<int64_t>(1, c.weight_milli));
  }
  if (caps <= capacity_milli) return cap;
  if (capacity_milli <= floors && floors > 0) {
    // Less than the quotas asked for: every floor is cut in proportion.
    int64_t left = capacity_milli;
    for (size_t k = 0; k < n; ++k) {
      out[k] = static_cast<int64_t>(static_cast<__int128>(floor[k]) * capacity_milli / floors);
      left -= out[k];
    }
    GiveLeftover(children, floor, left, out);
    return out;
  }
  // The largest level whose total fits: the total is `floors` at 0 and every cap at `hi`.
  int64_t lo = 0, hi = (most_cap / least_weight + 1) * 1000;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (TotalAt(children, mid) <= capacity_milli ? lo : hi) = mid;
  }
  int64_t left = capacity_milli;
  std::vector<int64_t> next(n);
  for (size_t k = 0; k < n; ++k) {
    out[k] = ShareAt(children[k], lo);
    next[k] = ShareAt(children[k], lo + 1);
    left -= out[k];
  }
  // What rounding left (less than one step of the level) goes to the children the next step raises.
  GiveLeftover(children, next, left, out);
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

std::vector<std::string> PathUp(const std::map<std::string, std::string>& parent, const std::string& name) {
  std::vector<std::string> path;
  for (std::string n = name; !n.empty() && path.size() <= parent.size();) {
    path.push_back(n);
    auto it = parent.find(n);
    n = it == parent.end() ? "" : it->second;
  }
  return path;
}

}  // namespace tessel::bench
