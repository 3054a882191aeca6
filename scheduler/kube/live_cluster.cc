// API writes of the live scheduler.
#include "scheduler/kube/live_cluster.h"

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

// The finalizer of an allocated ResourceClaim (resource.k8s.io/v1 Finalizer), kube-scheduler's.

std::string PodPath(const Pod& pod, std::string_view sub = "") {
  std::string p = StrCat("/api/v1/namespaces/", pod.meta.namespace_, "/pods/", pod.meta.name);
  if (!sub.empty()) StrAppend(&p, "/", sub);
  return p;
}

absl::Status NotLeader() {
  return absl::FailedPreconditionError("not the leader (or shutting down): this replica must not write");
}

}  // namespace

absl::StatusOr<std::string> DiscoverEvictionApi(KubeClient& client) {
  absl::StatusOr<Response> resp = client.Do({.path = "/apis/policy"});
  if (!resp.ok()) return resp.status();
  if (resp->code == 404) return std::string("policy/v1beta1");
  if (!resp->ok()) return resp->ToStatus("discovery GET /apis/policy");
  json group = json::parse(resp->body, nullptr, false);
  if (group.is_discarded() || !group.is_object()) {
    return absl::DataLossError("discovery GET /apis/policy: reply is not JSON");
  }
  bool v1 = false, v1beta1 = false;
  if (auto it = group.find("versions"); it != group.end() && it->is_array()) {
    for (const json& v : *it) {
      if (!v.is_object()) continue;
      const std::string gv = JsonString(v, "groupVersion");
      v1 |= gv == "policy/v1";
      v1beta1 |= gv == "policy/v1beta1";
    }
  }
  if (v1) return std::string("policy/v1");
  if (v1beta1) return std::string("policy/v1beta1");
  return absl::NotFoundError("the server serves no Eviction API (policy/v1 or policy/v1beta1)");
}

LiveCluster::LiveCluster(KubeClient* client, EventRecorder* events, LiveClusterOptions options)
    : client_(client), events_(events), options_(std::move(options)) {}

std::optional<absl::Duration> LiveCluster::WriteBudget() const {
  if (stopped_.load()) return std::nullopt;
  if (!options_.write_budget) return absl::InfiniteDuration();
  return options_.write_budget();
}

bool LiveCluster::MayWrite() const {
  std::optional<absl::Duration> budget = WriteBudget();
  return budget.has_value() && *budget > absl::ZeroDuration();
}

