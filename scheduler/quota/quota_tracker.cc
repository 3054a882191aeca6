// Quota accounting over the tree of cohorts and queues (see quota_tracker.h and cohort.h).
#include "scheduler/quota/quota_tracker.h"

#include <algorithm>

#include "scheduler/util/saturating.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

constexpr int kNone = CohortTree::kNone;

}  // namespace

void QuotaTracker::Add(const std::string& key, const std::string& queue, const Resources& usage) {
  Remove(key);
  if (directory_->Find(queue) == nullptr) return;
  (void)usage_[queue].Add(usage);
  charges_[key] = Charge{.queue = queue, .usage = usage};
}

void QuotaTracker::Remove(const std::string& key) {
  auto it = charges_.find(key);
  if (it == charges_.end()) return;
  usage_[it->second.queue].Sub(it->second.usage);
  charges_.erase(it);
}

void QuotaTracker::AddUsage(std::string_view queue, const Resources& usage) {
  if (directory_->Find(queue) == nullptr) return;
  (void)usage_[std::string(queue)].Add(usage);
}

void QuotaTracker::SubUsage(std::string_view queue, const Resources& usage) {
  if (directory_->Find(queue) == nullptr) return;
  usage_[std::string(queue)].Sub(usage);
}

bool QuotaTracker::WithinNominal(std::string_view queue_name, const Resources& request) const {
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr) return true;
  for (const std::string& r : Governed(*queue)) {
    if (request.Get(r) > 0 && UsageRef(queue->name()).Get(r) + request.Get(r) > queue->nominal.Get(r)) {
      return false;
    }
  }
  return true;
}

const Resources& QuotaTracker::UsageRef(std::string_view queue) const {
  static const Resources kNothing;
  auto it = usage_.find(queue);
  return it == usage_.end() ? kNothing : it->second;
}

Resources QuotaTracker::Usage(std::string_view queue) const { return UsageRef(queue); }

std::vector<std::string> QuotaTracker::Governed(const Queue& queue) const {
  const CohortTree& tree = directory_->tree();
  const int node = tree.QueueNode(queue.name());
  if (node == kNone) return {};
  return tree.Governed(node);
}

int64_t QuotaTracker::NodeUsage(int node, std::string_view r) const {
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& n = tree.node(node);
  if (n.queue) return UsageRef(n.name).Get(r);
  int64_t sum = 0;
  for (int k : n.children) {
    sum = SaturatingAdd(sum, std::max<int64_t>(0, SaturatingSub(NodeUsage(k, r), tree.node(k).guaranteed.Get(r))));
  }
  return sum;
}

Resources QuotaTracker::SubtreeUsage(int node) const {
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& n = tree.node(node);
  if (n.queue) return UsageRef(n.name);
  Resources sum;
  for (int k : n.children) (void)sum.Add(SubtreeUsage(k));
  return sum;
}

QuotaTracker::Room QuotaTracker::RoomOf(int node, std::string_view r) const {
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& n = tree.node(node);
  const int64_t used = NodeUsage(node, r);
  const int64_t subtree = n.subtree.Get(r);
  if (n.parent == kNone) return Room{.amount = SaturatingSub(subtree, used), .limiter = node};
  const int64_t guaranteed = n.guaranteed.Get(r);
  Room up = RoomOf(n.parent, r);
  if (n.quota.has_value()) {
    if (auto it = n.quota->borrowing_limit.find(r); it != n.quota->borrowing_limit.end()) {
      const int64_t stored = SaturatingSub(subtree, guaranteed);
      const int64_t used_above = std::max<int64_t>(0, SaturatingSub(used, guaranteed));
      const int64_t cap = SaturatingAdd(SaturatingSub(stored, used_above), it->second);
      if (cap < up.amount) up = Room{.amount = cap, .limiter = node, .borrowing_limit = true};
    }
  }
  up.amount = SaturatingAdd(std::max<int64_t>(0, SaturatingSub(guaranteed, used)), up.amount);
  return up;
}

int64_t QuotaTracker::Available(int node, std::string_view r) const { return RoomOf(node, r).amount; }

