// Thread pools for the live scheduler's API writes, so that the scheduling thread never waits
// on the network:
//   WorkerPool   N threads running submitted tasks in FIFO order. As a BindExecutor it is the
//                binder pool; with one thread it serialises status writes (events, conditions).
//
//   WorkerPool binder("bind", 8);
//   SchedulerParams{..., .bind_executor = &binder};
//   binder.Shutdown();   // runs what was queued, then joins
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "scheduler/core/scheduler.h"

namespace tessel::kube {

class WorkerPool final : public BindExecutor {
 public:
  // `max_queued` > 0 bounds the backlog: the oldest task is dropped (and counted) beyond it.
  WorkerPool(std::string name, int threads, size_t max_queued = 0)
      : name_(std::move(name)), max_queued_(max_queued) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Work(); });
  }
  ~WorkerPool() override { Shutdown(); }

  void Submit(std::function<void()> task) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    if (max_queued_ > 0 && tasks_.size() >= max_queued_) {
      tasks_.pop_front();
      ++dropped_;
    }
    tasks_.push_back(std::move(task));
  }

  // Finishes the queued tasks and joins the threads. Idempotent.
  void Shutdown() {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  // Drops queued tasks that have not started (a leader that lost its lease must not bind).
  size_t DiscardPending() {
    absl::MutexLock lock(&mu_);
    const size_t n = tasks_.size();
    tasks_.clear();
    return n;
  }

  size_t queued() const {
    absl::MutexLock lock(&mu_);
    return tasks_.size() + running_;
  }
  int64_t dropped() const {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return closed_ || !tasks_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        if (tasks_.empty()) return;  // closed and drained
        task = std::move(tasks_.front());
        tasks_.pop_front();
        ++running_;
      }
      task();
      absl::MutexLock lock(&mu_);
      --running_;
    }
  }

  const std::string name_;
  const size_t max_queued_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessel::kube
