// Who may be disrupted, and when: the opt-in to moves (consolidation) and the minimum run time
// before a pod may be moved or preempted. Both are set by the pod's owners, not the scheduler:
//
//   movable       pod annotation tessel.io/movable: "true" (a pod's "false" overrides the rest),
//                 or the same annotation on its PriorityClass, or its Queue's
//                 spec.disruption.movable: true. A move restarts the pod; its controller
//                 recreates it, so only workloads that checkpoint should opt in.
//   min run time  PriorityClass annotation tessel.io/min-run-seconds: "600", else the Queue's
//                 spec.disruption.minRunSeconds. Counted from status.startTime (creation when
//                 unset). Unset: preemption may evict at once, moves use their own default.
//
// Built once per attempt from the classes and queues the scheduler knows:
//   DisruptionRules rules(handle.PriorityClasses(), handle.Queues());
//   if (rules.Movable(pod) && rules.RanLongEnough(pod, now, default_min_run)) ...
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/api/objects.h"
#include "scheduler/framework/interface.h"
#include "scheduler/quota/queue.h"
#include "scheduler/util/strings.h"

namespace tessel::preemption {

inline constexpr std::string_view kMovableAnnotation = "tessel.io/movable";
inline constexpr std::string_view kMinRunSecondsAnnotation = "tessel.io/min-run-seconds";

class DisruptionRules {
 public:
  DisruptionRules(const std::vector<PriorityClass>& classes, std::shared_ptr<const QueueDirectory> queues);

  // Whether the pod opted in to being moved (see the file comment).
  bool Movable(const Pod& pod) const;
  // The minimum run time its PriorityClass or Queue sets; nullopt when neither does.
  std::optional<absl::Duration> MinRunTime(const Pod& pod) const;
  // Whether the pod has run at least its minimum run time at `now` (`fallback` when none is set).
  bool RanLongEnough(const Pod& pod, absl::Time now, absl::Duration fallback) const;
  // Whether any class or queue sets a minimum run time (else RanLongEnough is the fallback's).
  bool AnyMinRunTime() const { return any_min_run_; }
  // What the classes and queues say about moves, as text: equal texts, equal answers of
  // Movable for any pod (preemption::MovableIndex keeps its answers while it stays).
  const std::string& movable_version() const { return movable_version_; }

 private:
  struct ClassSettings {
    std::optional<bool> movable;
    std::optional<absl::Duration> min_run;
  };
  const Queue* QueueOf(const Pod& pod) const;

  StringKeyedMap<ClassSettings> classes_;
  std::shared_ptr<const QueueDirectory> queues_;
  bool any_min_run_ = false;
  std::string movable_version_;
};

// The guard a disruption asks (preemption::Context::may_disrupt_now): has the pod run its minimum
// run time at the handle's clock's now (`fallback` when its class and queue set none)? Null when
// no class or queue sets one and `fallback` is zero: then every pod may be disrupted.
std::function<bool(const Pod&)> MinRunGuard(const Handle& handle, absl::Duration fallback);

// When the pod started running: status.startTime, else its creation.
absl::Time StartOf(const Pod& pod);

// Reads an annotation as "true"/"false"; nullopt when absent or neither.
std::optional<bool> BoolAnnotation(const StringMap& annotations, std::string_view key);

}  // namespace tessel::preemption
