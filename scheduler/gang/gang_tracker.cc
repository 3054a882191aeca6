// GangTracker: pending, placed and evicting members of each gang, and their heads in the queue
// (see gang_tracker.h).
#include "scheduler/gang/gang_tracker.h"

#include <algorithm>

namespace tessel::gang {

bool EarlierMember(const PodRef& a, const PodRef& b) {
  if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
    return a->meta.creation_timestamp < b->meta.creation_timestamp;
  }
  return a->Key() < b->Key();
}

bool GangTracker::Admit(const PodRef& pod) {
  const GangBook::Resolution r = book_->Resolve(*pod);
  if (r.membership == GangBook::Membership::kNone) return false;
  const std::string key = pod->Key();
  const std::string gang_key = r.spec.id.Key();
  absl::MutexLock lock(&mu_);
  GangState& g = gangs_[gang_key];
  g.id = r.spec.id;
  g.placed.erase(key);
  g.inherited.erase(key);
  g.pending[key] = pod;
  gang_of_[key] = gang_key;
  if (g.head == key) {
    queue_->Update(pod);  // in the queue: the newer object replaces it; in a cycle: no-op
  } else if (g.head.empty()) {
    g.head = key;
    queue_->Add(pod);
  } else if (auto head = g.pending.find(g.head);
             head != g.pending.end() && EarlierMember(pod, head->second) && queue_->Contains(g.head)) {
    // An earlier member arrived late: it stands for the gang from now on.
    queue_->Delete(g.head);
    g.head = key;
    queue_->Add(pod);
  }
  return true;
}

std::optional<GangReport> GangTracker::NotePlaced(const Pod& pod) {
  std::optional<GangId> id = DeclaredGang(pod);
  if (!id.has_value()) return std::nullopt;
  const std::string key = pod.Key();
  const std::string gang_key = id->Key();
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) {
    if (pod.IsTerminal()) return std::nullopt;
    it = gangs_.emplace(gang_key, GangState{.id = *id}).first;
  }
  GangState& g = it->second;
  g.pending.erase(key);
  if (pod.IsTerminal()) {
    g.placed.erase(key);
    g.inherited.erase(key);
  } else if (pod.meta.deletion_timestamp.has_value() || g.evicting.contains(key)) {
    // Terminating (a preemption's victim, a rollback's eviction): it holds its node until it
    // is gone, but no longer counts towards minMember, so replacements are planned together.
    g.placed.erase(key);
    g.inherited.erase(key);
    g.evicting.insert(key);
  } else if (g.placed.insert(key).second) {
    // Bound, and not by a plan of this process: placed before it started (or by another).
    g.inherited.insert(key);
  }
  gang_of_[key] = gang_key;
  if (g.head == key) {
    g.head.clear();
    RequeueHeadLocked(g, std::nullopt, false);
  }
  if (NotePhase(g, key, pod.phase) && g.last_report.has_value()) return GangReport(*id, *g.last_report);
  return std::nullopt;
}

std::optional<GangReport> GangTracker::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = gang_of_.find(key);
  if (it == gang_of_.end()) return std::nullopt;
  auto state = gangs_.find(it->second);
  gang_of_.erase(it);
  evictions_.erase(key);
  if (state == gangs_.end()) return std::nullopt;
  GangState& g = state->second;
  g.pending.erase(key);
  g.placed.erase(key);
  g.inherited.erase(key);
  g.evicting.erase(key);
  if (g.head == key) {
    g.head.clear();
    RequeueHeadLocked(g, std::nullopt, false);
  }
  // A deleted member no longer runs; a finished one stays counted as finished.
  std::optional<GangReport> report;
  if (g.running.erase(key) > 0 && g.last_report.has_value()) report.emplace(g.id, *g.last_report);
  if (g.pending.empty() && g.placed.empty() && g.evicting.empty()) gangs_.erase(state);
  return report;
}

bool GangTracker::NotePhase(GangState& g, const std::string& key, PodPhase phase) {
  bool changed = false;
  auto mark = [&](StringSet& set, bool member) {
    changed |= member ? set.insert(key).second : set.erase(key) > 0;
  };
  mark(g.running, phase == PodPhase::kRunning);
  mark(g.succeeded, phase == PodPhase::kSucceeded);
  mark(g.failed, phase == PodPhase::kFailed);
  return changed;
}

void GangTracker::ReplacePending(const PodRef& pod) {
  absl::MutexLock lock(&mu_);
  auto it = gang_of_.find(pod->Key());
  if (it == gang_of_.end()) return;
  auto g = gangs_.find(it->second);
  if (g == gangs_.end()) return;
  if (auto p = g->second.pending.find(pod->Key()); p != g->second.pending.end()) p->second = pod;
}

bool GangTracker::IsHead(const Pod& pod) const {
  const std::string key = pod.Key();
  absl::MutexLock lock(&mu_);
  auto it = gang_of_.find(key);
  if (it == gang_of_.end()) return false;
  auto state = gangs_.find(it->second);
  return state != gangs_.end() && state->second.head == key;
}