absl::Status LiveCluster::Bind(const Pod& pod, const std::string& node,
                               const StringMap& annotations) {
  if (!MayWrite()) return NotLeader();
  // metadata.uid makes the bind fail if the pod was deleted and recreated under the same name.
  // metadata.annotations are copied onto the pod by the bind itself: one write per pod.
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata",
                   {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}, {"uid", pod.meta.uid}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (pod.meta.uid.empty()) binding["metadata"].erase("uid");
  if (!annotations.empty()) {
    json& a = binding["metadata"]["annotations"];
    a = json::object();
    for (const auto& [k, v] : annotations) a[k] = v;
  }
  bool pod_gone = false;
  absl::StatusOr<Response> resp =
      client_->Do({.method = "POST",
                   .path = PodPath(pod, "binding"),
                   .body = binding.dump(),
                   .write_budget = [this] { return WriteBudget(); },
                   .precondition = [this, &pod, &node, &pod_gone]() -> absl::Status {
                     if (options_.pod_exists && !options_.pod_exists(pod)) {
                       pod_gone = true;
                       return absl::NotFoundError("the pod was deleted");
                     }
                     if (options_.node_exists && !options_.node_exists(node)) {
                       return absl::NotFoundError(StrCat("node \"", node, "\" was deleted"));
                     }
                     return absl::OkStatus();
                   }});
  if (!resp.ok()) {
    if (absl::IsFailedPrecondition(resp.status())) return resp.status();  // not sent
    if (absl::IsAborted(resp.status())) {  // not sent: the pod is gone, or its node is
      spdlog::info("bind of pod {} to {}: {}", pod.Key(), node, resp.status().message());
      if (pod_gone) {
        binds_gone_.fetch_add(1);
        return absl::NotFoundError(resp.status().message());
      }
      return absl::UnavailableError(resp.status().message());  // schedule it again
    }
    spdlog::warn("bind of pod {} to {}: {}", pod.Key(), node, resp.status().message());
    if (absl::IsDeadlineExceeded(resp.status())) return resp.status();
    return absl::UnavailableError(resp.status().message());
  }
  if (resp->ok()) {
    binds_.fetch_add(1);
    spdlog::info("bound pod {} to node {}", pod.Key(), node);
    return absl::OkStatus();
  }
  if (resp->code == 404) {
    binds_gone_.fetch_add(1);
    spdlog::info("bind of pod {} to {}: the pod is gone", pod.Key(), node);
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " is gone: ", resp->ErrorMessage()));
  }
  if (resp->code == 409) return ResolveConflict(pod, node, *resp);
  spdlog::warn("bind of pod {} to {} failed: HTTP {}: {}", pod.Key(), node, resp->code,
               resp->ErrorMessage());
  absl::Status st = resp->ToStatus(StrCat("bind pod ", pod.Key(), " to node ", node));
  // 429 and 5xx that outlasted the client's retries are transient.
  if (IsRetryableCode(resp->code)) return absl::UnavailableError(st.message());
  return st;
}

absl::Status LiveCluster::Patch(const std::string& path, const json& patch, std::string_view what) {
  return PatchObject(path, patch, kMergePatch, what).status();
}

absl::StatusOr<json> LiveCluster::PatchObject(const std::string& path, const json& patch,
                                              std::string_view content_type, std::string_view what) {
  if (!MayWrite()) return NotLeader();
  absl::StatusOr<Response> resp = client_->Do({.method = "PATCH",
                                               .path = path,
                                               .body = patch.dump(),
                                               .content_type = std::string(content_type),
                                               .write_budget = [this] { return WriteBudget(); }});
  if (!resp.ok()) return resp.status();
  if (resp->ok()) {
    spdlog::info("{}", what);
    json object = json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    return object.is_discarded() ? json::object() : object;
  }
  absl::Status st = resp->ToStatus(what);
  if (IsRetryableCode(resp->code)) return absl::UnavailableError(st.message());
  return st;
}

absl::Status LiveCluster::AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                                        std::string_view value) {
  json meta = {{"annotations", {{std::string(key), std::string(value)}}}};
  if (!claim.meta.uid.empty()) meta["uid"] = claim.meta.uid;
  return Patch(StrCat("/api/v1/namespaces/", claim.meta.namespace_, "/persistentvolumeclaims/",
                      claim.meta.name),
               json{{"metadata", meta}},
               StrCat("annotate PersistentVolumeClaim ", claim.Key(), " ", key, "=", value));
}

absl::Status LiveCluster::SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) {
  json ref = {{"kind", "PersistentVolumeClaim"},
              {"apiVersion", "v1"},
              {"namespace", claim.meta.namespace_},
              {"name", claim.meta.name}};
  if (!claim.meta.uid.empty()) ref["uid"] = claim.meta.uid;
  if (!claim.meta.resource_version.empty()) ref["resourceVersion"] = claim.meta.resource_version;
  json meta = json::object();
  if (!volume.meta.resource_version.empty()) meta["resourceVersion"] = volume.meta.resource_version;
  // As the PV controller marks a binding it made (kube-scheduler's bind uses the same helper).
  if (!volume.claim_ref.has_value()) {
    meta["annotations"] = {{"pv.kubernetes.io/bound-by-controller", "yes"}};
  }
  return Patch(StrCat("/api/v1/persistentvolumes/", volume.meta.name),
               json{{"metadata", meta}, {"spec", {{"claimRef", ref}}}},
               StrCat("bind PersistentVolume ", volume.meta.name, " to claim ", claim.Key()));
}

