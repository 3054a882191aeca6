// The Scheduler: construction, the loop, and the framework Handle (see scheduler.h for the
// layout of the core).
#include "scheduler/core/scheduler.h"

#include "scheduler/preemption/preemption.h"
#include "scheduler/util/strings.h"

namespace tessel {

std::string_view AttemptResultName(AttemptResult result) {
  switch (result) {
    case AttemptResult::kScheduled: return "scheduled";
    case AttemptResult::kUnschedulable: return "unschedulable";
    case AttemptResult::kError: return "error";
  }
  return "error";
}

// The queue as the gang tracker puts heads into it.
class Scheduler::TrackerQueue final : public gang::GangQueue {
 public:
  explicit TrackerQueue(SchedulingQueue* queue) : queue_(queue) {}
  void Add(PodRef head) override { queue_->Add(std::move(head)); }
  void Update(PodRef head) override { queue_->Update(std::move(head)); }
  void Delete(const std::string& key) override { queue_->Delete(key); }
  bool Contains(const std::string& key) const override { return queue_->Contains(key); }
  void AddBackoff(QueuedPodInfo info) override { queue_->AddBackoff(std::move(info)); }

 private:
  SchedulingQueue* queue_;
};

Scheduler::Scheduler(SchedulerParams p)
    : registry_(p.registry),
      cache_(p.cache),
      clock_(p.clock),
      api_(p.api),
      observer_(p.observer),
      bind_executor_(p.bind_executor),
      seed_(p.seed),
      gang_status_(p.gang_status),
      provisioner_(p.provisioner),
      gang_bind_attempts_(std::max(1, p.gang_bind_attempts)) {}

Scheduler::~Scheduler() = default;

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::New(SchedulerParams params) {
  std::unique_ptr<Scheduler> s(new Scheduler(params));
  std::vector<ProfileConfig> profiles = params.config->profiles;
  if (profiles.empty()) profiles.push_back(*params.defaults);
  for (const ProfileConfig& profile : profiles) {
    ProfileConfig resolved = ResolveProfile(profile, *params.defaults);
    auto fw = Framework::New(*params.registry, resolved, *s,
                             FrameworkOptions{.parallelism = params.config->parallelism,
                                              .reference = params.reference_evaluation});
    if (!fw.ok()) return fw.status();
    s->profiles_.push_back(*std::move(fw));
  }
  // All profiles share one queue, so they must agree on its order (as in kube-scheduler).
  const Framework& first = *s->profiles_.front();
  for (const auto& fw : s->profiles_) {
    if (fw->queue_sort().Name() != first.queue_sort().Name()) {
      return absl::InvalidArgumentError(
          StrCat("profiles \"", first.scheduler_name(), "\" and \"", fw->scheduler_name(),
                 "\" use different queueSort plugins; all profiles must use the same"));
    }
  }
  const QueueSortPlugin* sort = &first.queue_sort();
  NextPodChoice next;
  if (PendingOrderPlugin* order = first.pending_order()) {
    next.group_of = [order](const Pod& pod) { return order->PendingGroupOf(pod); };
    // Pops run on the scheduling thread, between cycles: the order reads the usage the snapshot
    // shows, brought up to date first when the choice needs it.
    Scheduler* self = s.get();
    next.choose = [self, order](std::span<const QueuedPodInfo* const> heads) {
      return order->ChooseNext(heads, [self] { self->RefreshSnapshot(); });
    };
  }
  s->queue_ = std::make_unique<SchedulingQueue>(
      params.clock,
      [sort](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort->Less(a, b); },
      params.queue_options, std::move(next));
  s->tracker_queue_ = std::make_unique<TrackerQueue>(s->queue_.get());
  s->tracker_ = std::make_unique<gang::GangTracker>(&s->gangs_, s->tracker_queue_.get());
  return s;
}

const Framework* Scheduler::FrameworkFor(std::string_view scheduler_name) const {
  for (const auto& fw : profiles_) {
    if (fw->scheduler_name() == scheduler_name) return fw.get();
  }
  return nullptr;
}

std::vector<std::string> Scheduler::ProfileNames() const {
  std::vector<std::string> out;
  for (const auto& fw : profiles_) out.push_back(fw->scheduler_name());
  return out;
}

// --- Handle ---

std::optional<int32_t> Scheduler::PriorityClassValue(std::string_view name) const {
  return priority_classes_.Value(name);
}

int32_t Scheduler::PriorityOf(const Pod& pod) const { return priority_classes_.PriorityOf(pod); }

int32_t Scheduler::PriorityFloor() const { return priority_classes_.Floor(); }

std::vector<PodDisruptionBudget> Scheduler::PodDisruptionBudgets() const { return budgets_.All(); }

std::string Scheduler::GangKeyOf(const Pod& pod) const {
  const gang::GangBook::Resolution r = gangs_.Resolve(pod);
  return r.membership == gang::GangBook::Membership::kGang ? r.spec.id.Key() : std::string();
}

std::optional<PodGroupClaims> Scheduler::PodGroupClaimsOf(const Pod& pod) const {
  if (pod.scheduling_group.empty()) return std::nullopt;
  return gangs_.FindPodGroupClaims(pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_,
                                   pod.scheduling_group);
}

void Scheduler::PodEvicted(const Pod& pod) {
  cache_->MarkTerminating(pod.Key(), pod.meta.uid, clock_->Now());
}

bool Scheduler::PodEnded(const Pod& pod) const { return queue_->Ended(pod.Key(), pod.meta.uid); }

// --- The loop ---

void Scheduler::Housekeeping() {
  // Assumed pods are not expired here: they are held until the informer confirms them or the
  // pod is deleted (see cache.h).
  ExpireWaitingPods();
  RetryRollbackEvictions();
  disruptions_.Prune(clock_->Now() - preemption::kDisruptionMemory);
  for (const auto& fw : profiles_) {
    for (TimekeeperPlugin* keeper : fw->timekeepers()) keeper->Tick(clock_->Now(), [this] { RefreshSnapshot(); });
  }
  std::vector<std::function<void()>> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(loop_tasks_);
  }
  for (auto& task : tasks) task();
}

