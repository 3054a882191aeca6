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
#include "scheduler/util/strings.h"

namespace tessel {

// A subtree's weighted share of what its parent's pool lends, per resource it borrows there
// (borrowed / pool / weight), as exact fractions, largest first. Fair sharing compares two
// siblings' shares as Kueue's DRF does, by the dominant (largest) share, and where those tie by
// the next largest, and so on: compared by the dominant alone, two sides that both borrow most
// of another flavor tie whatever moves on the flavor they contend for, and each may take the
// other's pods there back and forth. A missing share is 0.
//
//   if (FairShare::Compare(after.FairShareOfNode(their_side), after.FairShareOfNode(own_side)) >= 0) ...
class FairShare {
 public:
  // The share with `per_mille` more on its dominant part (decayed usage's share, usage_decay.h).
  FairShare Plus(int64_t per_mille) const;
  // -1, 0 or 1 as `a` is below, equal to or above `b` (exact: no rounding, no overflow).
  static int Compare(const FairShare& a, const FairShare& b);

 private:
  friend class QuotaTracker;
  struct Part {
    __int128 numerator = 0;    // > 0
    __int128 denominator = 1;  // > 0
  };
  static int CompareParts(const Part& a, const Part& b);
  std::vector<Part> parts_;  // largest first
};

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
  // The share ShareOfNode reports the dominant part of, whole, for fair sharing's comparisons.
  FairShare FairShareOfNode(int node) const;

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
  // The pool siblings under the node's parent borrow `r` from: the parent's subtree quota, or
  // where that is none the nearest ancestor's; 0 when no ancestor has any.
  int64_t PoolOf(int node, std::string_view r) const;
  struct Charge {
    std::string queue;
    Resources usage;
  };
  const Resources& UsageRef(std::string_view queue) const;

  const QueueDirectory* directory_;
  std::map<std::string, Charge, std::less<>> charges_;
  StringKeyedMap<Resources> usage_;  // lookups only: hashed
};

}  // namespace tessel
