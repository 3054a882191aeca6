// Quota accounting and reclaim (see quota_tracker.h for the rules).
#include "scheduler/quota/quota_tracker.h"

#include <algorithm>
#include <limits>
#include <set>

#include "scheduler/util/strings.h"

namespace tessel {
namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

int64_t LimitOf(const ResourceLimits& limits, std::string_view r, int64_t fallback) {
  auto it = limits.find(r);
  return it == limits.end() ? fallback : it->second;
}

int64_t LendableOf(const Queue& q, std::string_view r) {
  return LimitOf(q.lending_limit, r, q.nominal.Get(r));
}

int64_t Guaranteed(const Queue& q, std::string_view r) { return q.nominal.Get(r) - LendableOf(q, r); }

// Saturating a + b for the "nominal + unlimited borrowing" sums.
int64_t SatAdd(int64_t a, int64_t b) { return b > kUnlimited - a ? kUnlimited : a + b; }

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
  static const Resources kNone;
  auto it = usage_.find(queue);
  return it == usage_.end() ? kNone : it->second;
}

Resources QuotaTracker::Usage(std::string_view queue) const { return UsageRef(queue); }

std::vector<const Queue*> QuotaTracker::CohortOf(const Queue& queue) const {
  if (queue.cohort.empty()) return {&queue};
  std::vector<const Queue*> out;
  for (const Queue& q : directory_->queues()) {
    if (q.cohort == queue.cohort) out.push_back(&q);
  }
  return out;
}

std::vector<std::string> QuotaTracker::Governed(const Queue& queue) const {
  std::set<std::string> names;
  for (const Queue* m : CohortOf(queue)) {
    for (const auto& [name, amount] : m->nominal.Entries()) names.insert(name);
    names.insert(m->listed.begin(), m->listed.end());
    for (const auto& [name, amount] : m->borrowing_limit) names.insert(name);
  }
  return {names.begin(), names.end()};
}

QuotaVerdict QuotaTracker::Check(std::string_view queue_name, const Resources& request) const {
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr) return {};
  QuotaVerdict verdict;
  const std::vector<const Queue*> cohort = CohortOf(*queue);
  for (const std::string& r : Governed(*queue)) {
    const int64_t asked = request.Get(r);
    if (asked == 0) continue;
    const int64_t used = UsageRef(queue->name()).Get(r);
    const int64_t want = SatAdd(used, asked);
    const int64_t nominal = queue->nominal.Get(r);
    auto fail = [&](std::string_view why) {
      verdict.fits = false;
      verdict.reason = StrCat("queue ", queue->name(), ": ", DescribeQuotaKey(r), " ", FormatQuotaAmount(r, want),
                              " of nominal ", FormatQuotaAmount(r, nominal), "; ", why);
    };
    if (queue->cohort.empty()) {
      if (want > nominal) {
        fail("it is in no cohort, so it cannot borrow");
        return verdict;
      }
      continue;
    }
    const int64_t limit = SatAdd(nominal, LimitOf(queue->borrowing_limit, r, kUnlimited));
    if (want > limit) {
      fail(StrCat("its borrowing limit is ",
                  FormatQuotaAmount(r, LimitOf(queue->borrowing_limit, r, 0))));
      return verdict;
    }
    // The cohort's pool: what every member lends, against what members use beyond what they
    // keep back for themselves.
    int64_t lent_by_others = 0;
    int64_t used_by_others = 0;
    for (const Queue* m : cohort) {
      if (m == queue) continue;
      lent_by_others += LendableOf(*m, r);
      used_by_others += std::max<int64_t>(0, UsageRef(m->name()).Get(r) - Guaranteed(*m, r));
    }
    const int64_t pool_room = lent_by_others + LendableOf(*queue, r) - used_by_others;
    if (std::max<int64_t>(0, want - Guaranteed(*queue, r)) > pool_room) {
      if (used_by_others > lent_by_others) {
        fail(StrCat("other queues of the cohort ", queue->cohort, " borrow ",
                    FormatQuotaAmount(r, used_by_others - lent_by_others), " of its quota"));
      } else {
        const int64_t left = std::max<int64_t>(
            0, lent_by_others - used_by_others - std::max<int64_t>(0, used - nominal));
        fail(StrCat("the cohort ", queue->cohort, " has ", FormatQuotaAmount(r, left),
                    " to lend"));
      }
      return verdict;
    }
    verdict.borrows |= want > nominal;
  }
  return verdict;
}

Resources QuotaTracker::Borrowed(std::string_view queue_name) const {
  Resources out;
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr) return out;
  if (queue->cohort.empty()) return out;
  for (const std::string& r : Governed(*queue)) {
    const int64_t over = UsageRef(queue_name).Get(r) - queue->nominal.Get(r);
    if (over > 0) out.Set(r, over);
  }
  return out;
}

Resources QuotaTracker::Lendable(std::string_view queue_name) const {
  Resources out;
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr || queue->cohort.empty()) return out;
  for (const std::string& r : Governed(*queue)) out.Set(r, LendableOf(*queue, r));
  return out;
}

Resources QuotaTracker::Lent(std::string_view queue_name) const {
  Resources out;
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr || queue->cohort.empty()) return out;
  // What a member leaves unused of what it lends.
  auto idle = [&](const Queue& m, std::string_view r) {
    return std::min(LendableOf(m, r), std::max<int64_t>(0, m.nominal.Get(r) - UsageRef(m.name()).Get(r)));
  };
  const std::vector<const Queue*> cohort = CohortOf(*queue);
  for (const std::string& r : Governed(*queue)) {
    const int64_t mine = idle(*queue, r);
    if (mine <= 0) continue;
    __int128 borrowed = 0;
    __int128 all_idle = 0;
    for (const Queue* m : cohort) {
      borrowed += std::max<int64_t>(0, UsageRef(m->name()).Get(r) - m->nominal.Get(r));
      all_idle += idle(*m, r);
    }
    const __int128 share = borrowed * mine / all_idle;
    const int64_t lent = share > mine ? mine : static_cast<int64_t>(share);
    if (lent > 0) out.Set(r, lent);
  }
  return out;
}

int64_t QuotaTracker::WeightedDominantShare(std::string_view queue_name) const {
  const Queue* queue = directory_->Find(queue_name);
  if (queue == nullptr) return 0;
  int64_t dominant = 0;
  for (const auto& [r, borrowed] : Borrowed(queue_name).Entries()) {
    int64_t pool = 0;
    for (const Queue* m : CohortOf(*queue)) pool += LendableOf(*m, r);
    if (pool <= 0) continue;
    dominant = std::max(dominant, borrowed * 1000 / pool);
  }
  return dominant * 1000 / queue->weight_milli;
}

}  // namespace tessel
