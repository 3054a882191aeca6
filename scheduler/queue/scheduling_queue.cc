// SchedulingQueue: one map of entries; the active set and the backoff multimap index into it.
#include "scheduler/queue/scheduling_queue.h"

namespace tessel {

bool SchedulingQueue::ActiveLess::operator()(const Entry* a, const Entry* b) const {
  if (q->less_(a->info, b->info)) return true;
  if (q->less_(b->info, a->info)) return false;
  return a->info.pod->Key() < b->info.pod->Key();  // strict order for the set
}

SchedulingQueue::SchedulingQueue(const Clock* clock, Less less, QueueOptions options)
    : clock_(clock), less_(std::move(less)), options_(options), active_(ActiveLess{this}) {}

absl::Duration SchedulingQueue::BackoffDuration(int attempts) const {
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < attempts && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

void SchedulingQueue::Detach(Entry& e) {
  switch (e.where) {
    case Entry::Where::kActive:
      active_.erase(&e);
      break;
    case Entry::Where::kBackoff:
      for (auto [it, end] = backoff_.equal_range(e.backoff_expiry); it != end; ++it) {
        if (it->second == &e) {
          backoff_.erase(it);
          break;
        }
      }
      break;
    case Entry::Where::kUnschedulable:
      --unschedulable_count_;
      break;
  }
}

void SchedulingQueue::ToActive(Entry& e) {
  e.where = Entry::Where::kActive;
  active_.insert(&e);
}

void SchedulingQueue::ToBackoffOrActive(Entry& e) {
  if (e.info.attempts == 0) {
    ToActive(e);
    return;
  }
  e.backoff_expiry = e.info.timestamp + BackoffDuration(e.info.attempts);
  if (e.backoff_expiry <= clock_->Now()) {
    ToActive(e);
    return;
  }
  e.where = Entry::Where::kBackoff;
  backoff_.emplace(e.backoff_expiry, &e);
}

void SchedulingQueue::Add(PodRef pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = pod->Key();
  if (auto it = entries_.find(key); it != entries_.end()) {
    Entry& e = *it->second;
    Detach(e);
    e.info.pod = std::move(pod);
    ToActive(e);
    return;
  }
  auto e = std::make_unique<Entry>();
  e->info.pod = std::move(pod);
  e->info.timestamp = clock_->Now();
  ToActive(*e);
  entries_.emplace(key, std::move(e));
}

void SchedulingQueue::Update(PodRef pod) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(pod->Key());
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  const Entry::Where was = e.where;
  Detach(e);
  e.info.pod = std::move(pod);
  if (was == Entry::Where::kUnschedulable) {
    ToBackoffOrActive(e);
  } else if (was == Entry::Where::kBackoff) {
    e.where = Entry::Where::kBackoff;
    backoff_.emplace(e.backoff_expiry, &e);
  } else {
    ToActive(e);
  }
}

void SchedulingQueue::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Detach(*it->second);
  entries_.erase(it);
}

void SchedulingQueue::FlushLocked() {
  const absl::Time now = clock_->Now();
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    Entry* e = backoff_.begin()->second;
    backoff_.erase(backoff_.begin());
    ToActive(*e);
  }
  if (unschedulable_count_ == 0) return;
  for (auto& [key, e] : entries_) {
    if (e->where == Entry::Where::kUnschedulable &&
        now - e->info.timestamp >= options_.max_unschedulable_wait) {
      Detach(*e);
      ToBackoffOrActive(*e);
    }
  }
}

std::optional<SchedulingQueue::Popped> SchedulingQueue::PopLocked() {
  FlushLocked();
  if (active_.empty()) return std::nullopt;
  Entry* e = *active_.begin();
  active_.erase(active_.begin());
  QueuedPodInfo info = e->info;
  entries_.erase(info.pod->Key());
  ++info.attempts;
  if (info.attempts == 1) info.initial_attempt = clock_->Now();
  return Popped{std::move(info), ++cycle_};
}

std::optional<SchedulingQueue::Popped> SchedulingQueue::Pop() {
  absl::MutexLock lock(&mu_);
  return PopLocked();
}

std::optional<SchedulingQueue::Popped> SchedulingQueue::PopWait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = clock_->Now() + timeout;
  while (true) {
    if (closed_) return std::nullopt;
    if (auto popped = PopLocked()) return popped;
    absl::Time wake = deadline;
    if (!backoff_.empty()) wake = std::min(wake, backoff_.begin()->first);
    const absl::Time now = clock_->Now();
    if (now >= deadline) return std::nullopt;
    // Wake on new work, on Close, or when the next backoff ends.
    auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !active_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&has_work), std::max(wake - now, absl::Milliseconds(1)));
  }
}

void SchedulingQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

void SchedulingQueue::AddUnschedulable(QueuedPodInfo info, int64_t cycle, uint32_t events) {
  absl::MutexLock lock(&mu_);
  const std::string key = info.pod->Key();
  if (entries_.contains(key)) return;  // re-added by an informer meanwhile: that copy is newer
  auto e = std::make_unique<Entry>();
  e->info = std::move(info);
  e->info.timestamp = clock_->Now();
  e->waiting_for = events;
  if (move_request_cycle_ >= cycle && (events_since_move_ & events) != 0) {
    ToBackoffOrActive(*e);
  } else {
    e->where = Entry::Where::kUnschedulable;
    ++unschedulable_count_;
  }
  entries_.emplace(key, std::move(e));
}

void SchedulingQueue::AddBackoff(QueuedPodInfo info) {
  absl::MutexLock lock(&mu_);
  const std::string key = info.pod->Key();
  if (entries_.contains(key)) return;
  auto e = std::make_unique<Entry>();
  e->info = std::move(info);
  e->info.timestamp = clock_->Now();
  ToBackoffOrActive(*e);
  entries_.emplace(key, std::move(e));
}

void SchedulingQueue::OnClusterEvent(uint32_t event) {
  absl::MutexLock lock(&mu_);
  if (move_request_cycle_ != cycle_) events_since_move_ = 0;
  move_request_cycle_ = cycle_;
  events_since_move_ |= event;
  if (unschedulable_count_ == 0) return;
  for (auto& [key, e] : entries_) {
    if (e->where == Entry::Where::kUnschedulable && (e->waiting_for & event) != 0) {
      Detach(*e);
      ToBackoffOrActive(*e);
    }
  }
}

void SchedulingQueue::MoveAllToActive() {
  absl::MutexLock lock(&mu_);
  for (auto& [key, e] : entries_) {
    if (e->where != Entry::Where::kActive) {
      Detach(*e);
      ToActive(*e);
    }
  }
}

bool SchedulingQueue::Contains(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return entries_.contains(key);
}

QueueStats SchedulingQueue::Stats() const {
  absl::MutexLock lock(&mu_);
  return QueueStats{.active = active_.size(), .backoff = backoff_.size(),
                    .unschedulable = unschedulable_count_};
}

std::vector<std::string> SchedulingQueue::UnschedulableKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [key, e] : entries_) {
    if (e->where == Entry::Where::kUnschedulable) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<absl::Time> SchedulingQueue::NextBackoffExpiry() const {
  absl::MutexLock lock(&mu_);
  if (backoff_.empty()) return std::nullopt;
  return backoff_.begin()->first;
}

}  // namespace tessel
