// A popped pod as the core holds it: in flight until it is handed back to the queue
// (Unschedulable, Backoff) or dropped. Dropping the token tells the queue the core is done with
// the pod (SchedulingQueue::Done), so no exit of a cycle, a Permit wait or a bind can leave it
// in flight by mistake.
//
//   InFlightPod pod(queue, *queue.Pop());
//   if (pod.ended()) return;                       // deleted meanwhile: Done, no retry
//   pod.Unschedulable(kNodeAdd);                   // parked until a node comes
#pragma once

#include <optional>
#include <utility>

#include "scheduler/queue/scheduling_queue.h"

namespace tessel {

class InFlightPod {
 public:
  InFlightPod(SchedulingQueue& queue, SchedulingQueue::Popped popped)
      : queue_(&queue), info_(std::move(popped.info)), cycle_(popped.cycle) {}
  InFlightPod(InFlightPod&& other) noexcept
      : queue_(std::exchange(other.queue_, nullptr)), info_(std::move(other.info_)), cycle_(other.cycle_) {}
  InFlightPod& operator=(InFlightPod&& other) noexcept {
    if (this != &other) {
      Done();
      queue_ = std::exchange(other.queue_, nullptr);
      info_ = std::move(other.info_);
      cycle_ = other.cycle_;
    }
    return *this;
  }
  InFlightPod(const InFlightPod&) = delete;
  InFlightPod& operator=(const InFlightPod&) = delete;
  ~InFlightPod() { Done(); }

  const Pod& pod() const { return *info_.pod; }
  // The copy this attempt schedules; held by the caller while the token may be handed back.
  const PodRef& ref() const { return info_.pod; }
  const QueuedPodInfo& info() const { return info_; }
  int64_t cycle() const { return cycle_; }
  // The attempt schedules a newer copy of the pod (e.g. with the nomination it just got).
  void Replace(PodRef pod) { info_.pod = std::move(pod); }
  // Its next retry is not counted as a failed attempt (no backoff grows from it).
  void ForgetAttempts() { info_.attempts = 0; }

  // The pod was deleted (or replaced, or bound elsewhere) since it was popped.
  bool ended() const { return queue_ != nullptr && queue_->Ended(info_.pod->Key(), info_.pod->meta.uid); }
  // Hands the pod back to wait for one of `events` (SchedulingQueue::AddUnschedulable).
  void Unschedulable(uint32_t events, uint32_t hinted = 0, std::optional<Resources> need = std::nullopt) {
    if (SchedulingQueue* q = std::exchange(queue_, nullptr)) {
      q->AddUnschedulable(std::move(info_), cycle_, events, hinted, std::move(need));
    }
  }
  // Hands the pod back to retry after its backoff.
  void Backoff() {
    if (SchedulingQueue* q = std::exchange(queue_, nullptr)) q->AddBackoff(std::move(info_));
  }
  // Done with the pod: placed, or its life ended. What the destructor does; idempotent.
  void Done() {
    if (SchedulingQueue* q = std::exchange(queue_, nullptr)) q->Done(info_.pod->Key(), info_.pod->meta.uid);
  }

 private:
  SchedulingQueue* queue_;
  QueuedPodInfo info_;
  int64_t cycle_ = 0;
};

}  // namespace tessel
