// The PodGroup phase as its members progress, and the names of phases and reasons (see
// gang_status.h).
#include "scheduler/gang/gang_status.h"

namespace tessel::gang {

std::string_view PhaseName(GangPhase phase) {
  switch (phase) {
    case GangPhase::kPending: return "Pending";
    case GangPhase::kScheduled: return "Scheduled";
    case GangPhase::kRunning: return "Running";
    case GangPhase::kFinished: return "Finished";
    case GangPhase::kFailed: return "Failed";
  }
  return "Pending";
}

std::string_view ReasonName(GangReason reason) {
  switch (reason) {
    case GangReason::kWaitingForMembers: return "WaitingForMembers";
    case GangReason::kUnschedulable: return "Unschedulable";
    case GangReason::kScheduleTimeout: return "ScheduleTimeout";
    case GangReason::kScheduled: return "Scheduled";
    case GangReason::kBindFailed: return "BindFailed";
    case GangReason::kWaitingForProvisioning: return "WaitingForProvisioning";
    case GangReason::kProvisioningFailed: return "ProvisioningFailed";
    case GangReason::kInvalidSpec: return "InvalidSpec";
    case GangReason::kRolledBack: return "RolledBack";
  }
  return "Unschedulable";
}

void DerivePhase(GangStatusUpdate& update, int32_t min_member) {
  if (min_member > 0 && update.succeeded >= min_member) {
    update.phase = GangPhase::kFinished;
  } else if (update.failed > 0) {
    update.phase = GangPhase::kFailed;
  } else if (min_member > 0 && update.running + update.succeeded >= min_member) {
    update.phase = GangPhase::kRunning;
  }
}

}  // namespace tessel::gang