std::vector<PodRef> GangTracker::PendingMembers() const {
  absl::MutexLock lock(&mu_);
  std::vector<PodRef> out;
  for (const auto& [gang, g] : gangs_) {
    for (const auto& [key, pod] : g.pending) out.push_back(pod);
  }
  return out;
}

void GangTracker::RequeueHeadLocked(GangState& g, std::optional<QueuedPodInfo> previous, bool backoff) {
  if (!g.head.empty() || g.pending.empty()) return;
  PodRef first;
  for (const auto& [key, pod] : g.pending) {
    if (!first || EarlierMember(pod, first)) first = pod;
  }
  g.head = first->Key();
  if (previous.has_value() && backoff) {
    QueuedPodInfo info = *std::move(previous);
    info.pod = first;
    queue_->AddBackoff(std::move(info));
  } else {
    queue_->Add(first);
  }
}

GangTracker::Cycle GangTracker::BeginCycle(const Pod& head, const GangBook::Resolution& r) {
  Cycle c;
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(r.spec.id.Key());
  if (it == gangs_.end() || it->second.head != head.Key()) {
    c.kind = Cycle::Kind::kSuperseded;
    return c;
  }
  GangState& g = it->second;
  if (r.membership == GangBook::Membership::kNone) {
    c.kind = Cycle::Kind::kDissolved;
    return c;
  }
  if (r.membership == GangBook::Membership::kWaiting) {
    c.kind = Cycle::Kind::kWaiting;
    return c;
  }
  g.timeout = r.spec.schedule_timeout;
  g.min_member = r.spec.min_member;
  for (const auto& [key, pod] : g.pending) c.members.push_back(pod);
  c.placed = static_cast<int32_t>(g.placed.size());
  c.placed_keys.assign(g.placed.begin(), g.placed.end());
  std::sort(c.members.begin(), c.members.end(), EarlierMember);
  return c;
}

void GangTracker::Dissolve(const std::string& gang_key) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) return;
  for (const auto& [key, pod] : it->second.pending) {
    gang_of_.erase(key);
    queue_->Add(pod);
  }
  gangs_.erase(it);
}

bool GangTracker::NoteShortfall(const std::string& gang_key, const std::string& message, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) return false;
  GangState& g = it->second;
  if (!g.waiting_since) g.waiting_since = now;
  g.last_message = message;
  return g.timed_out;
}

std::optional<int32_t> GangTracker::Commit(const std::string& gang_key, const std::string& head_key,
                                           const std::vector<MemberPlacement>& placements) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end() || it->second.head != head_key) return std::nullopt;
  GangState& g = it->second;
  for (const MemberPlacement& m : placements) {
    auto p = g.pending.find(m.pod->Key());
    if (p == g.pending.end() || p->second != m.pod) return std::nullopt;
  }
  for (const MemberPlacement& m : placements) {
    g.pending.erase(m.pod->Key());
    g.placed.insert(m.pod->Key());
  }
  g.head.clear();
  g.waiting_since.reset();
  g.timed_out = false;
  // Members beyond what fitted now wait for capacity, as one entry again.
  RequeueHeadLocked(g, std::nullopt, false);
  return static_cast<int32_t>(g.placed.size());
}

void GangTracker::Abandon(const std::string& gang_key, const std::string& head_key) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) return;
  GangState& g = it->second;
  if (g.head == head_key) g.head.clear();
  RequeueHeadLocked(g, std::nullopt, false);
}

void GangTracker::RollBack(const GangId& id, const std::vector<MemberPlacement>& members,
                           const std::vector<bool>& bound, bool may_write, const QueuedPodInfo& head_info) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(id.Key());
  if (it == gangs_.end()) return;
  GangState& g = it->second;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string key = members[i].pod->Key();
    if (bound[i]) {
      if (may_write) {
        g.placed.erase(key);
        g.evicting.insert(key);
      }
    } else {
      g.placed.erase(key);
      if (gang_of_.contains(key)) g.pending[key] = members[i].pod;
    }
  }
  if (!may_write) return;
  if (!g.head.empty() && !g.pending.contains(g.head)) g.head.clear();
  if (g.head.empty()) RequeueHeadLocked(g, head_info, /*backoff=*/true);
}

GangStatusUpdate GangTracker::Record(const GangId& id, GangStatusUpdate update) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(id.Key());
  if (it == gangs_.end()) return update;
  GangState& g = it->second;
  g.last_report = update;
  update.running = static_cast<int32_t>(g.running.size());
  update.succeeded = static_cast<int32_t>(g.succeeded.size());
  update.failed = static_cast<int32_t>(g.failed.size());
  DerivePhase(update, std::max(g.min_member, update.min_member));
  return update;
}

std::vector<GangReport> GangTracker::ExpireWaits(absl::Time now) {
  std::vector<GangReport> expired;
  absl::MutexLock lock(&mu_);
  for (auto& [key, g] : gangs_) {
    if (!g.waiting_since || !g.timeout || g.timed_out || now - *g.waiting_since < *g.timeout) continue;
    g.timed_out = true;
    expired.emplace_back(
        g.id, GangStatusUpdate{
                  .phase = GangPhase::kFailed,
                  .scheduled = static_cast<int32_t>(g.placed.size()),
                  .members = static_cast<int32_t>(g.placed.size() + g.pending.size()),
                  .min_member = g.min_member,
                  .condition = false,
                  .reason = GangReason::kScheduleTimeout,
                  .message = StrCat("not placed within scheduleTimeoutSeconds (",
                                    absl::ToInt64Seconds(*g.timeout), "s): ", g.last_message),
              });
  }
  return expired;
}