absl::Status LiveCluster::WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) {
  json status = json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded() || !status.is_object()) {
    return absl::InvalidArgumentError(
        StrCat("ResourceClaim ", claim.namespace_, "/", claim.name, ": status to write is not a JSON object"));
  }
  json meta = json::object();
  if (!claim.uid.empty()) meta["uid"] = claim.uid;
  if (!claim.resource_version.empty()) meta["resourceVersion"] = claim.resource_version;
  const std::string path = StrCat("/apis/resource.k8s.io/v1/namespaces/", claim.namespace_, "/resourceclaims/", claim.name);
  if (status.contains("allocation") && !status["allocation"].is_null()) {
    // An allocation carries kube-scheduler's finalizer: the resourceclaim controller clears the
    // allocation once no pod holds the claim (and only then lets the finalizer go), so the
    // devices come free; a claim without it stays allocated after its pods are gone. A
    // strategic merge patch adds it to the finalizers there are; the claim's new resourceVersion
    // is the status write's precondition.
    json with_finalizer = meta;
    with_finalizer["finalizers"] = json::array({std::string(kResourceClaimFinalizer)});
    absl::StatusOr<json> patched = PatchObject(path, json{{"metadata", with_finalizer}}, kStrategicMergePatch,
                                               StrCat("protect ResourceClaim ", claim.namespace_, "/", claim.name,
                                                      " with finalizer ", kResourceClaimFinalizer));
    if (!patched.ok()) return patched.status();
    if (const json* answered = patched->contains("metadata") ? &(*patched)["metadata"] : nullptr;
        answered != nullptr && answered->contains("resourceVersion") && (*answered)["resourceVersion"].is_string()) {
      meta["resourceVersion"] = (*answered)["resourceVersion"];
    }
  }
  // A merge patch replaces status.allocation and status.reservedFor whole; the resourceVersion
  // makes it fail (Conflict) if the claim changed since the scheduler read it.
  return Patch(StrCat(path, "/status"),
               json{{"metadata", meta}, {"status", status}},
               StrCat("allocate ResourceClaim ", claim.namespace_, "/", claim.name));
}

absl::StatusOr<ObjectMeta> LiveCluster::CreateResourceClaim(const std::string& claim_json) {
  if (!MayWrite()) return NotLeader();
  json claim = json::parse(claim_json, nullptr, /*allow_exceptions=*/false);
  if (claim.is_discarded() || !claim.is_object() || !claim.contains("metadata")) {
    return absl::InvalidArgumentError("ResourceClaim to create is not a JSON object with metadata");
  }
  const std::string namespace_ = JsonString(claim["metadata"], "namespace");
  const std::string what = StrCat("create ResourceClaim ", namespace_, "/",
                                  JsonString(claim["metadata"], "generateName"), "...");
  // Not retried: a create whose answer was lost would make a second claim.
  absl::StatusOr<Response> resp =
      client_->Do({.method = "POST",
                   .path = StrCat("/apis/resource.k8s.io/v1/namespaces/", namespace_, "/resourceclaims"),
                   .body = claim_json,
                   .retry = false,
                   .write_budget = [this] { return WriteBudget(); }});
  if (!resp.ok()) return resp.status();
  if (!resp->ok()) {
    absl::Status st = resp->ToStatus(what);
    if (IsRetryableCode(resp->code)) return absl::UnavailableError(st.message());
    return st;
  }
  json created = json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
  if (created.is_discarded() || !created.is_object() || !created.contains("metadata")) {
    return absl::InternalError(StrCat(what, ": the answer is not a ResourceClaim"));
  }
  ObjectMeta meta;
  meta.namespace_ = namespace_;
  meta.name = JsonString(created["metadata"], "name");
  meta.uid = JsonString(created["metadata"], "uid");
  meta.resource_version = JsonString(created["metadata"], "resourceVersion");
  spdlog::info("created ResourceClaim {}/{}", meta.namespace_, meta.name);
  return meta;
}

