// The PodGroup phase as its members progress (see gang_status.h).
#include "scheduler/gang/gang_status.h"

namespace tessel::gang {

void DerivePhase(GangStatusUpdate& update, int32_t min_member) {
  if (min_member > 0 && update.succeeded >= min_member) {
    update.phase = "Finished";
  } else if (update.failed > 0) {
    update.phase = "Failed";
  } else if (min_member > 0 && update.running + update.succeeded >= min_member) {
    update.phase = "Running";
  }
}

}  // namespace tessel::gang
