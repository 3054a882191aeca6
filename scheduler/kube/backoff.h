// Pacing for talking to the API server: exponential backoff with jitter for retries and
// reconnects, and a token bucket for client-side QPS/burst (as client-go's flowcontrol).
// Both take the current time as an argument so tests drive them exactly; TokenBucket::Wait is
// the blocking convenience the HTTP client uses.
//
//   Backoff backoff({.initial = absl::Milliseconds(200), .max = absl::Seconds(30)});
//   absl::SleepFor(backoff.Next());   // 200ms, 400ms, 800ms, ... (+ up to 10% jitter)
//   backoff.Reset();                  // after a success
//
//   TokenBucket limiter(50, 100);     // 50 QPS, bursts of 100
//   limiter.Wait();                   // blocks until a token is free
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessel::kube {

struct BackoffOptions {
  absl::Duration initial = absl::Milliseconds(200);
  absl::Duration max = absl::Seconds(30);
  double factor = 2.0;
  double jitter = 0.1;  // up to this fraction is added at random
};

class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {}, uint64_t seed = ThreadSeed())
      : options_(options), rng_(seed), current_(options.initial) {}

  // The delay before the next attempt; each call grows the base delay up to `max`.
  absl::Duration Next() {
    const absl::Duration base = current_;
    current_ = std::min(options_.max, current_ * options_.factor);
    const double r = std::uniform_real_distribution<double>(0.0, options_.jitter)(rng_);
    return std::min(options_.max + options_.max * options_.jitter, base + base * r);
  }
  void Reset() { current_ = options_.initial; }

  // A seed per call from a per-thread generator (std::random_device opens the OS entropy source
  // on every construction: measurable on a per-request path).
  static uint64_t ThreadSeed() {
    static thread_local std::mt19937_64 seeds(std::random_device{}());
    return seeds();
  }

 private:
  BackoffOptions options_;
  std::mt19937_64 rng_;
  absl::Duration current_;
};

// A token bucket: `qps` tokens per second, at most `burst` saved up. qps <= 0 means unlimited.
class TokenBucket {
 public:
  TokenBucket(double qps, int64_t burst, absl::Time now = absl::Now())
      : qps_(qps), burst_(std::max<int64_t>(1, burst)), tokens_(static_cast<double>(burst_)),
        last_(now) {}

  // Takes a token (possibly going into debt) and returns how long the caller must wait before
  // using it. Callers that reserve keep their order.
  absl::Duration Reserve(absl::Time now) {
    if (qps_ <= 0) return absl::ZeroDuration();
    absl::MutexLock lock(&mu_);
    if (now > last_) {
      tokens_ = std::min(static_cast<double>(burst_),
                         tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
      last_ = now;
    }
    tokens_ -= 1.0;
    if (tokens_ >= 0) return absl::ZeroDuration();
    return absl::Seconds(-tokens_ / qps_);
  }

  // Takes a token only if one is free now (for traffic that is better dropped than delayed).
  bool TryTake(absl::Time now) {
    if (qps_ <= 0) return true;
    absl::MutexLock lock(&mu_);
    if (now > last_) {
      tokens_ = std::min(static_cast<double>(burst_),
                         tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
      last_ = now;
    }
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

  void Wait() {
    const absl::Duration d = Reserve(absl::Now());
    if (d > absl::ZeroDuration()) absl::SleepFor(d);
  }

  double qps() const { return qps_; }
  int64_t burst() const { return burst_; }

 private:
  const double qps_;
  const int64_t burst_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::kube
