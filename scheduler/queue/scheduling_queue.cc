// SchedulingQueue: one map of entries; the active set and the backoff multimap index into it.
#include "scheduler/queue/scheduling_queue.h"

#include <algorithm>
#include <tuple>

#include "scheduler/api/changes.h"
#include "scheduler/api/uid.h"

namespace tessel {

bool SchedulingQueue::ActiveLess::operator()(const Entry* a, const Entry* b) const {
  if (q->less_(a->info, b->info)) return true;
  if (q->less_(b->info, a->info)) return false;
  return a->info.pod->Key() < b->info.pod->Key();  // strict order for the set
}

SchedulingQueue::SchedulingQueue(const Clock* clock, Less less, QueueOptions options, NextPodChoice next)
    : clock_(clock), less_(std::move(less)), options_(options), next_(std::move(next)) {}

absl::Duration SchedulingQueue::BackoffDuration(int attempts) const {
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < attempts && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

bool SchedulingQueue::ParkedGroupLess::operator()(const ParkedGroup& a, const ParkedGroup& b) const {
  auto fields = [](const ParkedGroup& g) {
    return std::tie(g.events, g.hinted, g.need.milli_cpu, g.need.memory, g.need.ephemeral_storage, g.need.pods,
                    g.need.scalar);
  };
  return fields(a) < fields(b);
}

SchedulingQueue::ParkedGroup SchedulingQueue::GroupOf(const Entry& e) {
  return {.events = e.waiting_for, .hinted = e.hinted, .need = e.hinted != 0 ? e.need : Resources{}};
}

void SchedulingQueue::Detach(Entry& e) {
  switch (e.where) {
    case Entry::Where::kActive:
      if (auto group = active_.find(e.group); group != active_.end()) {
        active_count_ -= group->second.erase(&e);
        if (group->second.empty()) active_.erase(group);
      }
      break;
    case Entry::Where::kBackoff:
      for (auto [it, end] = backoff_.equal_range(e.backoff_expiry); it != end; ++it) {
        if (it->second == &e) {
          backoff_.erase(it);
          break;
        }
      }
      break;
    case Entry::Where::kUnschedulable: {
      --unschedulable_count_;
      auto group = parked_by_events_.find(GroupOf(e));
      if (group != parked_by_events_.end()) {
        group->second.erase(&e);
        if (group->second.empty()) parked_by_events_.erase(group);
      }
      for (auto [it, end] = parked_by_time_.equal_range(e.parked_until); it != end; ++it) {
        if (it->second == &e) {
          parked_by_time_.erase(it);
          break;
        }
      }
      break;
    }
  }
}

void SchedulingQueue::Park(Entry& e) {
  e.where = Entry::Where::kUnschedulable;
  e.parked_until = e.info.timestamp + options_.max_unschedulable_wait;
  ++unschedulable_count_;
  parked_by_events_[GroupOf(e)].insert(&e);
  parked_by_time_.emplace(e.parked_until, &e);
}

void SchedulingQueue::ToActive(Entry& e) {
  e.where = Entry::Where::kActive;
  e.group = next_.group_of ? next_.group_of(*e.info.pod) : std::string();
  auto group = active_.try_emplace(e.group, ActiveLess{this}).first;
  active_count_ += group->second.insert(&e).second ? 1 : 0;
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

SchedulingQueue::AddResult SchedulingQueue::UpsertLocked(PodRef pod, bool create) {
  const std::string key = pod->Key();
  // In flight under this name: the same pod keeps its latest copy; another UID ends it.
  bool replaced_in_flight = false;
  for (auto it = in_flight_.lower_bound(std::make_pair(key, std::string()));
       it != in_flight_.end() && it->first.first == key; ++it) {
    if (SameUid(it->first.second, pod->meta.uid)) {
      if (!it->second.ended) it->second.latest = pod;
      return AddResult::kInFlight;
    }
    it->second.ended = true;
    replaced_in_flight = true;
  }
  if (auto it = entries_.find(key); it != entries_.end()) {
    Entry& e = *it->second;
    const Entry::Where was = e.where;
    Detach(e);
    if (!SameUid(e.info.pod->meta.uid, pod->meta.uid)) {
      // A new pod under a known name: it starts afresh.
      e.info = QueuedPodInfo{.pod = std::move(pod), .timestamp = clock_->Now()};
      e.waiting_for = kAllEvents;
      e.hinted = 0;
      ToActive(e);
      return AddResult::kQueued;
    }
    // Only a change to something scheduling reads can make a parked pod fit: its own status
    // writes and relists of the same object leave it where it is.
    const bool changed = PodSchedulingChanged(*e.info.pod, *pod);
    e.info.pod = std::move(pod);
    if (was == Entry::Where::kActive) {
      ToActive(e);
    } else if (was == Entry::Where::kUnschedulable) {
      if (changed) {
        ToBackoffOrActive(e);
      } else {
        Park(e);
      }
    } else {
      e.where = Entry::Where::kBackoff;
      backoff_.emplace(e.backoff_expiry, &e);
    }
    return AddResult::kUpdated;
  }
  if (!create && !replaced_in_flight) return AddResult::kIgnored;
  auto e = std::make_unique<Entry>();
  e->info.pod = std::move(pod);
  e->info.timestamp = clock_->Now();
  ToActive(*e);
  entries_.emplace(key, std::move(e));
  return AddResult::kQueued;
}

SchedulingQueue::AddResult SchedulingQueue::Add(PodRef pod) {
  absl::MutexLock lock(&mu_);
  return UpsertLocked(std::move(pod), /*create=*/true);
}

SchedulingQueue::AddResult SchedulingQueue::Update(PodRef pod) {
  absl::MutexLock lock(&mu_);
  return UpsertLocked(std::move(pod), /*create=*/false);
}

void SchedulingQueue::Delete(const std::string& key, std::string_view uid) {
  absl::MutexLock lock(&mu_);
  for (auto it = in_flight_.lower_bound(std::make_pair(key, std::string()));
       it != in_flight_.end() && it->first.first == key; ++it) {
    if (SameUid(it->first.second, uid)) {
      it->second.ended = true;
      it->second.latest = nullptr;
    }
  }
  auto it = entries_.find(key);
  if (it == entries_.end() || !SameUid(it->second->info.pod->meta.uid, uid)) return;
  Detach(*it->second);
  entries_.erase(it);
}

void SchedulingQueue::Done(const std::string& key, std::string_view uid) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(std::make_pair(key, std::string(uid)));
}

bool SchedulingQueue::Ended(const std::string& key, std::string_view uid) const {
  absl::MutexLock lock(&mu_);
  auto it = in_flight_.find(std::make_pair(key, std::string(uid)));
  return it != in_flight_.end() && it->second.ended;
}

size_t SchedulingQueue::InFlightCount() const {
  absl::MutexLock lock(&mu_);
  return in_flight_.size();
}

bool SchedulingQueue::ReturnLocked(QueuedPodInfo& info, bool* changed) {
  auto it = in_flight_.find(std::make_pair(info.pod->Key(), info.pod->meta.uid));
  if (it == in_flight_.end()) return true;  // not popped from here (tests, the bench)
  const bool ended = it->second.ended;
  if (!ended && it->second.latest != nullptr) {
    if (changed != nullptr) *changed = PodSchedulingChanged(*info.pod, *it->second.latest);
    info.pod = std::move(it->second.latest);
  }
  in_flight_.erase(it);
  return !ended;
}

void SchedulingQueue::FlushLocked() {
  const absl::Time now = clock_->Now();
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    Entry* e = backoff_.begin()->second;
    backoff_.erase(backoff_.begin());
    ToActive(*e);
  }
  while (!parked_by_time_.empty() && parked_by_time_.begin()->first <= now) {
    Entry* e = parked_by_time_.begin()->second;
    Detach(*e);
    ToBackoffOrActive(*e);
  }
}

std::optional<SchedulingQueue::Popped> SchedulingQueue::PopLocked() {
  FlushLocked();
  if (active_.empty()) return std::nullopt;
  Entry* e = *active_.begin()->second.begin();
  if (active_.size() > 1 && next_.choose) {
    std::vector<Entry*> heads;
    for (const auto& [group, entries] : active_) heads.push_back(*entries.begin());
    std::sort(heads.begin(), heads.end(), ActiveLess{this});
    std::vector<const QueuedPodInfo*> infos;
    for (const Entry* h : heads) infos.push_back(&h->info);
    e = heads[std::min(next_.choose(infos), heads.size() - 1)];
  }
  Detach(*e);
  QueuedPodInfo info = e->info;
  entries_.erase(info.pod->Key());
  in_flight_[std::make_pair(info.pod->Key(), info.pod->meta.uid)] = InFlight{};
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
    if (!parked_by_time_.empty()) wake = std::min(wake, parked_by_time_.begin()->first);
    const absl::Time now = clock_->Now();
    if (now >= deadline) return std::nullopt;
    // Wake on new work, on Close, or when the next backoff or unschedulable wait ends.
    auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !active_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&has_work), std::max(wake - now, absl::Milliseconds(1)));
  }
}

void SchedulingQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

namespace {

// Whether `room` holds every resource of `want` (the rejecting plugins' need on one node).
bool RoomHolds(const Resources& room, const Resources& want) {
  auto holds = [](int64_t amount, int64_t free) { return amount <= 0 || amount <= free; };
  if (!holds(want.milli_cpu, room.milli_cpu) || !holds(want.memory, room.memory) ||
      !holds(want.ephemeral_storage, room.ephemeral_storage) || !holds(want.pods, room.pods)) {
    return false;
  }
  for (const auto& [name, amount] : want.scalar) {
    if (!holds(amount, room.Get(name))) return false;
  }
  return true;
}

}  // namespace

void SchedulingQueue::AddUnschedulable(QueuedPodInfo info, int64_t cycle, uint32_t events,
                                       uint32_t hinted, std::optional<Resources> need) {
  absl::MutexLock lock(&mu_);
  bool changed = false;  // the pod itself changed, as scheduling reads it, during the attempt
  if (!ReturnLocked(info, &changed)) return;
  const std::string key = info.pod->Key();
  if (entries_.contains(key)) return;  // re-added by an informer meanwhile: that copy is newer
  auto e = std::make_unique<Entry>();
  e->info = std::move(info);
  e->info.timestamp = clock_->Now();
  e->waiting_for = events;
  e->hinted = hinted & events;
  e->need = need.has_value() ? *std::move(need) : e->info.pod->requests;
  // An event during the attempt sends the pod back, unless its hints judge every such event by
  // room and no room left meanwhile holds it (a backlog under churn would spin otherwise).
  const uint32_t during = move_request_cycle_ >= cycle ? events_since_move_ & events : 0;
  // So does a change of the pod itself during the attempt (the attempt read the copy before it).
  const bool retry = changed ||
                     (during != 0 && ((during & ~e->hinted) != 0 || (during & unroomed_since_move_) != 0 ||
                                      std::any_of(rooms_since_move_.begin(), rooms_since_move_.end(),
                                                  [&](const Resources& r) { return RoomHolds(r, e->need); })));
  if (retry) {
    ToBackoffOrActive(*e);
  } else {
    Park(*e);
  }
  entries_.emplace(key, std::move(e));
}

