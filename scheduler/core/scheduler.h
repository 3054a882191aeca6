// The scheduling loop shared by the live scheduler and the bench. It owns the queue, the
// profiles and the cycle; the cache is fed from outside (informers or a trace loader), and the
// outside world is reached only through ClusterApi and SchedulingObserver.
//
// One cycle (ScheduleOne): pop a pod -> refresh the snapshot -> PreFilter -> Filter over all
// nodes -> (none: PostFilter, report Unschedulable, park the pod) -> PreScore/Score -> pick the
// best node (ties: first by name) -> PreAssume (e.g. pick GPU devices) -> assume in the cache -> Reserve -> Permit -> binding cycle
// (PreBind, Bind). A failure after assuming forgets the pod, unreserves and requeues it with
// backoff. The binding cycle runs inline, or on a BindExecutor (the live binder pool).
//
//   ASSIGN_OR_RETURN(auto s, Scheduler::New({.registry = &r, .config = &cfg, .cache = &cache,
//                                            .clock = &clock, .api = &api}));
//   s->OnPodAdd(pod);
//   s->Run(stop, {.wait = absl::Milliseconds(500)});          // live: until `stop` is set
//   s->Run(never, {.on_idle = [&] { return AdvanceClock(); }});  // bench: until idle
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "scheduler/util/strings.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/framework.h"
#include "scheduler/queue/scheduling_queue.h"
#include "scheduler/state/cache.h"

namespace tessel {

// Why a pod was not placed: no node fits (kUnschedulable), something broke (kError), or the
// binding cycle failed after a node was chosen (kBindFailed). Reporters map it to the
// PodScheduled reason (Unschedulable / SchedulerError) without reading the message.
enum class FailureKind { kUnschedulable, kError, kBindFailed };

// Receives the outcome of every attempt: the bench records them, the live scheduler turns them
// into Events, pod conditions and metrics.
class SchedulingObserver {
 public:
  virtual ~SchedulingObserver() = default;
  virtual void PodScheduled(const Pod& pod, const std::string& node) = 0;
  // No node fits (or binding failed); `message` reads like kube-scheduler's.
  virtual void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) = 0;
  // The attempt took this long (for the attempt-duration histogram); result is
  // "scheduled", "unschedulable" or "error".
  virtual void AttemptFinished(const Pod& /*pod*/, std::string_view /*result*/,
                               absl::Duration /*latency*/) {}
};

// Runs binding cycles off the scheduling thread (live); the bench runs them inline.
class BindExecutor {
 public:
  virtual ~BindExecutor() = default;
  virtual void Submit(std::function<void()> task) = 0;
};

// How Scheduler::Run loops. The live binary blocks for pods and pauses while it may not write;
// the bench does not block and moves its virtual clock when nothing is ready.
struct RunOptions {
  // How long one wait for a pod may block (zero: never block).
  absl::Duration wait = absl::ZeroDuration();
  // While this returns false no pod is popped (the leader lease is being lost); null: always.
  std::function<bool()> may_schedule;
  // Called when no pod was ready: true goes on looping (e.g. the bench advanced its clock to
  // NextWakeup()), false returns. Null: return when idle, unless `wait` is set (live).
  std::function<bool()> on_idle;
  // Stop after this many scheduling cycles (0: no limit).
  int64_t max_cycles = 0;
};

struct SchedulerParams {
  const Registry* registry = nullptr;
  const SchedulerConfig* config = nullptr;
  // The default profile every configured profile is resolved against (plugins/defaults.h).
  const ProfileConfig* defaults = nullptr;
  Cache* cache = nullptr;
  const Clock* clock = nullptr;
  ClusterApi* api = nullptr;               // may be null in unit tests (then nothing binds)
  SchedulingObserver* observer = nullptr;  // optional
  BindExecutor* bind_executor = nullptr;   // null: bind inline
  uint64_t seed = 42;
  QueueOptions queue_options;
};

class Scheduler final : public Handle {
 public:
  static absl::StatusOr<std::unique_ptr<Scheduler>> New(SchedulerParams params);
  ~Scheduler() override;