std::optional<std::string> GangTracker::StrandedLocked(const GangState& g, absl::Time now, const BindingFn& binding,
                                                       bool at_shortfall) const {
  if (!ShortOfMinMember(g)) return std::nullopt;
  const auto placed = static_cast<int32_t>(g.placed.size());
  for (const std::string& key : g.placed) {
    if (binding && binding(key)) return std::nullopt;  // a plan of this process is in flight
  }
  const std::string held = StrCat(g.id.Describe(), " holds ", placed, " of ", g.min_member, " members placed");
  if (at_shortfall && !g.inherited.empty()) {
    return StrCat(held, " since before the scheduler started, and the rest do not fit; rolled back so that no "
                        "half-placed gang keeps its nodes");
  }
  const absl::Duration limit = g.timeout.value_or(kDefaultStrandedTimeout);
  if (!g.waiting_since || now - *g.waiting_since < limit) return std::nullopt;
  return StrCat(held, " and the rest did not fit within ", absl::ToInt64Seconds(limit), "s (",
                g.timeout ? "spec.scheduleTimeoutSeconds" : "the default when spec.scheduleTimeoutSeconds is unset",
                "); rolled back so that no half-placed gang keeps its nodes");
}

GangTracker::Stranded GangTracker::StrandLocked(GangState& g, std::string message) {
  Stranded out{.id = g.id, .members = {g.placed.begin(), g.placed.end()}, .message = std::move(message),
               .min_member = g.min_member};
  std::sort(out.members.begin(), out.members.end());
  for (const std::string& key : out.members) g.evicting.insert(key);
  g.placed.clear();
  g.inherited.clear();
  return out;
}

std::optional<GangTracker::Stranded> GangTracker::TakeStranded(const std::string& gang_key, absl::Time now,
                                                               const BindingFn& binding) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) return std::nullopt;
  std::optional<std::string> why = StrandedLocked(it->second, now, binding, /*at_shortfall=*/true);
  if (!why.has_value()) return std::nullopt;
  return StrandLocked(it->second, *std::move(why));
}

bool GangTracker::ShortOfMinMember(const GangState& g) {
  // Members that finished successfully did their part: a gang whose worker completed is not short.
  const auto placed = static_cast<int32_t>(g.placed.size());
  const auto done = static_cast<int32_t>(g.succeeded.size());
  return g.min_member > 0 && placed > 0 && placed + done < g.min_member;
}

std::vector<GangTracker::Stranded> GangTracker::TakeTimedOutStranded(absl::Time now, const BindingFn& binding) {
  std::vector<Stranded> out;
  absl::MutexLock lock(&mu_);
  for (auto& [key, g] : gangs_) {
    // Short of minMember with no member left to try (its pending mates were deleted, or never
    // came back after a crash): no attempt will start the wait, so it starts now.
    if (!g.waiting_since && g.pending.empty() && g.head.empty() && ShortOfMinMember(g)) g.waiting_since = now;
    if (std::optional<std::string> why = StrandedLocked(g, now, binding, /*at_shortfall=*/false)) {
      out.push_back(StrandLocked(g, *std::move(why)));
    }
  }
  return out;
}

void GangTracker::RetryEvictionLater(PendingEviction eviction) {
  absl::MutexLock lock(&mu_);
  const std::string key = eviction.pod->Key();
  if (!gang_of_.contains(key)) {
    evictions_.erase(key);
    return;
  }
  evictions_[key] = std::move(eviction);
}

void GangTracker::ClearEviction(const std::string& key) {
  absl::MutexLock lock(&mu_);
  evictions_.erase(key);
}

std::vector<GangTracker::PendingEviction> GangTracker::DueEvictions(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  std::vector<PendingEviction> due;
  for (const auto& [key, e] : evictions_) {
    if (e.due <= now) due.push_back(e);
  }
  return due;
}

std::optional<absl::Time> GangTracker::NextWakeup() const {
  absl::MutexLock lock(&mu_);
  std::optional<absl::Time> next;
  auto consider = [&next](absl::Time t) {
    if (!next.has_value() || t < *next) next = t;
  };
  for (const auto& [key, g] : gangs_) {  // scheduleTimeoutSeconds of gangs still waiting
    if (g.waiting_since && g.timeout && !g.timed_out) consider(*g.waiting_since + *g.timeout);
    // ... and of gangs holding members below minMember (Stranded).
    if (g.waiting_since && ShortOfMinMember(g)) {
      consider(*g.waiting_since + g.timeout.value_or(kDefaultStrandedTimeout));
    }
  }
  for (const auto& [key, e] : evictions_) consider(e.due);
  return next;
}

}  // namespace tessel::gang
