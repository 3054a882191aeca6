// Parallelizer: workers claim indices from a shared atomic counter in small chunks.
#include "scheduler/framework/parallel.h"

#include <algorithm>

namespace tessel {
namespace {
constexpr size_t kChunk = 16;
}

Parallelizer::Parallelizer(int workers) {
  if (workers == 0) workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

Parallelizer::~Parallelizer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void Parallelizer::Drain() {
  const std::function<void(size_t)>* job;
  {
    absl::MutexLock lock(&mu_);
    job = job_;
  }
  while (job != nullptr) {
    size_t begin = next_.fetch_add(kChunk);
    if (begin >= job_size_) break;
    size_t end = std::min(job_size_, begin + kChunk);
    for (size_t i = begin; i < end; ++i) (*job)(i);
  }
}

void Parallelizer::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      struct WaitArgs {
        Parallelizer* self;
        uint64_t seen;
      } args{this, seen};
      mu_.Await(absl::Condition(
          +[](WaitArgs* a) { return a->self->stop_ || a->self->job_id_ != a->seen; }, &args));
      if (stop_) return;
      seen = job_id_;
      ++busy_;
    }
    Drain();
    absl::MutexLock lock(&mu_);
    --busy_;
  }
}

void Parallelizer::For(size_t n, const std::function<void(size_t)>& fn, size_t min_parallel) {
  if (threads_.empty() || n < min_parallel) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  absl::MutexLock call(&call_mu_);
  {
    absl::MutexLock lock(&mu_);
    job_ = &fn;
    job_size_ = n;
    next_.store(0);
    ++job_id_;
  }
  Drain();
  absl::MutexLock lock(&mu_);
  // Every index is claimed; wait for workers still finishing theirs, then retire the job.
  mu_.Await(absl::Condition(+[](int* busy) { return *busy == 0; }, &busy_));
  job_ = nullptr;
}

}  // namespace tessel