  // --- Inputs (informers, loaders). Thread-safe. ---
  // Pending pods of one of our profiles go to the queue; pods with a node go to the cache.
  void OnPodAdd(Pod pod);
  void OnPodUpdate(Pod pod);
  void OnPodDelete(const std::string& key);
  void OnNodeAdd(Node node);
  void OnNodeUpdate(Node node);
  void OnNodeDelete(const std::string& name);
  void OnPriorityClass(PriorityClass pc);
  void OnPriorityClassDelete(const std::string& name);
  // Other watched objects (PodGroups, Queues) changed: parked pods may now be schedulable.
  void OnCustomObjectChange();

  // --- The loop (one thread). ---
  // The scheduling loop of the live binary, replay and inflate alike: housekeeping (permit
  // timeouts), then one cycle for the next ready pod; until `stop` is set, `max_cycles` ran, or
  // (see RunOptions::on_idle) nothing is ready. Returns the number of cycles run.
  int64_t Run(const std::atomic<bool>& stop, const RunOptions& options = {});
  // When something next becomes due without any outside event: a backoff ends or a permit
  // wait times out. The bench moves its virtual clock there when idle.
  std::optional<absl::Time> NextWakeup() const;
  // One step of Run: housekeeping, then schedules the next pod from the queue; false when the
  // queue has no ready pod.
  bool ScheduleOne();
  // Like ScheduleOne, but waits up to `timeout` for a pod.
  bool ScheduleOneWait(absl::Duration timeout);
  // Rejects permit-waiting pods whose timeout passed; called by the loop each step.
  void Housekeeping();

  SchedulingQueue& queue() { return *queue_; }
  Cache& cache() { return *cache_; }
  const Framework* FrameworkFor(std::string_view scheduler_name) const;
  std::vector<std::string> ProfileNames() const;

  // --- Permit "Wait" plumbing (gangs): a waiting pod is assumed and reserved, and binds once
  // every plugin that asked it to wait allows it. ---
  bool AllowWaitingPod(const std::string& key);
  bool RejectWaitingPod(const std::string& key, const std::string& message);
  std::vector<std::string> WaitingPodKeys() const;

  // --- Handle ---
  const Snapshot& snapshot() const override { return snapshot_; }
  const Clock& clock() const override { return *clock_; }
  ClusterApi* api() const override { return api_; }
  uint64_t seed() const override { return seed_; }
  std::optional<int32_t> PriorityClassValue(std::string_view name) const override;

 private:
  explicit Scheduler(SchedulerParams params);

  struct WaitingPod {
    const Framework* fw;
    std::shared_ptr<CycleState> state;
    QueuedPodInfo info;
    std::string node;
    absl::Time deadline;
  };

  // Fills in priority from the PriorityClass, as admission would.
  void ResolvePriority(Pod& pod) const;
  bool Ours(const Pod& pod) const;
  void ExpireWaitingPods();
  void RunCycle(SchedulingQueue::Popped popped);
  void HandleFailure(const Framework& fw, QueuedPodInfo info, int64_t cycle, const Status& status,
                     const std::string& message, const std::vector<std::string>& rejecting_plugins);
  void StartBinding(const Framework& fw, std::shared_ptr<CycleState> state, QueuedPodInfo info,
                    std::string node);
  void Bind(const Framework& fw, std::shared_ptr<CycleState> state, QueuedPodInfo info,
            std::string node);
  void UndoAssume(const Framework& fw, CycleState& state, const QueuedPodInfo& info,
                  const std::string& node);

  const Registry* registry_;
  Cache* cache_;
  const Clock* clock_;
  ClusterApi* api_;
  SchedulingObserver* observer_;
  BindExecutor* bind_executor_;
  uint64_t seed_;
  std::unique_ptr<SchedulingQueue> queue_;
  std::vector<std::unique_ptr<Framework>> profiles_;
  Snapshot snapshot_;

  mutable absl::Mutex mu_;
  StringKeyedMap<PriorityClass> priority_classes_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<WaitingPod> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