absl::Status LiveCluster::DeleteResourceClaim(const ObjectMeta& claim) {
  const std::string path =
      StrCat("/apis/resource.k8s.io/v1/namespaces/", claim.namespace_, "/resourceclaims/", claim.name);
  const std::string name = StrCat(claim.namespace_, "/", claim.name);
  // The finalizer first (the resourceclaim controller would keep a claim with it until no pod
  // holds it), then the claim, each only if it is still the one created (uid).
  json meta = {{"$deleteFromPrimitiveList/finalizers", json::array({std::string(kResourceClaimFinalizer)})}};
  if (!claim.uid.empty()) meta["uid"] = claim.uid;
  absl::StatusOr<json> patched = PatchObject(path, json{{"metadata", meta}}, kStrategicMergePatch,
                                             StrCat("release finalizer of ResourceClaim ", name));
  if (!patched.ok() && !absl::IsNotFound(patched.status())) return patched.status();
  if (!MayWrite()) return NotLeader();
  json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!claim.uid.empty()) options["preconditions"] = {{"uid", claim.uid}};
  absl::StatusOr<Response> resp = client_->Do({.method = "DELETE",
                                               .path = path,
                                               .body = options.dump(),
                                               .write_budget = [this] { return WriteBudget(); }});
  if (!resp.ok()) return resp.status();
  if (resp->ok() || resp->code == 404) {
    spdlog::info("deleted ResourceClaim {}", name);
    return absl::OkStatus();
  }
  return resp->ToStatus(StrCat("delete ResourceClaim ", name));
}

absl::Status LiveCluster::WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string& status_json) {
  json status = json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded() || !status.is_object()) {
    return absl::InvalidArgumentError(StrCat("pod ", pod.Key(), ": extendedResourceClaimStatus is not a JSON object"));
  }
  json patch = {{"status", {{"extendedResourceClaimStatus", status}}}};
  if (!pod.meta.uid.empty()) patch["metadata"] = {{"uid", pod.meta.uid}};
  return Patch(PodPath(pod, "status"), patch, StrCat("set extendedResourceClaimStatus of pod ", pod.Key()));
}

absl::Status LiveCluster::ResolveConflict(const Pod& pod, const std::string& node,
                                          const Response& answer) {
  bind_conflicts_.fetch_add(1);
  // Already bound (ours: a retried request whose first answer was lost; or someone else's), a
  // pod being deleted, or a UID precondition that failed: the pod as it is now tells which.
  absl::StatusOr<Response> got = client_->Do({.path = PodPath(pod)});
  if (!got.ok()) return absl::UnavailableError(StrCat("bind pod ", pod.Key(), ": HTTP 409 (",
                                                      answer.ErrorMessage(), "), then ",
                                                      got.status().message()));
  if (got->code == 404) {
    binds_gone_.fetch_add(1);
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " is gone"));
  }
  if (!got->ok()) return absl::UnavailableError(got->ToStatus(StrCat("get pod ", pod.Key())).message());
  json current = json::parse(got->body, nullptr, false);
  const json empty = json::object();
  const json& meta = current.is_object() && current.contains("metadata") ? current["metadata"] : empty;
  const json& spec = current.is_object() && current.contains("spec") ? current["spec"] : empty;
  const std::string uid = JsonString(meta, "uid");
  if (!pod.meta.uid.empty() && !uid.empty() && uid != pod.meta.uid) {
    binds_gone_.fetch_add(1);
    spdlog::info("bind of pod {}: the name belongs to a new pod (uid {}, was {})", pod.Key(), uid,
                 pod.meta.uid);
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " (uid ", pod.meta.uid,
                                      ") is gone; a new pod holds its name"));
  }
  const std::string bound_to = JsonString(spec, "nodeName");
  if (bound_to == node) {
    binds_.fetch_add(1);
    spdlog::info("bound pod {} to node {} (an earlier attempt landed)", pod.Key(), node);
    return absl::OkStatus();
  }
  if (!bound_to.empty()) {
    spdlog::warn("bind of pod {} to {}: already bound to {}", pod.Key(), node, bound_to);
    return absl::AlreadyExistsError(StrCat("pod ", pod.Key(), " is already bound to node ", bound_to));
  }
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) {
    binds_gone_.fetch_add(1);
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " is being deleted"));
  }
  return absl::UnavailableError(StrCat("bind pod ", pod.Key(), " to node ", node, ": HTTP 409: ",
                                       answer.ErrorMessage()));
}

