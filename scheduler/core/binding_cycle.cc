// The binding cycle (PreBind, Bind) of one pod, inline or on the bind executor, and the pods
// that wait in Permit until allowed, rejected or timed out (framework/waiting_pods.h).
#include "scheduler/core/admission.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/binding.h"
#include "scheduler/util/strings.h"

namespace tessel {

void Scheduler::StartBinding(const Framework& fw, std::shared_ptr<CycleState> state, InFlightPod pod,
                             std::string node) {
  if (bind_executor_ == nullptr) return Bind(fw, *state, std::move(pod), node);
  // Tasks are copied by std::function: the token travels in a shared holder.
  auto held = std::make_shared<InFlightPod>(std::move(pod));
  bind_executor_->Submit([this, &fw, state = std::move(state), held, node = std::move(node)] {
    Bind(fw, *state, std::move(*held), node);
  });
}

void Scheduler::Bind(const Framework& fw, CycleState& state, InFlightPod pod, const std::string& node) {
  const PodRef ref = pod.ref();
  // The pod may have been deleted while its bind waited in the backlog: then it is not sent.
  if (pod.ended()) return UndoAssume(fw, state, *ref, node);
  // Recheck the node right before binding: a bind to a node deleted meanwhile would succeed,
  // and pod GC would then delete the pod.
  Status st;
  BindOutcome outcome = BindOutcome::kFailed;
  if (cache_->HasNode(node)) {
    outcome = BindAdmitted(fw, state, *ref, node, &st);
  } else {
    st = Status::Error(StrCat("node \"", node, "\" was deleted before the bind"));
  }
  if (SettleBind(fw, state, *cache_, *ref, node, outcome)) {
    queue_->OnClusterEvent(kAssignedPodDelete);  // parked pods may fit in the room it held
  }
  // Placed (now or before), gone, or not ours to write: nothing to retry. Only a bind of this
  // cycle's is reported as scheduled.
  if (outcome != BindOutcome::kFailed || pod.ended()) {
    pod.Done();
    if (outcome == BindOutcome::kBound && observer_) observer_->PodScheduled(*ref, node);
    return;
  }
  if (observer_) observer_->PodUnschedulable(*ref, FailureKind::kBindFailed, StrCat("binding rejected: ", st.Message()));
  pod.Backoff();
}

void Scheduler::UndoAssume(const Framework& fw, CycleState& state, const Pod& pod, const std::string& node,
                           bool notify) {
  if (Unadmit(fw, state, *cache_, pod, node) && notify) {
    // Its resources are free again: pods parked while they were held may fit now.
    queue_->OnClusterEvent(kAssignedPodDelete);
  }
}

bool Scheduler::AllowWaitingPod(const std::string& key) {
  std::optional<WaitingPods<InFlightPod>::Entry> w = waiting_.Take(key);
  if (!w.has_value()) return false;
  StartBinding(*w->fw, std::move(w->state), std::move(w->held), std::move(w->node));
  return true;
}

bool Scheduler::RejectWaitingPod(const std::string& key, const std::string& message) {
  std::optional<WaitingPods<InFlightPod>::Entry> w = waiting_.Take(key);
  if (!w.has_value()) return false;
  UndoAssume(*w->fw, *w->state, w->held.pod(), w->node);
  if (w->held.ended()) return true;  // the token says Done
  if (observer_) observer_->PodUnschedulable(w->held.pod(), FailureKind::kUnschedulable, message);
  w->held.Backoff();
  return true;
}

std::vector<std::string> Scheduler::WaitingPodKeys() const { return waiting_.Keys(); }

void Scheduler::ExpireWaitingPods() {
  for (const std::string& key : waiting_.Expired(clock_->Now())) {
    RejectWaitingPod(key, "rejected by permit: timed out waiting");
  }
  ExpireGangWaits();
}

}  // namespace tessel
