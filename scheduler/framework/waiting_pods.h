// Pods that Permit asked to wait (kube-scheduler's waiting pods map): assumed and reserved on
// their node, each bound once allowed, or unreserved once rejected or timed out. `Held` is what
// the core keeps of the pod while it waits (its in-flight token); it must have `pod()`.
// Thread-safe.
//
//   waiting.Add(key, {.fw = fw, .state = state, .held = std::move(token), .node = n, .deadline = d});
//   if (auto w = waiting.Take(key)) Bind(*w);       // allowed
//   for (auto& key : waiting.Expired(now)) ...       // timed out
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/api/uid.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/util/strings.h"

namespace tessel {

class Framework;

template <typename Held>
class WaitingPods {
 public:
  struct Entry {
    const Framework* fw = nullptr;
    std::shared_ptr<CycleState> state;
    Held held;
    std::string node;
    absl::Time deadline;
  };

  void Add(const std::string& key, Entry entry) {
    absl::MutexLock lock(&mu_);
    entries_.insert_or_assign(key, std::move(entry));
  }
  // Removes and returns the pod's entry; with a UID, only if it is that pod.
  std::optional<Entry> Take(const std::string& key, std::string_view uid = {}) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    if (!SameUid(it->second.held.pod().meta.uid, uid)) return std::nullopt;
    Entry out = std::move(it->second);
    entries_.erase(it);
    return out;
  }
  // Every waiting pod's key, sorted.
  std::vector<std::string> Keys() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [key, e] : entries_) out.push_back(key);
    std::sort(out.begin(), out.end());
    return out;
  }
  // The keys whose deadline is at or before `now`, sorted.
  std::vector<std::string> Expired(absl::Time now) const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [key, e] : entries_) {
      if (now >= e.deadline) out.push_back(key);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::optional<absl::Time> EarliestDeadline() const {
    absl::MutexLock lock(&mu_);
    std::optional<absl::Time> out;
    for (const auto& [key, e] : entries_) {
      if (!out.has_value() || e.deadline < *out) out = e.deadline;
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  StringKeyedMap<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
