// The live ClusterApi: the scheduler's binds (one write each, annotations included) and
// evictions as requests to the API server, and its events through an EventRecorder.
//
//   LiveCluster cluster(binding_client, &events, {.eviction_api = *DiscoverEvictionApi(*client),
//                                                 .write_budget = [&] { return elector.WriteBudget(); }});
//
// Bind answers are typed (the contract of ClusterApi::Bind):
//   201                                   OK
//   404, or 409 on a pod that is gone, being deleted, or has another UID now   NotFound
//   409 on a pod bound to another node    AlreadyExists
//   409 on a pod bound to the chosen node OK (an earlier attempt whose answer was lost)
//   not the leader, or shutting down      FailedPrecondition (nothing sent)
//   the node was deleted meanwhile        Unavailable (nothing sent; the pod is retried)
//   429/5xx after retries, no answer      Unavailable / DeadlineExceeded (transient)
//   other 4xx                             their own code (InvalidArgument, PermissionDenied, ...)
// Eviction answers (ClusterApi::Evict), sent once (no retry):
//   201                                   OK
//   404, or 409 (the UID precondition: another pod holds the name)   NotFound (already gone)
//   429 (a PodDisruptionBudget forbids it now)                       ResourceExhausted
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/event_recorder.h"

namespace tessel::kube {

// "policy/v1" when the server serves it, else "policy/v1beta1" (Kubernetes before 1.22).
absl::StatusOr<std::string> DiscoverEvictionApi(KubeClient& client);

struct LiveClusterOptions {
  std::string eviction_api = "policy/v1";
  // How long this replica may still write; nullopt: it may not (see Request::write_budget).
  // Unset: always (no leader election).
  std::function<std::optional<absl::Duration>()> write_budget;
  // Whether a node still exists, asked right before a bind is sent (after the rate limiter's
  // wait): a bind to a node deleted meanwhile is not sent. Unset: not checked.
  std::function<bool(std::string_view node)> node_exists;
  // Whether the pod (this UID) still exists as far as the informers know, asked at the same
  // moment: a bind for a pod deleted meanwhile is not sent and ends the pod. Unset: not checked.
  std::function<bool(const Pod& pod)> pod_exists;
};

class LiveCluster final : public ClusterApi {
 public:
  LiveCluster(KubeClient* client, EventRecorder* events, LiveClusterOptions options);

  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap& annotations) override;
  absl::Status Evict(const Pod& pod, std::string_view reason) override;
  // A strategic merge PATCH of the pod's status: the DisruptionTarget condition that the
  // Eviction API set (reason EvictionByEvictionAPI) now names the scheduler's reason.
  void MarkDisruptionTarget(const Pod& pod, std::string_view reason,
                            std::string_view message) override;
  void RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                   std::string_view message) override;
  void RecordObjectEvent(const ObjectReference& object, std::string_view type,
                         std::string_view reason, std::string_view message) override;
  // Merge patches, with the object's UID (and for the PV its resourceVersion) as preconditions:
  // a claim re-created under the same name, or a PV changed meanwhile, answers 409.
  absl::Status AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                             std::string_view value) override;
  absl::Status SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) override;
  absl::Status WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) override;
  // POST (not retried: a lost answer would leave a second claim); DELETE with a uid precondition
  // after a strategic merge patch takes the finalizer away; a merge patch of pods/status.
  absl::StatusOr<ObjectMeta> CreateResourceClaim(const std::string& claim_json) override;
  absl::Status DeleteResourceClaim(const ObjectMeta& claim) override;
  absl::Status WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json) override;

  // No bind or eviction is started after this (SIGTERM): they fail with FailedPrecondition.
  void StopWriting() { stopped_.store(true); }
  bool MayWrite() const;
  std::optional<absl::Duration> WriteBudget() const;

  int64_t binds() const { return binds_.load(); }
  int64_t bind_conflicts() const { return bind_conflicts_.load(); }
  int64_t binds_of_gone_pods() const { return binds_gone_.load(); }
  int64_t evictions() const { return evictions_.load(); }
  const LiveClusterOptions& options() const { return options_; }

 private:
  // One merge patch only the leader may send; `what` names it in errors.
  absl::Status Patch(const std::string& path, const nlohmann::json& patch, std::string_view what);
  // A patch of `content_type`; the object as the server answered it.
  absl::StatusOr<nlohmann::json> PatchObject(const std::string& path, const nlohmann::json& patch,
                                             std::string_view content_type, std::string_view what);
  // A 409: decides from the pod as it is now what the bind's outcome is.
  absl::Status ResolveConflict(const Pod& pod, const std::string& node, const Response& answer);

  KubeClient* client_;
  EventRecorder* events_;
  const LiveClusterOptions options_;
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> binds_{0}, bind_conflicts_{0}, binds_gone_{0}, evictions_{0};
};

}  // namespace tessel::kube
