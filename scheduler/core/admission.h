// The one admission step for a pod whose cycle chose a node, whether it is a single pod
// (Scheduler::RunCycle) or a member of a gang plan (Scheduler::HoldGang): assume it in the cache,
// Reserve, Permit, undone as one; and the one reading of the API server's answer to its bind
// (Scheduler::Bind, Scheduler::BindGangMember). A rule added here holds for both.
//
//   Admission a = Admit(fw, state, cache, nominator, pod, pod_with_node);
//   if (a.status.IsWait()) ...park it...; else if (!a.status.ok()) ...nothing is held...
//   switch (BindAdmitted(fw, state, pod, node, &why)) { case BindOutcome::kBound: ... }
//   Unadmit(fw, state, cache, pod, node);   // a bind that failed, a waiting pod rejected
#pragma once

#include <string>

#include "absl/time/time.h"
#include "scheduler/framework/nominator.h"
#include "scheduler/framework/framework.h"
#include "scheduler/state/cache.h"

namespace tessel {

struct Admission {
  // Ok: the pod holds its node (assumed, reserved, permitted). Wait: as Ok, and a Permit plugin
  // asks it to wait up to `timeout`. Anything else: what refused it, and nothing is held.
  Status status;
  absl::Duration timeout = absl::ZeroDuration();
};

// `assumed` is `pod` with spec.nodeName set to the chosen node (and what PreAssume chose): the
// cache assumes it; Reserve and Permit run for `pod` on that node. On a refusal or error every step taken is undone
// (Unreserve, the cache forgets it) and its nomination, if any, is kept; once admitted (Ok or
// Wait) the pod holds its own room and its nomination is dropped.
Admission Admit(const Framework& fw, CycleState& state, Cache& cache, Nominator& nominator,
                const Pod& pod, Pod assumed);

// Undoes an admission: Unreserve, and the cache forgets the pod (by key and UID). True if the
// cache still held it (its resources are free again).
bool Unadmit(const Framework& fw, CycleState& state, Cache& cache, const Pod& pod,
             const std::string& node);

// What the API server said to a bind, as every caller must read it.
enum class BindOutcome {
  kBound,         // the binding was created
  kAlreadyBound,  // AlreadyExists: bound before (an earlier attempt whose answer was lost, or
                  // another scheduler): the pod runs, where the informer will say
  kPodGone,       // NotFound: deleted, or its name now holds another UID: its life here ends
  kMayNotWrite,   // FailedPrecondition: not (or no longer) the leader, or shutting down
  kFailed,        // anything else (a PreBind plugin, a transient API error): may be retried
};

// Runs PreBind and Bind for an admitted pod and classifies the answer the bind plugin recorded
// (scheduler/framework/binding.h). `status` receives what failed, for messages.
BindOutcome BindAdmitted(const Framework& fw, CycleState& state, const Pod& pod,
                         const std::string& node, Status* status);

// Whether the pod is placed after this outcome (it holds a node: bound now or before).
inline bool Placed(BindOutcome o) { return o == BindOutcome::kBound || o == BindOutcome::kAlreadyBound; }

// What the cache keeps after a bind: the assumption when this bind placed the pod (until the
// informer confirms it); otherwise the admission is undone (Unadmit): a pod bound before is
// accounted where the informer puts it, not where this cycle thought. True if resources that
// were held are free again.
bool SettleBind(const Framework& fw, CycleState& state, Cache& cache, const Pod& pod,
                const std::string& node, BindOutcome outcome);

}  // namespace tessel
