// The live scheduler's loop: one thread that waits until the informers have synced, runs
// `on_synced` once (what only the leader serves: Queue statuses, the admin API), then runs the
// scheduler until it is stopped. It starts when this replica starts leading (or at once without
// leader election) and is never restarted: a replica that loses its lease exits (LeaseLost), as
// kube-scheduler does, so that no state of the lost term leaks into the next one.
//
//   SchedulingLoop loop(&scheduler, &feed, &binder, {.may_schedule = ..., .on_synced = ...});
//   elector callbacks: .on_started_leading = [&] { loop.Start(); },
//                      .on_stopped_leading = [&] { loop.LeaseLost(); }
//   ... on SIGTERM: loop.Stop();
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/scheduler_feed.h"
#include "scheduler/kube/work_queue.h"

namespace tessel::kube {

struct SchedulingLoopOptions {
  // While this returns false no pod is popped (the lease is being lost).
  std::function<bool()> may_schedule;
  // Called once, on the loop's thread, when the caches first synced.
  std::function<void()> on_synced;
};

class SchedulingLoop {
 public:
  // `binder` runs the binding cycles the loop hands out; a stopping loop drops its backlog.
  SchedulingLoop(Scheduler* scheduler, const SchedulerFeed* feed, WorkerPool* binder,
                 SchedulingLoopOptions options);
  ~SchedulingLoop() { Stop(); }
  SchedulingLoop(const SchedulingLoop&) = delete;
  SchedulingLoop& operator=(const SchedulingLoop&) = delete;

  // Starts the loop's thread (from any thread; once; nothing after Stop).
  void Start();
  // Ends the loop for good: the scheduler's Run returns after its cycle, binds not started are
  // dropped (the next leader schedules those pods again), and the thread is joined. Binds in
  // flight go on; the binder's Shutdown waits for them.
  void Stop();
  // The lease is lost: drops the binds not started and exits the process with status 1 at once.
  [[noreturn]] void LeaseLost();

 private:
  Scheduler* scheduler_;
  const SchedulerFeed* feed_;
  WorkerPool* binder_;
  SchedulingLoopOptions options_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;  // Start runs on the elector's thread, Stop on the main one
  std::thread thread_ ABSL_GUARDED_BY(mu_);
  std::once_flag synced_;
};

}  // namespace tessel::kube