void Scheduler::RunOnLoop(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  loop_tasks_.push_back(std::move(task));
}

bool Scheduler::ScheduleOne() {
  Housekeeping();
  auto popped = queue_->Pop();
  if (!popped) return false;
  RunCycle(InFlightPod(*queue_, *std::move(popped)));
  return true;
}

bool Scheduler::ScheduleOneWait(absl::Duration timeout) {
  Housekeeping();
  auto popped = queue_->PopWait(timeout);
  if (!popped) return false;
  RunCycle(InFlightPod(*queue_, *std::move(popped)));
  return true;
}

int64_t Scheduler::Run(const std::atomic<bool>& stop, const RunOptions& options) {
  int64_t cycles = 0;
  while (!stop.load()) {
    if (options.max_cycles > 0 && cycles >= options.max_cycles) break;
    if (options.may_schedule && !options.may_schedule()) {
      // Not allowed to write (leadership is being lost): pop nothing, look again shortly.
      absl::SleepFor(std::min(options.wait, absl::Milliseconds(100)));
      continue;
    }
    const bool ran = options.wait > absl::ZeroDuration() ? ScheduleOneWait(options.wait)
                                                         : ScheduleOne();
    if (ran) {
      ++cycles;
      continue;
    }
    if (options.on_idle) {
      if (!options.on_idle()) break;
    } else if (options.wait <= absl::ZeroDuration()) {
      break;
    }
  }
  return cycles;
}

std::vector<PodRef> Scheduler::PendingPods() const {
  std::vector<PodRef> out = queue_->PendingPods();
  StringSet seen;
  for (const PodRef& p : out) seen.insert(p->Key());
  for (PodRef& p : tracker_->PendingMembers()) {
    if (seen.insert(p->Key()).second) out.push_back(std::move(p));
  }
  return out;
}

std::optional<absl::Time> Scheduler::NextWakeup() const {
  std::optional<absl::Time> next = queue_->NextBackoffExpiry();
  for (std::optional<absl::Time> t : {waiting_.EarliestDeadline(), tracker_->NextWakeup()}) {
    if (t.has_value() && (!next.has_value() || *t < *next)) next = t;
  }
  return next;
}

}  // namespace tessel
