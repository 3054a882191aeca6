// Who may be disrupted, and when (disruption.h).
#include "scheduler/preemption/disruption.h"

#include "absl/strings/numbers.h"

namespace tessel::preemption {

std::optional<bool> BoolAnnotation(const StringMap& annotations, std::string_view key) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return std::nullopt;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  return std::nullopt;
}

absl::Time StartOf(const Pod& pod) { return pod.start_time.value_or(pod.meta.creation_timestamp); }

DisruptionRules::DisruptionRules(const std::vector<PriorityClass>& classes,
                                 std::shared_ptr<const QueueDirectory> queues)
    : queues_(std::move(queues)) {
  for (const PriorityClass& pc : classes) {
    ClassSettings s;
    s.movable = BoolAnnotation(pc.meta.annotations, kMovableAnnotation);
    auto it = pc.meta.annotations.find(kMinRunSecondsAnnotation);
    int64_t seconds = 0;
    // An unreadable or negative value sets nothing (the class is reported by the informer's
    // decoder; here it must not stop scheduling).
    if (it != pc.meta.annotations.end() && absl::SimpleAtoi(it->second, &seconds) && seconds >= 0) {
      s.min_run = absl::Seconds(seconds);
      any_min_run_ = true;
    }
    if (s.movable) StrAppend(&movable_version_, "class ", pc.meta.name, *s.movable ? " yes;" : " no;");
    if (s.movable || s.min_run) classes_.emplace(pc.meta.name, s);
  }
  if (queues_ != nullptr) {
    for (const Queue& q : queues_->queues()) {
      any_min_run_ = any_min_run_ || q.min_run_seconds.has_value();
      if (!q.movable.value_or(false)) continue;
      // Which pods a movable queue holds follows its spec: any change moves resourceVersion.
      StrAppend(&movable_version_, "queue ", q.name(), "@", q.meta.resource_version, ";");
    }
  }
}

const Queue* DisruptionRules::QueueOf(const Pod& pod) const {
  return queues_ == nullptr ? nullptr : queues_->QueueFor(pod).queue;
}

bool DisruptionRules::Movable(const Pod& pod) const {
  if (std::optional<bool> own = BoolAnnotation(pod.meta.annotations, kMovableAnnotation)) return *own;
  if (auto it = classes_.find(pod.priority_class_name); it != classes_.end() && it->second.movable) {
    return *it->second.movable;
  }
  const Queue* q = QueueOf(pod);
  return q != nullptr && q->movable.value_or(false);
}

std::optional<absl::Duration> DisruptionRules::MinRunTime(const Pod& pod) const {
  if (!any_min_run_) return std::nullopt;
  if (auto it = classes_.find(pod.priority_class_name); it != classes_.end() && it->second.min_run) {
    return it->second.min_run;
  }
  const Queue* q = QueueOf(pod);
  if (q != nullptr && q->min_run_seconds) return absl::Seconds(*q->min_run_seconds);
  return std::nullopt;
}

std::function<bool(const Pod&)> MinRunGuard(const Handle& handle, absl::Duration fallback) {
  auto rules = std::make_shared<const DisruptionRules>(handle.PriorityClasses(), handle.Queues());
  if (!rules->AnyMinRunTime() && fallback <= absl::ZeroDuration()) return nullptr;
  const absl::Time now = handle.clock().Now();
  return [rules, now, fallback](const Pod& pod) { return rules->RanLongEnough(pod, now, fallback); };
}

bool DisruptionRules::RanLongEnough(const Pod& pod, absl::Time now, absl::Duration fallback) const {
  const absl::Duration min_run = MinRunTime(pod).value_or(fallback);
  return min_run <= absl::ZeroDuration() || now - StartOf(pod) >= min_run;
}

}  // namespace tessel::preemption
