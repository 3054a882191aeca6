// A ClusterApi for tests and benches that records every call and answers as the test scripts it:
// binds and evictions (with their answers), events, disruption targets and volume writes. Hooks
// let a test play the informer (confirm a bind), the kubelet (terminate an evicted pod) or the
// volume controllers.
//
//   FakeClusterApi api;
//   api.bind_failures["default/a"] = 2;                // two Unavailable answers, then OK
//   api.on_bind = [&](const Pod& pod, const std::string& node) { ... };
//   ... run the scheduler ...
//   CHECK(api.binds == ...);  CHECK(api.bound.at("default/a") == "n1");
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/framework/interface.h"

namespace tessel::testing {

class FakeClusterApi : public ClusterApi {
 public:
  // ---- How it answers.
  // A bind's answer, the first that applies: `bind_answers` of the pod (every bind of it), then
  // `bind_failures` of the pod (that many Unavailable answers; -1: always), then `next_bind`
  // (used once, then OK again), then `bind_result`.
  std::map<std::string, absl::Status> bind_answers;
  std::map<std::string, int> bind_failures;
  absl::Status next_bind = absl::OkStatus();
  absl::Status bind_result = absl::OkStatus();
  // Runs after a bind answered OK (e.g. confirms it as an informer would).
  std::function<void(const Pod& pod, const std::string& node)> on_bind;
  // The next `refuse_evictions` evictions are refused as a PodDisruptionBudget refuses
  // (ResourceExhausted). Else `on_evict` answers when set (e.g. marks the pod terminating), OK
  // when not.
  int refuse_evictions = 0;
  std::function<absl::Status(const Pod& pod, std::string_view reason)> on_evict;
  // Volume writes answer OK; the hooks may play the provisioner.
  std::function<void(const PersistentVolumeClaim&, std::string_view node)> on_annotate;
  std::function<void(const PersistentVolume&, const PersistentVolumeClaim&)> on_claim_ref;
  // A ResourceClaim status write's answer: `claim_status_answer` (OK by default); then, when OK,
  // `on_claim_status` answers when set (e.g. applies the write to the stored claim and delivers
  // it as an informer would, or refuses a stale resourceVersion as Conflict).
  absl::Status claim_status_answer = absl::OkStatus();
  std::function<absl::Status(const ObjectMeta& claim, const std::string& status_json)> on_claim_status;
  // A created ResourceClaim gets the name <generateName><n> (n counts from 1) and uid
  // "uid-<name>", unless `claim_create_answer` is an error; deletes and pod status writes
  // answer OK.
  absl::Status claim_create_answer = absl::OkStatus();
  // Run after a create, a delete and a pod status write that answered OK (e.g. to keep the
  // claims as the API server stores them): the created claim's JSON and the name and uid it got.
  std::function<void(const ObjectMeta& created, const std::string& claim_json)> on_claim_create;
  std::function<void(const ObjectMeta& claim)> on_claim_delete;
  std::function<void(const Pod& pod, const std::string& status_json)> on_pod_claim_status;

  // ---- What it was asked, in order.
  std::vector<std::pair<std::string, std::string>> binds;       // every Bind: (pod key, node)
  std::vector<std::pair<std::string, StringMap>> bind_annotations;  // every Bind: (pod key, annotations)
  std::map<std::string, int> bind_attempts;                     // pod key -> Binds
  std::map<std::string, std::string> bound;  // bound (OK) and not evicted since: pod key -> node
  std::vector<std::string> evictions;        // evicted (OK), in order
  std::map<std::string, int> eviction_attempts;  // pod key -> Evicts
  std::vector<std::string> events;           // "ns/name Type Reason: message"
  std::vector<std::string> object_events;    // "Type Reason apiVersion Kind ns/name uid: message"
  std::vector<std::string> disruption_targets;  // "ns/name reason: message"
  std::vector<std::pair<std::string, std::string>> claim_annotations;  // (claim, "key=value")
  std::vector<std::pair<std::string, std::string>> claim_refs;         // (PV, claim)
  std::vector<std::pair<std::string, std::string>> claim_statuses;  // (ns/claim, status JSON)
  std::vector<std::string> claims_created;                          // the claim JSON, each create
  std::vector<std::string> claims_deleted;                          // ns/claim
  std::vector<std::pair<std::string, std::string>> pod_claim_statuses;  // (pod, extendedResourceClaimStatus)

  // ClusterApi
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap& annotations) override;
  absl::Status Evict(const Pod& pod, std::string_view reason) override;
  void MarkDisruptionTarget(const Pod& pod, std::string_view reason, std::string_view message) override;
  void RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                   std::string_view message) override;
  void RecordObjectEvent(const ObjectReference& object, std::string_view type, std::string_view reason,
                         std::string_view message) override;
  absl::Status AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                             std::string_view value) override;
  absl::Status SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) override;
  absl::Status WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) override;
  absl::StatusOr<ObjectMeta> CreateResourceClaim(const std::string& claim_json) override;
  absl::Status DeleteResourceClaim(const ObjectMeta& claim) override;
  absl::Status WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json) override;

 private:
  absl::Status BindAnswer(const std::string& key);
};

}  // namespace tessel::testing
