// `tessel-bench trace`, the yardstick for fairness over time: the GPUs each queue and cohort of a
// quota tree is entitled to, given what each asks for now. The trace compares what they hold
// with it at every sample (docs/bench.md, "An organisation over time").
//
// At each level of the tree the capacity C of the parent is divided among the children that
// have demand (GPUs their jobs hold or wait for) by weighted water-filling on what each borrows:
//   e(k) = min(cap(k), quota(k) + weight(k) * L),  L >= 0 the largest level with sum e(k) <= C
// where quota(k) is the nominal nvidia.com/gpu quota of k's whole subtree and cap(k) =
// min(demand(k), quota(k) + borrowingLimit(k)) (no limit: the demand). So each child gets at
// least min(demand, quota) and borrows beyond its quota in proportion to its weight (Kueue's fair
// sharing of borrowed capacity, which the scheduler's fair-share preemption converges to). When
// C does not cover every child's min(demand, quota) (a cluster smaller than the quotas), those
// are cut in proportion instead. The roots share the cluster the same way, a root (or a queue in
// no cohort) capped at its own tree's quota; the children of a cohort share the cohort's
// entitlement. Children without demand get 0. Exact integers: GPUs in milli, L in milli-GPU per
// unit of weight, rounded down; the milli-GPUs rounding leaves go one each, in name order, to the
// children the next step would raise. Lending limits and flavors are not modelled.
//
//   std::vector<QuotaTreeNode> tree = {{.name = "org", .nominal_milli = 4000},
//                                      {.name = "a", .parent = "org", .queue = true, .nominal_milli = 4000}};
//   std::map<std::string, int64_t> e = Entitlements(tree, {{"a", 6000}}, /*capacity_milli=*/16000);
//   e["a"] == 6000, e["org"] == 6000   // a borrows 2 of org's own 4; the tree holds 8 at most
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/quota/cohort.h"
#include "scheduler/quota/queue.h"

namespace tessel::bench {

// A queue or cohort, with what the entitlement reads of it (nvidia.com/gpu, flat quotas).
struct QuotaTreeNode {
  std::string name;
  std::string parent;  // a Queue's spec.cohort, a Cohort's spec.parent; "" for none
  bool queue = false;
  int64_t nominal_milli = 0;
  std::optional<int64_t> borrowing_limit_milli;
  int64_t weight_milli = 1000;
};

QuotaTreeNode TreeNodeOf(const Queue& queue);
QuotaTreeNode TreeNodeOf(const Cohort& cohort);

// `name` and its ancestors by `parent` (name -> parent, "" for a root), nearest first; a cycle
// of parents is cut at the map's size.
std::vector<std::string> PathUp(const std::map<std::string, std::string>& parent, const std::string& name);

// Entitlement by name of every queue and cohort in `tree` (a parent named but not listed is a
// root cohort without quota, as in the scheduler; nodes on a cycle of parents get 0). `demand`:
// GPU milli by queue name; absent is 0.
std::map<std::string, int64_t> Entitlements(const std::vector<QuotaTreeNode>& tree,
                                            const std::map<std::string, int64_t>& demand, int64_t capacity_milli);

// One level's water-filling (above), exposed for its tests: the share of `capacity_milli` of
// each child, in the children's order.
struct WaterFillChild {
  std::string name;  // the order of leftover milli-GPUs
  int64_t quota_milli = 0;
  int64_t weight_milli = 1000;
  int64_t cap_milli = 0;
};
std::vector<int64_t> WaterFill(const std::vector<WaterFillChild>& children, int64_t capacity_milli);

}  // namespace tessel::bench
