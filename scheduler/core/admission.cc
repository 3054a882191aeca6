// Admission of a pod to its chosen node, and the reading of its bind (see admission.h).
#include "scheduler/core/admission.h"

#include "scheduler/framework/binding.h"
#include "scheduler/state/pod_charge.h"

namespace tessel {

Admission Admit(const Framework& fw, CycleState& state, Cache& cache, Nominator& nominator,
                const Pod& pod, Pod assumed) {
  const std::string node = assumed.node_name;
  if (absl::Status st = cache.AssumePod(std::move(assumed)); !st.ok()) {
    return {.status = Status::Error(std::string(st.message()))};
  }
  // RunReserve unreserves the plugins it ran when one refuses.
  if (Status st = fw.RunReserve(state, pod, node); !st.ok()) {
    (void)cache.ForgetPod(pod.Key(), pod.meta.uid);
    return {.status = st};
  }
  PermitResult permit = fw.RunPermit(state, pod, node);
  if (!permit.status.ok() && !permit.status.IsWait()) {
    Unadmit(fw, state, cache, pod, node);
    return {.status = permit.status};
  }
  nominator.Remove(pod.Key());  // it holds its own room now
  return {.status = permit.status, .timeout = permit.timeout};
}

bool Unadmit(const Framework& fw, CycleState& state, Cache& cache, const Pod& pod,
             const std::string& node) {
  fw.RunUnreserve(state, pod, node);
  return cache.ForgetPod(pod.Key(), pod.meta.uid).ok();
}

BindOutcome BindAdmitted(const Framework& fw, CycleState& state, const Pod& pod,
                         const std::string& node, Status* status) {
  *status = fw.RunPreBind(state, pod, node);
  if (!status->ok()) return BindOutcome::kFailed;
  // What the pod is charged, recorded on it with the bind itself (state/pod_charge.h).
  AddBindingAnnotation(state, kChargeAnnotation, ChargeRecord(pod, BindingAnnotations(state)));
  *status = fw.RunBind(state, pod, node);
  if (status->ok()) return BindOutcome::kBound;
  const absl::Status* answer = BindResult(state);
  if (answer == nullptr) return BindOutcome::kFailed;  // no bind was sent
  switch (answer->code()) {
    case absl::StatusCode::kAlreadyExists:
      return BindOutcome::kAlreadyBound;
    case absl::StatusCode::kNotFound:
      return BindOutcome::kPodGone;
    case absl::StatusCode::kFailedPrecondition:
      return BindOutcome::kMayNotWrite;
    default:
      return BindOutcome::kFailed;
  }
}

bool SettleBind(const Framework& fw, CycleState& state, Cache& cache, const Pod& pod,
                const std::string& node, BindOutcome outcome) {
  if (outcome == BindOutcome::kBound) {
    (void)cache.FinishBinding(pod.Key(), pod.meta.uid);
    return false;
  }
  return Unadmit(fw, state, cache, pod, node);
}

}  // namespace tessel
