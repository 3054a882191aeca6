#include "scheduler/kube/scheduling_loop.h"

#include <cstdlib>

#include "spdlog/spdlog.h"

namespace tessel::kube {

SchedulingLoop::SchedulingLoop(Scheduler* scheduler, const SchedulerFeed* feed, WorkerPool* binder,
                               SchedulingLoopOptions options)
    : scheduler_(scheduler), feed_(feed), binder_(binder), options_(std::move(options)) {}

void SchedulingLoop::Start() {
  absl::MutexLock lock(&mu_);
  if (stop_.load() || thread_.joinable()) return;
  thread_ = std::thread([this] {
    while (!stop_.load() && !feed_->WaitForSync(absl::Milliseconds(500))) {
    }
    spdlog::info("caches synced; scheduling");
    if (!stop_.load() && options_.on_synced) std::call_once(synced_, options_.on_synced);
    scheduler_->Run(stop_, {.wait = absl::Milliseconds(500), .may_schedule = options_.may_schedule});
  });
}

void SchedulingLoop::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    if (stop_.exchange(true) && !thread_.joinable()) return;
    thread = std::move(thread_);
  }
  scheduler_->Stop();
  const size_t discarded = binder_->DiscardPending();
  if (discarded > 0) spdlog::info("{} binds not started; the next leader schedules them", discarded);
  if (thread.joinable()) thread.join();
  binder_->DiscardPending();  // what the loop queued while it finished its cycle
}

void SchedulingLoop::LeaseLost() {
  stop_.store(true);
  binder_->DiscardPending();
  spdlog::critical("leader election lost; exiting");
  spdlog::shutdown();
  std::_Exit(1);
}

}  // namespace tessel::kube
