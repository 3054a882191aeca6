// Quota accounting per queue and cohort: whether a pod fits its team's quota, how much a queue
// borrows, and its weighted dominant share (the victim policy in plugins/queue_quota decides
// whom to evict). Exact integers throughout;
// GPUs are counted in physical-GPU equivalents (milli), converted by the caller.
//
// The rules are Kueue's, per resource r, over the tree of cohorts and queues (cohort.h): a
// queue may take what `available` there says, its guaranteed part first, then what its
// ancestors' pools hold, within every borrowing limit on its path. With one level of cohorts:
//   guaranteed(q) = nominal(q) - lendingLimit(q)        (all of nominal is lendable by default)
//   pool          = sum over the cohort of lendable(m)   (what members lend each other)
//   pool use      = sum over the cohort of max(0, usage(m) - guaranteed(m))
//   q may hold U  when U <= nominal(q) + borrowingLimit(q) and the pool use stays <= pool.
// A queue without a cohort never exceeds its nominal quota. A resource that no queue or cohort
// of the tree lists is not limited. A flavored quota (spec.resourceGroups) is kept
// under keys "<resource>@<flavor>" (flavor.h), so every rule holds per (flavor, resource).
//
//   QuotaTracker t(&directory);
//   t.Add("team-a/train-0", "team-a", usage);
//   QuotaVerdict v = t.Check("team-a", request);   // v.fits, v.reason ("queue team-a: ...")
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scheduler/quota/queue.h"

namespace tessel {

struct QuotaVerdict {
  bool fits = true;
  bool borrows = false;  // fits only by borrowing from the cohort
  std::string reason;    // when !fits: "queue team-a: nvidia.com/gpu 21 of nominal 20; ..."
};

class QuotaTracker {
 public:
  explicit QuotaTracker(const QueueDirectory* directory) : directory_(directory) {}

  // Charges `usage` to `queue` under `key`; a key already charged is first released, so
  // informer replays are idempotent. Unknown queues are ignored (their pods are not limited).
  void Add(const std::string& key, const std::string& queue, const Resources& usage);
  void Remove(const std::string& key);
  // Usage totals without a key (summed elsewhere, e.g. from the snapshot); unknown queues are
  // ignored.
  void AddUsage(std::string_view queue, const Resources& usage);
  void SubUsage(std::string_view queue, const Resources& usage);

  // Whether `queue` stays within its nominal quota with `request` on top of its usage (the
  // condition for reclaiming from borrowers).
  bool WithinNominal(std::string_view queue, const Resources& request) const;
  QuotaVerdict Check(std::string_view queue, const Resources& request) const;

  Resources Usage(std::string_view queue) const;
  // How far above nominal the queue is, per resource (what it borrows from its cohort).
  Resources Borrowed(std::string_view queue) const;
  // How much of its nominal quota the queue lets its cohort borrow, per governed resource
  // (spec.lendingLimit, else all of nominal); nothing without a cohort.
  Resources Lendable(std::string_view queue) const;
  // What the queue lends now, per resource: its share of what the cohort's queues borrow
  // (usage above nominal), split among the lenders in proportion to the lendable quota each
  // leaves unused (floor of an exact integer ratio, never more than it leaves unused).
  Resources Lent(std::string_view queue) const;
  // The queue's dominant share of its cohort's pool, per mille, divided by its weight
  // (weight 1 = 1000 milli): borrowing is shared in increasing order of this (DRF).
  int64_t WeightedDominantShare(std::string_view queue) const;

  // Resources listed in nominalQuota or borrowingLimit by any queue or cohort of `queue`'s tree
  // (or by the queue): the ones quota limits.
  std::vector<std::string> Governed(const Queue& queue) const;

  // The tree's quantities for any node (CohortTree index): usage(n) as cohort.h defines it (a
  // queue's own usage; a cohort's, what its children take beyond their guaranteed quota), and
  // what the node may still take.
  int64_t NodeUsage(int node, std::string_view r) const;
  int64_t Available(int node, std::string_view r) const;
  // Everything the queues below a node use (for reports), per resource.
  Resources SubtreeUsage(int node) const;
  // Borrowed, Lent and WeightedDominantShare of any node: a cohort's subtree quota plays a
  // queue's nominal quota, its children's use beyond their guaranteed part its usage, and its
  // siblings under the same parent its cohort.
  Resources BorrowedOfNode(int node) const;
  Resources LentOfNode(int node) const;
  int64_t ShareOfNode(int node) const;

 private:
  // What a node may take, and which node's rule limits it (by its borrowing limit, or the root
  // by its pool).
  struct Room {
    int64_t amount = 0;
    int limiter = -1;
    bool borrowing_limit = false;
  };
  Room RoomOf(int node, std::string_view r) const;
  std::string WhyShort(int queue_node, std::string_view r, const Room& room) const;
  // What a node lends its parent (its lending limit, else its whole subtree quota), and the
  // part of that its own subtree leaves unused.
  int64_t LendableOfNode(int node, std::string_view r) const;
  int64_t IdleOfNode(int node, std::string_view r) const;
  struct Charge {
    std::string queue;
    Resources usage;
  };
  const Resources& UsageRef(std::string_view queue) const;

  const QueueDirectory* directory_;
  std::map<std::string, Charge, std::less<>> charges_;
  std::map<std::string, Resources, std::less<>> usage_;
};

}  // namespace tessel
