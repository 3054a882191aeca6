// One SchedulingObserver that hands every outcome to several (the live scheduler's status
// reporter and its metrics), in the order they were added.
//
//   ObserverFanout observers;
//   observers.Add(&reporter);
//   observers.Add(&metrics);      // all added before the scheduler starts
//   SchedulerParams{.observer = &observers, ...}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scheduler/core/scheduler.h"

namespace tessel::server {

class ObserverFanout final : public SchedulingObserver {
 public:
  // Not thread-safe: add every observer before the scheduler runs.
  void Add(SchedulingObserver* observer) { observers_.push_back(observer); }

  void PodScheduled(const Pod& pod, const std::string& node) override {
    for (SchedulingObserver* o : observers_) o->PodScheduled(pod, node);
  }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    for (SchedulingObserver* o : observers_) o->PodUnschedulable(pod, kind, message);
  }
  void PodSchedulingGated(const Pod& pod) override {
    for (SchedulingObserver* o : observers_) o->PodSchedulingGated(pod);
  }
  void PodsPreempted(const Pod& preemptor, const std::string& node,
                     const std::vector<PreemptionVictim>& victims) override {
    for (SchedulingObserver* o : observers_) o->PodsPreempted(preemptor, node, victims);
  }
  void NominationCleared(const Pod& pod) override {
    for (SchedulingObserver* o : observers_) o->NominationCleared(pod);
  }
  void PodRejected(const Pod& pod, const std::vector<std::string>& plugins) override {
    for (SchedulingObserver* o : observers_) o->PodRejected(pod, plugins);
  }
  void GangMemberEvicted(const Pod& pod) override {
    for (SchedulingObserver* o : observers_) o->GangMemberEvicted(pod);
  }
  void AttemptFinished(const Pod& pod, AttemptResult result, absl::Duration latency) override {
    for (SchedulingObserver* o : observers_) o->AttemptFinished(pod, result, latency);
  }

 private:
  std::vector<SchedulingObserver*> observers_;
};

}  // namespace tessel::server
