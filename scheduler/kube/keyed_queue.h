// A work queue of object keys for API writes whose latest wanted state the caller keeps (a pod's
// condition, an event's count), as client-go's workqueue:
//   - a key added twice before it is processed is processed once (writes coalesce, so a burst
//     costs one write per object, and the backlog never exceeds the number of objects);
//   - a key added while it is being processed is processed again afterwards (nothing is lost);
//   - a key whose write failed is retried after a per-key exponential backoff; with
//     `max_attempts` > 0 it is given up after that many attempts and counted in dropped();
//   - Shutdown() does not drain: writes in progress finish, the rest is counted in abandoned().
//
//   KeyedQueue queue("status", {.threads = 1}, [&](const std::string& key) {
//     return Write(key) ? KeyedQueue::Outcome::kDone : KeyedQueue::Outcome::kRetry;
//   });
//   queue.Add("ns/pod");
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "scheduler/kube/backoff.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

struct KeyedQueueOptions {
  int threads = 1;
  int max_attempts = 0;  // 0: retry until done (or the key is removed)
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(30);
};

class KeyedQueue {
 public:
  enum class Outcome { kDone, kRetry, kGiveUp };

  KeyedQueue(std::string name, KeyedQueueOptions options,
             std::function<Outcome(const std::string& key)> process)
      : name_(std::move(name)), options_(options), process_(std::move(process)) {
    for (int i = 0; i < std::max(1, options_.threads); ++i) threads_.emplace_back([this] { Work(); });
  }
  ~KeyedQueue() { Shutdown(); }
  KeyedQueue(const KeyedQueue&) = delete;
  KeyedQueue& operator=(const KeyedQueue&) = delete;

  void Add(const std::string& key) {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    if (processing_.contains(key)) {
      dirty_.insert(key);
      return;
    }
    if (queued_.insert(key).second) ready_.push_back(key);
  }

  // Forgets a key (its object is gone): no further write is started for it.
  void Remove(const std::string& key) {
    absl::MutexLock lock(&mu_);
    queued_.erase(key);  // a stale entry in ready_ or delayed_ is skipped when popped
    dirty_.erase(key);
    attempts_.erase(key);
  }

  // Stops the workers; writes in progress finish, queued ones are abandoned (counted).
  void Shutdown() {
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      closed_ = true;
      abandoned_ += static_cast<int64_t>(queued_.size());
      queued_.clear();
      ready_.clear();
      delayed_.clear();
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  // Keys waiting (ready or in backoff) or being processed.
  size_t pending() const {
    absl::MutexLock lock(&mu_);
    return queued_.size() + processing_.size();
  }
  int64_t retries() const {
    absl::MutexLock lock(&mu_);
    return retries_;
  }
  int64_t dropped() const {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }
  int64_t abandoned() const {
    absl::MutexLock lock(&mu_);
    return abandoned_;
  }
  const std::string& name() const { return name_; }

 private:
  // Moves due keys from backoff to ready; returns when the next one is due.
  absl::Time PromoteDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = std::move(delayed_.begin()->second);
      delayed_.erase(delayed_.begin());
      if (queued_.contains(key)) ready_.push_back(std::move(key));
    }
    return delayed_.empty() ? absl::InfiniteFuture() : delayed_.begin()->first;
  }

  absl::Duration BackoffFor(int attempt) const {
    absl::Duration d = options_.initial_backoff;
    for (int i = 1; i < attempt && d < options_.max_backoff; ++i) d *= 2;
    return std::min(d, options_.max_backoff);
  }

  void Work() {
    for (;;) {
      std::string key;
      {
        absl::MutexLock lock(&mu_);
        for (;;) {
          if (closed_) return;
          const absl::Time next = PromoteDue(absl::Now());
          while (!ready_.empty() && !queued_.contains(ready_.front())) ready_.pop_front();
          if (!ready_.empty()) break;
          auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return closed_ || !ready_.empty();
          };
          const absl::Duration wait =
              next == absl::InfiniteFuture() ? absl::Seconds(1) : next - absl::Now();
          mu_.AwaitWithTimeout(absl::Condition(&wake), std::max(wait, absl::Milliseconds(1)));
        }
        key = std::move(ready_.front());
        ready_.pop_front();
        queued_.erase(key);
        processing_.insert(key);
      }
      const Outcome outcome = process_(key);
      absl::MutexLock lock(&mu_);
      processing_.erase(key);
      const bool dirty = dirty_.erase(key) > 0;
      if (closed_) continue;
      if (outcome == Outcome::kRetry) {
        const int attempt = ++attempts_[key];
        if (options_.max_attempts > 0 && attempt >= options_.max_attempts) {
          attempts_.erase(key);
          ++dropped_;
        } else {
          ++retries_;
          queued_.insert(key);
          delayed_.emplace(absl::Now() + BackoffFor(attempt), key);
          continue;
        }
      } else {
        attempts_.erase(key);
        if (outcome == Outcome::kGiveUp) ++dropped_;
      }
      if (dirty && queued_.insert(key).second) ready_.push_back(key);
    }
  }

  const std::string name_;
  const KeyedQueueOptions options_;
  const std::function<Outcome(const std::string&)> process_;
  mutable absl::Mutex mu_;
  std::deque<std::string> ready_ ABSL_GUARDED_BY(mu_);
  std::multimap<absl::Time, std::string> delayed_ ABSL_GUARDED_BY(mu_);
  StringSet queued_ ABSL_GUARDED_BY(mu_);  // in ready_ or delayed_
  StringSet processing_ ABSL_GUARDED_BY(mu_);
  StringSet dirty_ ABSL_GUARDED_BY(mu_);   // added while processing
  StringKeyedMap<int> attempts_ ABSL_GUARDED_BY(mu_);
  int64_t retries_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t abandoned_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessel::kube