void SchedulingQueue::AddBackoff(QueuedPodInfo info) {
  absl::MutexLock lock(&mu_);
  if (!ReturnLocked(info)) return;
  const std::string key = info.pod->Key();
  if (entries_.contains(key)) return;
  auto e = std::make_unique<Entry>();
  e->info = std::move(info);
  e->info.timestamp = clock_->Now();
  ToBackoffOrActive(*e);
  entries_.emplace(key, std::move(e));
}


void SchedulingQueue::OnClusterEvent(uint32_t event, const Resources* room) {
  absl::MutexLock lock(&mu_);
  if (move_request_cycle_ != cycle_) {
    events_since_move_ = 0;
    unroomed_since_move_ = 0;
    rooms_since_move_.clear();
  }
  move_request_cycle_ = cycle_;
  events_since_move_ |= event;
  if (room != nullptr && rooms_since_move_.size() < kMaxRoomsKept) {
    rooms_since_move_.push_back(*room);
  } else {
    unroomed_since_move_ |= event;
  }
  // Only the groups of parked pods whose rejecting plugins registered this event; of a group
  // whose every matching event is hinted, only the pods the event's room holds.
  std::vector<Entry*> moving;
  for (const auto& [key, group] : parked_by_events_) {
    if ((key.events & event) == 0) continue;
    if (room == nullptr || (key.events & event & ~key.hinted) != 0 || RoomHolds(*room, key.need)) {
      moving.insert(moving.end(), group.begin(), group.end());
    } else {
      hint_skips_ += static_cast<int64_t>(group.size());
    }
  }
  for (Entry* e : moving) {
    Detach(*e);
    ToBackoffOrActive(*e);
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

int64_t SchedulingQueue::hint_skips() const {
  absl::MutexLock lock(&mu_);
  return hint_skips_;
}

bool SchedulingQueue::Contains(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return entries_.contains(key);
}

QueueStats SchedulingQueue::Stats() const {
  absl::MutexLock lock(&mu_);
  return QueueStats{.active = active_count_, .backoff = backoff_.size(),
                    .unschedulable = unschedulable_count_};
}

std::vector<PodRef> SchedulingQueue::PendingPods() const {
  absl::MutexLock lock(&mu_);
  std::vector<PodRef> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.push_back(e->info.pod);
  return out;
}

std::vector<SchedulingQueue::PendingEntry> SchedulingQueue::PendingEntries() const {
  absl::MutexLock lock(&mu_);
  std::vector<PendingEntry> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) {
    const std::string_view state = e->where == Entry::Where::kActive    ? "active"
                                   : e->where == Entry::Where::kBackoff ? "backoff"
                                                                        : "unschedulable";
    out.push_back({e->info.pod, state, e->info.attempts});
  }
  return out;
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

std::optional<absl::Time> SchedulingQueue::NextUnschedulableRetry() const {
  absl::MutexLock lock(&mu_);
  if (parked_by_time_.empty()) return std::nullopt;
  return parked_by_time_.begin()->first;
}

}  // namespace tessel
