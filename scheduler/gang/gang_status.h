// What the scheduling core reports about a gang, and the small interface it reports through.
// The core does no I/O: the live scheduler PATCHes the PodGroup's status subresource from
// another thread (scheduler/kube/podgroup_status.h), the bench records the outcome.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/gang/gang_api.h"

namespace tessel::gang {

// scheduler-plugins phases: Pending (not placed yet), Scheduled (minMember bound), Running
// (minMember running or succeeded), Finished (minMember succeeded), Failed (a member failed, or
// scheduleTimeoutSeconds passed without a placement; then the pods stay pending and are retried).
enum class GangPhase { kPending, kScheduled, kRunning, kFinished, kFailed };
// Why the gang's Scheduled condition is what it is.
enum class GangReason {
  kWaitingForMembers,  // fewer members exist than minMember
  kUnschedulable,      // the plan fell short
  kScheduleTimeout,    // ... for longer than scheduleTimeoutSeconds
  kScheduled,          // minMember placed
  kBindFailed,         // a member's bind failed: the gang was rolled back
  kWaitingForProvisioning,  // short of capacity: a ProvisioningRequest is out (docs/provisioning.md)
  kProvisioningFailed,      // ... and it failed: the gang waits for the next attempt
  kInvalidSpec,             // its object does not decode: the members wait until it does
  kRolledBack,  // it held fewer than minMember members placed, after a restart or for too long:
                // they were evicted (GangTracker::Stranded)
};
// The names the PodGroup status carries ("Pending", "WaitingForMembers", ...).
std::string_view PhaseName(GangPhase phase);
std::string_view ReasonName(GangReason reason);

struct GangStatusUpdate {
  GangPhase phase = GangPhase::kPending;
  int32_t scheduled = 0;  // members bound or being bound
  int32_t running = 0;    // members whose pod phase is Running
  int32_t succeeded = 0;  // members that finished: Succeeded, Failed
  int32_t failed = 0;
  int32_t members = 0;    // members known (pending and placed)
  int32_t min_member = 0;
  // The condition of type "Scheduled": its status (True when placed), reason and a message
  // saying what is short.
  bool condition = false;
  GangReason reason = GangReason::kUnschedulable;
  std::string message;
  std::string domain;  // compact placement: the chosen domain
  std::vector<std::string> unsupported;  // GangSpec::unsupported, on the cycle's reports
  absl::Time time;
};

// Moves `update.phase` along from the members' counts: Finished once minMember succeeded, Failed
// once a member failed, Running once minMember run or succeeded; otherwise the phase the core
// decided stays. Shared by the core and the PodGroup status writer (which counts the pods
// itself: finished pods leave the scheduler's informer).
void DerivePhase(GangStatusUpdate& update, int32_t min_member);

class GangStatusSink {
 public:
  virtual ~GangStatusSink() = default;
  // Called from the scheduling thread (and binder threads); must not block.
  virtual void GangStatusChanged(const GangId& id, const GangStatusUpdate& update) = 0;
  // The gang's object was deleted: nothing more will be reported about it.
  virtual void GangForgotten(const GangId& /*id*/) {}
};

}  // namespace tessel::gang