std::string QuotaTracker::WhyShort(int queue_node, std::string_view r, const Room& room) const {
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& limiter = tree.node(room.limiter);
  if (room.limiter == queue_node) {
    if (room.borrowing_limit) {
      return StrCat("its borrowing limit is ", FormatQuotaAmount(r, limiter.quota->borrowing_limit.at(std::string(r))));
    }
    return "it is in no cohort, so it cannot borrow";
  }
  if (room.borrowing_limit) {
    const int64_t limit = limiter.quota->borrowing_limit.at(std::string(r));
    if (limit == 0) return StrCat("the cohort ", limiter.name, " may not borrow beyond its own quota");
    return StrCat("the cohort ", limiter.name, " may borrow at most ", FormatQuotaAmount(r, limit),
                  " beyond its own quota, and does");
  }
  // The root's pool: what the rest of the tree lends, against what the rest of it uses.
  int child = queue_node;
  while (tree.node(child).parent != room.limiter) child = tree.node(child).parent;
  const CohortTree::Node& c = tree.node(child);
  const int64_t child_lends = SaturatingSub(c.subtree.Get(r), c.guaranteed.Get(r));
  const int64_t child_uses = std::max<int64_t>(0, SaturatingSub(NodeUsage(child, r), c.guaranteed.Get(r)));
  const int64_t others_lend = SaturatingSub(limiter.subtree.Get(r), child_lends);
  const int64_t others_use = SaturatingSub(NodeUsage(room.limiter, r), child_uses);
  if (others_use > others_lend) {
    return StrCat("other queues of the cohort ", limiter.name, " borrow ",
                  FormatQuotaAmount(r, others_use - others_lend), " of its quota");
  }
  const int64_t over = std::max<int64_t>(0, SaturatingSub(NodeUsage(child, r), c.subtree.Get(r)));
  return StrCat("the cohort ", limiter.name, " has ",
                FormatQuotaAmount(r, std::max<int64_t>(0, others_lend - others_use - over)), " to lend");
}

QuotaVerdict QuotaTracker::Check(std::string_view queue_name, const Resources& request) const {
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr) return {};
  const int node = directory_->tree().QueueNode(queue->name());
  if (node == kNone) return {};
  QuotaVerdict verdict;
  for (const std::string& r : Governed(*queue)) {
    const int64_t asked = request.Get(r);
    if (asked == 0) continue;
    const int64_t used = UsageRef(queue->name()).Get(r);
    const int64_t want = SaturatingAdd(used, asked);
    const int64_t nominal = queue->nominal.Get(r);
    const Room room = RoomOf(node, r);
    if (asked > room.amount) {
      verdict.fits = false;
      verdict.reason = StrCat("queue ", queue->name(), ": ", DescribeQuotaKey(r), " ", FormatQuotaAmount(r, want),
                              " of nominal ", FormatQuotaAmount(r, nominal), "; ", WhyShort(node, r, room));
      return verdict;
    }
    verdict.borrows |= want > nominal;
  }
  return verdict;
}

int64_t QuotaTracker::LendableOfNode(int node, std::string_view r) const {
  const CohortTree::Node& n = directory_->tree().node(node);
  return SaturatingSub(n.subtree.Get(r), n.guaranteed.Get(r));
}

int64_t QuotaTracker::IdleOfNode(int node, std::string_view r) const {
  const CohortTree::Node& n = directory_->tree().node(node);
  return std::min(LendableOfNode(node, r), std::max<int64_t>(0, SaturatingSub(n.subtree.Get(r), NodeUsage(node, r))));
}

Resources QuotaTracker::BorrowedOfNode(int node) const {
  Resources out;
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& n = tree.node(node);
  if (n.parent == kNone) return out;
  for (const std::string& r : tree.Governed(node)) {
    const int64_t over = SaturatingSub(NodeUsage(node, r), n.subtree.Get(r));
    if (over > 0) out.Set(r, over);
  }
  return out;
}

Resources QuotaTracker::LentOfNode(int node) const {
  Resources out;
  const CohortTree& tree = directory_->tree();
  const CohortTree::Node& n = tree.node(node);
  if (n.parent == kNone) return out;
  const std::vector<int>& siblings = tree.node(n.parent).children;
  for (const std::string& r : tree.Governed(node)) {
    const int64_t mine = IdleOfNode(node, r);
    if (mine <= 0) continue;
    __int128 borrowed = 0;
    __int128 all_idle = 0;
    for (int m : siblings) {
      borrowed += std::max<int64_t>(0, SaturatingSub(NodeUsage(m, r), tree.node(m).subtree.Get(r)));
      all_idle += IdleOfNode(m, r);
    }
    const __int128 share = borrowed * mine / all_idle;
    const int64_t lent = share > mine ? mine : static_cast<int64_t>(share);
    if (lent > 0) out.Set(r, lent);
  }
  return out;
}

int64_t QuotaTracker::PoolOf(int node, std::string_view r) const {
  // The parent's subtree quota (its own quota and what its children lend), or where that is
  // none the nearest ancestor's (all of it comes from there). Not only what the children lend:
  // where they lend nothing (queues of nominal 0 under a cohort that holds the quota), every
  // share was 0, fair sharing let any victim go (0 >= 0), and the victim's queue could take the
  // room right back by the same rule.
  const CohortTree& tree = directory_->tree();
  int64_t pool = 0;
  for (int up = tree.node(node).parent; up != kNone && pool <= 0; up = tree.node(up).parent) {
    pool = tree.node(up).subtree.Get(r);
  }
  return std::max<int64_t>(pool, 0);
}

