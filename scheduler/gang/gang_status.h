// What the scheduling core reports about a gang, and the small interface it reports through.
// The core does no I/O: the live scheduler PATCHes the PodGroup's status subresource from
// another thread (scheduler/kube/podgroup_status.h), the bench records the outcome.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "scheduler/gang/gang_api.h"

namespace tessel::gang {

struct GangStatusUpdate {
  // scheduler-plugins phases: Pending (not placed yet), Scheduled (minMember bound), Failed
  // (scheduleTimeoutSeconds passed without a placement; the pods stay pending and are retried).
  std::string phase;
  int32_t scheduled = 0;  // members bound or being bound
  int32_t members = 0;    // members known (pending and placed)
  int32_t min_member = 0;
  // The condition: type "Scheduled", status "True"/"False", reason "Scheduled",
  // "Unschedulable", "ScheduleTimeout" or "BindFailed", and a message saying what is short.
  std::string condition_status;
  std::string reason;
  std::string message;
  std::string domain;  // compact placement: the chosen domain
  absl::Time time;
};

class GangStatusSink {
 public:
  virtual ~GangStatusSink() = default;
  // Called from the scheduling thread (and binder threads); must not block.
  virtual void GangStatusChanged(const GangId& id, const GangStatusUpdate& update) = 0;
};

}  // namespace tessel::gang
