// A gang's placement held and bound: its members are assumed, reserved and permitted all or
// none (HoldGang), then bind in parallel on the bind executor. A member whose bind keeps failing
// rolls the gang back: the members already bound are evicted (retried until they are gone) and
// the gang goes back to the queue with backoff.
#include <algorithm>
#include <atomic>

#include "scheduler/core/admission.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/binding.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

// How soon a refused rollback eviction is tried again, doubling up to the maximum.
constexpr absl::Duration kFirstRollbackRetry = absl::Seconds(1);
constexpr absl::Duration kMaxRollbackRetry = absl::Seconds(60);

}  // namespace

struct Scheduler::GangBinding {
  const Framework* fw = nullptr;
  gang::GangId id;
  std::vector<gang::MemberPlacement> members;
  std::vector<Status> results;        // what failed, for messages
  std::vector<BindOutcome> outcomes;  // how each member's bind ended
  std::atomic<size_t> left{0};
  QueuedPodInfo head_info;
};

Status Scheduler::HoldGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements,
                           size_t required) {
  for (size_t held = 0; held < placements.size(); ++held) {
    gang::MemberPlacement& m = placements[held];
    Admission admitted = Admit(fw, *m.state, *cache_, nominator_, *m.pod, m.assumed);
    Status failure = admitted.status;
    if (failure.IsWait()) {
      Unadmit(fw, *m.state, *cache_, *m.pod, m.node);
      failure = Status::Error("a Permit plugin asked a gang member to wait; a gang is permitted as a whole");
    }
    if (failure.IsRejected() && held >= required && held > 0) {
      // The members the gang needs are held; the rest wait, as members beyond capacity do.
      placements.resize(held);
      return Status::Ok();
    }
    if (!failure.ok()) {
      ReleaseGang(fw, placements, held);
      return failure;
    }
  }
  return Status::Ok();
}

void Scheduler::ReleaseGang(const Framework& fw, std::vector<gang::MemberPlacement>& placements, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    gang::MemberPlacement& m = placements[k];
    Unadmit(fw, *m.state, *cache_, *m.pod, m.node);
  }
}

void Scheduler::StartGangBinding(const Framework& fw, const gang::GangId& id,
                                 std::vector<gang::MemberPlacement> placements, QueuedPodInfo head_info) {
  const size_t n = placements.size();
  auto binding = std::make_shared<GangBinding>();
  binding->fw = &fw;
  binding->id = id;
  binding->members = std::move(placements);
  binding->results.resize(n);
  binding->outcomes.resize(n, BindOutcome::kFailed);
  binding->left = n;
  binding->head_info = std::move(head_info);
  for (size_t i = 0; i < n; ++i) {
    if (bind_executor_ == nullptr) {
      BindGangMember(binding, i);
    } else {
      bind_executor_->Submit([this, binding, i] { BindGangMember(binding, i); });
    }
  }
}

void Scheduler::BindGangMember(const std::shared_ptr<GangBinding>& b, size_t i) {
  gang::MemberPlacement& m = b->members[i];
  Status st;
  BindOutcome outcome = BindOutcome::kFailed;
  for (int attempt = 0; attempt < gang_bind_attempts_; ++attempt) {
    outcome = BindAdmitted(*b->fw, *m.state, *m.pod, m.node, &st);
    if (outcome != BindOutcome::kFailed) break;  // only what may be transient is retried
  }
  b->outcomes[i] = outcome;
  b->results[i] = std::move(st);
  if (b->left.fetch_sub(1) == 1) FinishGangBinding(b);
}

