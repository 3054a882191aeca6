// Writes what the scheduling core reports about gangs to the PodGroup's status subresource:
//   - scheduler-plugins' (scheduling.x-k8s.io/v1alpha1): phase, scheduled, running, succeeded,
//     failed, and a "Scheduled" condition whose message says what is short ("PodGroup a/train
//     needs 4 × 4 GPUs; 2 nodes can host 3 members");
//   - the upstream one (scheduling.k8s.io v1beta1 or v1alpha3), as kube-scheduler writes it:
//     the PodGroupInitiallyScheduled condition (False with reason Unschedulable and that message
//     while the gang waits, True with reason Scheduled once placed, and never False again after
//     that), plus tessel.io/Unsupported listing what Tessel does not honour of the group. The
//     current conditions are read first (one GET), the patch is a strategic merge keyed by type
//     so that others' conditions (DisruptionTarget) stay. The core calls GangStatusChanged on its own thread (also when a
// member starts, finishes or goes away); a worker thread counts the group's pods by phase with
// one LIST (finished pods are not in the scheduler's informer), derives the phase and sends the
// merge PATCH, the latest update per PodGroup only, so a slow API server never blocks scheduling.
//
// Writes are fenced like every other write of the scheduler (`write_budget`: none while this
// replica is not the leader or shuts down; a write's timeout is cut to what is left). The pods
// are listed in pages; a group that is deleted (GangForgotten, or a 404) is forgotten.
//
//   PodGroupStatusWriter writer(client.get(), {.write_budget = budget});
//   SchedulerParams{..., .gang_status = &writer};
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "scheduler/gang/gang_status.h"
#include "scheduler/kube/client.h"

namespace tessel::kube {

// The merge patch for one update (exposed for tests).
nlohmann::json PodGroupStatusPatch(const gang::GangStatusUpdate& update);
// The strategic merge patch of an upstream PodGroup for one update, given the object as the
// server has it (its status.conditions and metadata.generation); nullopt when nothing changes.
std::optional<nlohmann::json> UpstreamPodGroupStatusPatch(const gang::GangStatusUpdate& update,
                                                          const nlohmann::json& current);

struct PodGroupStatusOptions {
  std::function<std::optional<absl::Duration>()> write_budget;  // see Request::write_budget
  // The scheduling.k8s.io PodGroup version the scheduler reads (GangApis::pod_group); its
  // groups' status is written when it is v1beta1 or v1alpha3, which have the conditions.
  std::string scheduling_pod_group_api;
  int64_t page_size = 500;  // pods per LIST page
};

class PodGroupStatusWriter final : public gang::GangStatusSink {
 public:
  explicit PodGroupStatusWriter(KubeClient* client, PodGroupStatusOptions options = {});
  ~PodGroupStatusWriter() override;

  void GangStatusChanged(const gang::GangId& id, const gang::GangStatusUpdate& update) override;
  void GangForgotten(const gang::GangId& id) override;
  // Ends the worker; updates not sent yet are dropped (at shutdown nothing more is written).
  void Stop();

  // Groups whose last written status is remembered (for tests).
  size_t remembered() const;

 private:
  void Run();

  KubeClient* client_;
  const PodGroupStatusOptions options_;
  mutable absl::Mutex mu_;
  // Counts the group's pods by phase into `update` and derives its phase.
  absl::Status CountMembers(const gang::GangId& id, gang::GangStatusUpdate& update);
  // The status path of the gang's object; "" when Tessel writes no status for it.
  std::string StatusPath(const gang::GangId& id) const;
  // One update of an upstream PodGroup: read it, patch what changed.
  void WriteUpstream(const std::string& path, const gang::GangStatusUpdate& update);

  struct Pending {
    gang::GangId id;
    gang::GangStatusUpdate update;
  };
  std::map<std::string, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by status path
  std::map<std::string, std::string> sent_ ABSL_GUARDED_BY(mu_);  // path -> last body sent
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tessel::kube