int64_t QuotaTracker::ShareOfNode(int node) const {
  const CohortTree::Node& n = directory_->tree().node(node);
  if (n.parent == kNone) return 0;
  int64_t dominant = 0;
  for (const auto& [r, borrowed] : BorrowedOfNode(node).Entries()) {
    const int64_t pool = PoolOf(node, r);
    if (pool <= 0) continue;
    dominant = std::max(dominant, static_cast<int64_t>(static_cast<__int128>(borrowed) * 1000 / pool));
  }
  const int64_t weight = n.quota.has_value() ? n.quota->weight_milli : 1000;
  return static_cast<int64_t>(static_cast<__int128>(dominant) * 1000 / weight);
}

FairShare QuotaTracker::FairShareOfNode(int node) const {
  FairShare share;
  const CohortTree::Node& n = directory_->tree().node(node);
  if (n.parent == kNone) return share;
  const int64_t weight = n.quota.has_value() ? n.quota->weight_milli : 1000;
  for (const auto& [r, borrowed] : BorrowedOfNode(node).Entries()) {
    const int64_t pool = PoolOf(node, r);
    if (pool <= 0) continue;
    // borrowed / pool / (weight_milli / 1000)
    share.parts_.push_back({.numerator = static_cast<__int128>(borrowed) * 1000,
                            .denominator = static_cast<__int128>(pool) * weight});
  }
  std::sort(share.parts_.begin(), share.parts_.end(),
            [](const FairShare::Part& a, const FairShare::Part& b) { return FairShare::CompareParts(a, b) > 0; });
  return share;
}

FairShare FairShare::Plus(int64_t per_mille) const {
  if (per_mille <= 0) return *this;
  FairShare out = *this;
  if (out.parts_.empty()) {
    out.parts_.push_back({.numerator = per_mille, .denominator = 1000});
    return out;
  }
  // n/d + p/1000 = (1000n + pd) / 1000d, exactly; the dominant part stays the largest.
  Part& top = out.parts_.front();
  top.numerator = top.numerator * 1000 + static_cast<__int128>(per_mille) * top.denominator;
  top.denominator *= 1000;
  return out;
}

int FairShare::CompareParts(const Part& a, const Part& b) {
  // a/b against c/d by their integer parts, then (the remainders' fractions below 1) by the
  // reciprocals the other way round: Euclid's steps, exact for any size.
  unsigned __int128 n1 = a.numerator, d1 = a.denominator, n2 = b.numerator, d2 = b.denominator;
  int sign = 1;
  while (true) {
    const unsigned __int128 q1 = n1 / d1, q2 = n2 / d2;
    if (q1 != q2) return q1 < q2 ? -sign : sign;
    n1 -= q1 * d1;
    n2 -= q2 * d2;
    if (n1 == 0 || n2 == 0) return n1 == n2 ? 0 : (n1 == 0 ? -sign : sign);
    // n1/d1 < n2/d2 (both below 1) exactly when d1/n1 > d2/n2.
    std::swap(n1, d1);
    std::swap(n2, d2);
    sign = -sign;
  }
}

int FairShare::Compare(const FairShare& a, const FairShare& b) {
  const size_t n = std::max(a.parts_.size(), b.parts_.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= a.parts_.size()) return -1;  // a's missing share 0 against b's positive one
    if (i >= b.parts_.size()) return 1;
    if (const int c = CompareParts(a.parts_[i], b.parts_[i]); c != 0) return c;
  }
  return 0;
}

Resources QuotaTracker::Borrowed(std::string_view queue) const {
  const int node = directory_->tree().QueueNode(queue);
  return node == kNone ? Resources{} : BorrowedOfNode(node);
}

Resources QuotaTracker::Lendable(std::string_view queue) const {
  Resources out;
  const CohortTree& tree = directory_->tree();
  const int node = tree.QueueNode(queue);
  if (node == kNone || tree.node(node).parent == kNone) return out;
  for (const std::string& r : tree.Governed(node)) out.Set(r, LendableOfNode(node, r));
  return out;
}

Resources QuotaTracker::Lent(std::string_view queue) const {
  const int node = directory_->tree().QueueNode(queue);
  return node == kNone ? Resources{} : LentOfNode(node);
}

int64_t QuotaTracker::WeightedDominantShare(std::string_view queue) const {
  const int node = directory_->tree().QueueNode(queue);
  return node == kNone ? 0 : ShareOfNode(node);
}

}  // namespace tessel