void Scheduler::FinishGangBinding(const std::shared_ptr<GangBinding>& b) {
  const size_t n = b->members.size();
  std::vector<bool> bound(n);
  for (size_t i = 0; i < n; ++i) bound[i] = Placed(b->outcomes[i]);
  const size_t failed = static_cast<size_t>(std::find(bound.begin(), bound.end(), false) - bound.begin());
  if (failed == n) {
    for (size_t i = 0; i < n; ++i) {
      gang::MemberPlacement& m = b->members[i];
      (void)SettleBind(*b->fw, *m.state, *cache_, *m.pod, m.node, b->outcomes[i]);
      // Bound before (AlreadyExists): not by this bind, so not reported as scheduled here.
      if (b->outcomes[i] == BindOutcome::kBound && observer_) observer_->PodScheduled(*m.pod, m.node);
    }
    return;
  }
  // A replica that may no longer write (not the leader) leaves the gang to the next leader,
  // which sees the bound members as running and plans the rest. Otherwise: roll back, so no
  // half-started gang keeps its nodes.
  const bool may_write = std::none_of(b->outcomes.begin(), b->outcomes.end(),
                                      [](BindOutcome o) { return o == BindOutcome::kMayNotWrite; });
  const int64_t bound_count = std::count(bound.begin(), bound.end(), true);
  const std::string message =
      StrCat(b->id.Describe(), ": binding ", b->members[failed].pod->Key(), " failed (",
             b->results[failed].Message(), "); the gang was rolled back and ",
             Plural(bound_count, "bound member was", "bound members were"), " evicted");
  tracker_->RollBack(b->id, b->members, bound, may_write, b->head_info);
  for (size_t i = 0; i < n; ++i) {
    gang::MemberPlacement& m = b->members[i];
    // A bound member holds its node until the rollback's eviction deletes it.
    (void)SettleBind(*b->fw, *m.state, *cache_, *m.pod, m.node, b->outcomes[i]);
    if (bound[i] && may_write) EvictRolledBack(m.pod, message, kFirstRollbackRetry);
    if (may_write && observer_) observer_->PodUnschedulable(*m.pod, FailureKind::kBindFailed, message);
  }
  if (!may_write) return;
  ReportGang(b->id, {.phase = gang::GangPhase::kPending, .reason = gang::GangReason::kBindFailed, .message = message});
  queue_->OnClusterEvent(kAssignedPodDelete);
}

void Scheduler::EvictRolledBack(const PodRef& pod, const std::string& message, absl::Duration backoff) {
  const absl::Status st = api_ == nullptr ? absl::OkStatus() : api_->Evict(*pod, message);
  if (st.ok() && observer_) observer_->GangMemberEvicted(*pod);
  if (st.ok() || absl::IsNotFound(st) || absl::IsFailedPrecondition(st)) return tracker_->ClearEviction(pod->Key());
  // Refused (a PodDisruptionBudget) or failed: the member keeps its node until evicted.
  tracker_->RetryEvictionLater({.pod = pod,
                                .message = message,
                                .due = clock_->Now() + backoff,
                                .backoff = std::min(backoff * 2, kMaxRollbackRetry)});
}

void Scheduler::RetryRollbackEvictions() {
  for (const gang::GangTracker::PendingEviction& e : tracker_->DueEvictions(clock_->Now())) {
    EvictRolledBack(e.pod, e.message, e.backoff);
  }
}

void Scheduler::ExpireGangWaits() {
  for (auto& [id, update] : tracker_->ExpireWaits(clock_->Now())) ReportGang(id, std::move(update));
  for (const gang::GangTracker::Stranded& s : tracker_->TakeTimedOutStranded(clock_->Now(), BindingNow())) {
    RollBackStranded(s);
  }
}

gang::GangTracker::BindingFn Scheduler::BindingNow() const {
  // A member assumed and not yet seen bound is being bound by this process: its plan is in flight.
  return [this](const std::string& key) { return cache_->IsAssumed(key); };
}

bool Scheduler::RollBackIfStranded(const std::string& gang_key) {
  std::optional<gang::GangTracker::Stranded> s = tracker_->TakeStranded(gang_key, clock_->Now(), BindingNow());
  if (!s.has_value()) return false;
  RollBackStranded(*s);
  return true;
}

void Scheduler::RollBackStranded(const gang::GangTracker::Stranded& s) {
  for (const std::string& key : s.members) {
    // The member as the cache holds it (its UID makes the eviction hit only that pod).
    const std::optional<std::string> node = cache_->NodeOf(key);
    const std::optional<NodeInfo> info = node ? cache_->GetNodeInfo(*node) : std::nullopt;
    if (!info.has_value()) continue;
    for (const PodRef& pod : info->pods()) {
      if (!pod->HasKey(key)) continue;
      if (api_ != nullptr) api_->RecordEvent(*pod, "Warning", "GangRolledBack", s.message);
      EvictRolledBack(pod, s.message, kFirstRollbackRetry);
    }
  }
  ReportGang(s.id, {.phase = gang::GangPhase::kPending,
                    .min_member = s.min_member,
                    .reason = gang::GangReason::kRolledBack,
                    .message = s.message});
}

void Scheduler::ReportGang(const gang::GangId& id, gang::GangStatusUpdate update) {
  update.time = clock_->Now();
  update = tracker_->Record(id, std::move(update));
  if (gang_status_ != nullptr) gang_status_->GangStatusChanged(id, update);
}

void Scheduler::ReportGang(std::optional<gang::GangReport> report) {
  if (report.has_value()) ReportGang(report->first, std::move(report->second));
}

}  // namespace tessel
