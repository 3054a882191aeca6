// Time as the scheduling core sees it. The live scheduler uses RealClock; tests and the bench
// inject a ManualClock so that backoff, timeouts and decay are exact and repeatable.
#pragma once

#include <atomic>
#include <chrono>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessel {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

// Monotonic time as an absl::Time (from an arbitrary epoch): it never steps when the wall clock
// is set, so deadlines measured on it (the leader lease's) do not move with the wall clock.
class SteadyClock final : public Clock {
 public:
  absl::Time Now() const override {
    return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
};

// A clock that only moves when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
