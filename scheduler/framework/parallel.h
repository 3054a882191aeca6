// A small fixed pool that runs `fn(i)` for i in [0, n) across worker threads, with the caller
// working too. Filter and Score use it to cover every node of large clusters: results are
// written by index, so the outcome does not depend on thread timing.
//
//   Parallelizer pool(4);
//   pool.For(nodes.size(), [&](size_t i) { out[i] = Check(*nodes[i]); });
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tessel {

class Parallelizer {
 public:
  // workers <= 1 runs everything on the calling thread; 0 picks the number of cores.
  explicit Parallelizer(int workers);
  ~Parallelizer();
  Parallelizer(const Parallelizer&) = delete;
  Parallelizer& operator=(const Parallelizer&) = delete;

  // Blocks until fn has run for every index. Below `min_parallel` items, runs inline.
  void For(size_t n, const std::function<void(size_t)>& fn, size_t min_parallel = 256);
  int workers() const { return static_cast<int>(threads_.size()) + 1; }

 private:
  void WorkerLoop();
  void Drain();

  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  absl::Mutex call_mu_;  // one For() at a time
  const std::function<void(size_t)>* job_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t job_size_ = 0;
  uint64_t job_id_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> next_{0};
};

}  // namespace tessel
