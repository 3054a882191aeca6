// The scripted, recording ClusterApi (see fake_cluster_api.h).
#include "scheduler/testing/fake_cluster_api.h"

#include "nlohmann/json.hpp"

#include "scheduler/util/strings.h"

namespace tessel::testing {

absl::Status FakeClusterApi::BindAnswer(const std::string& key) {
  if (auto it = bind_answers.find(key); it != bind_answers.end()) return it->second;
  if (auto it = bind_failures.find(key); it != bind_failures.end() && it->second != 0) {
    if (it->second > 0) --it->second;
    return absl::UnavailableError("apiserver unavailable");
  }
  if (!next_bind.ok()) return std::exchange(next_bind, absl::OkStatus());
  return bind_result;
}

absl::Status FakeClusterApi::Bind(const Pod& pod, const std::string& node, const StringMap& annotations) {
  const std::string key = pod.Key();
  binds.emplace_back(key, node);
  bind_annotations.emplace_back(key, annotations);
  ++bind_attempts[key];
  absl::Status answer = BindAnswer(key);
  if (!answer.ok()) return answer;
  bound[key] = node;
  if (on_bind) on_bind(pod, node);
  return absl::OkStatus();
}

absl::Status FakeClusterApi::Evict(const Pod& pod, std::string_view reason) {
  const std::string key = pod.Key();
  ++eviction_attempts[key];
  if (refuse_evictions > 0) {
    --refuse_evictions;
    return absl::ResourceExhaustedError("Cannot evict pod as it would violate the pod's disruption budget.");
  }
  absl::Status answer = on_evict ? on_evict(pod, reason) : absl::OkStatus();
  if (!answer.ok()) return answer;
  evictions.push_back(key);
  bound.erase(key);
  return absl::OkStatus();
}

void FakeClusterApi::MarkDisruptionTarget(const Pod& pod, std::string_view reason, std::string_view message) {
  disruption_targets.push_back(StrCat(pod.Key(), " ", reason, ": ", message));
}

void FakeClusterApi::RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                                 std::string_view message) {
  events.push_back(StrCat(pod.Key(), " ", type, " ", reason, ": ", message));
}

void FakeClusterApi::RecordObjectEvent(const ObjectReference& o, std::string_view type, std::string_view reason,
                                       std::string_view message) {
  object_events.push_back(StrCat(type, " ", reason, " ", o.api_version, " ", o.kind, " ", o.namespace_, "/",
                                 o.name, " ", o.uid, ": ", message));
}

absl::Status FakeClusterApi::AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                                           std::string_view value) {
  claim_annotations.emplace_back(claim.Key(), StrCat(key, "=", value));
  if (on_annotate) on_annotate(claim, value);
  return absl::OkStatus();
}

absl::Status FakeClusterApi::SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) {
  claim_refs.emplace_back(volume.name(), claim.Key());
  if (on_claim_ref) on_claim_ref(volume, claim);
  return absl::OkStatus();
}

absl::Status FakeClusterApi::WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) {
  claim_statuses.emplace_back(StrCat(claim.namespace_, "/", claim.name), status_json);
  if (!claim_status_answer.ok()) return claim_status_answer;
  if (on_claim_status) return on_claim_status(claim, status_json);
  return absl::OkStatus();
}

absl::StatusOr<ObjectMeta> FakeClusterApi::CreateResourceClaim(const std::string& claim_json) {
  claims_created.push_back(claim_json);
  if (!claim_create_answer.ok()) return claim_create_answer;
  const nlohmann::json claim = nlohmann::json::parse(claim_json);
  const nlohmann::json& metadata = claim.at("metadata");
  ObjectMeta meta;
  meta.namespace_ = metadata.at("namespace").get<std::string>();
  meta.name = metadata.at("generateName").get<std::string>();
  meta.name.append(std::to_string(claims_created.size()));
  meta.uid = "uid-";
  meta.uid.append(meta.name);
  meta.resource_version = std::to_string(claims_created.size());
  if (on_claim_create) on_claim_create(meta, claim_json);
  return meta;
}

absl::Status FakeClusterApi::DeleteResourceClaim(const ObjectMeta& claim) {
  claims_deleted.push_back(StrCat(claim.namespace_, "/", claim.name));
  if (on_claim_delete) on_claim_delete(claim);
  return absl::OkStatus();
}

absl::Status FakeClusterApi::WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json) {
  pod_claim_statuses.emplace_back(pod.Key(), status_json);
  if (on_pod_claim_status) on_pod_claim_status(pod, status_json);
  return absl::OkStatus();
}

}  // namespace tessel::testing