absl::Status LiveCluster::Evict(const Pod& pod, std::string_view reason) {
  if (!MayWrite()) return NotLeader();
  json eviction = {{"apiVersion", options_.eviction_api},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}}}};
  if (!pod.meta.uid.empty()) {
    eviction["deleteOptions"] = {{"preconditions", {{"uid", pod.meta.uid}}}};
  }
  // Not retried: a 429 here is a PodDisruptionBudget's "not now", which preemption answers by
  // trying another candidate rather than waiting on the scheduling thread.
  absl::StatusOr<Response> resp =
      client_->Do({.method = "POST",
                   .path = PodPath(pod, "eviction"),
                   .body = eviction.dump(),
                   .retry = false,
                   .write_budget = [this] { return WriteBudget(); }});
  if (!resp.ok()) return resp.status();
  if (resp->ok()) {
    evictions_.fetch_add(1);
    spdlog::info("evicted pod {}: {}", pod.Key(), reason);
    return absl::OkStatus();
  }
  if (resp->code == 404 || resp->code == 409) {
    // 404: gone already. 409: the UID precondition failed, so the pod evicted is gone and
    // another holds its name.
    spdlog::info("evict pod {}: already gone (HTTP {})", pod.Key(), resp->code);
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " is gone: ", resp->ErrorMessage()));
  }
  if (resp->code == 429) {
    spdlog::info("evict pod {}: refused for now: {}", pod.Key(), resp->ErrorMessage());
    return absl::ResourceExhaustedError(
        StrCat("evict pod ", pod.Key(), ": HTTP 429: ", resp->ErrorMessage()));
  }
  return resp->ToStatus(StrCat("evict pod ", pod.Key()));
}

void LiveCluster::MarkDisruptionTarget(const Pod& pod, std::string_view reason,
                                       std::string_view message) {
  if (!MayWrite()) return;
  json patch = {{"status",
                 {{"conditions", json::array({{{"type", "DisruptionTarget"},
                                               {"status", "True"},
                                               {"reason", reason},
                                               {"message", StrCat("tessel: ", message)}}})}}}};
  if (!pod.meta.uid.empty()) patch["metadata"] = {{"uid", pod.meta.uid}};
  absl::StatusOr<Response> resp = client_->Do({.method = "PATCH",
                                               .path = PodPath(pod, "status"),
                                               .body = patch.dump(),
                                               .content_type = std::string(kStrategicMergePatch),
                                               .write_budget = [this] { return WriteBudget(); }});
  if (!resp.ok()) {
    spdlog::warn("DisruptionTarget condition of pod {}: {}", pod.Key(), resp.status().message());
  } else if (!resp->ok() && resp->code != 404) {
    spdlog::warn("DisruptionTarget condition of pod {}: HTTP {}: {}", pod.Key(), resp->code,
                 resp->ErrorMessage());
  }
}

void LiveCluster::RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                              std::string_view message) {
  events_->Record(pod, type, reason, message);
}

void LiveCluster::RecordObjectEvent(const ObjectReference& object, std::string_view type,
                                    std::string_view reason, std::string_view message) {
  events_->Record(object, type, reason, message);
}

}  // namespace tessel::kube
