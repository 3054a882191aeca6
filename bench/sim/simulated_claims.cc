// The simulated cluster's Dynamic Resource Allocation (see simulated_cluster.h): DRA objects from
// a snapshot into the cluster-object store, DynamicResources' PreBind writes (claim statuses, and
// the claims it makes for extended resources), and what the controllers do when a pod ends: the
// resourceclaim controller releases the claims that reserve it, the garbage collector deletes the
// claims it owns.
#include <algorithm>
#include <array>
#include <charconv>

#include "bench/sim/simulated_cluster.h"
#include "nlohmann/json.hpp"
#include "scheduler/dra/decode.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using nlohmann::json;

constexpr std::string_view kDraGroup = "resource.k8s.io/";
constexpr std::string_view kDraApiVersion = "resource.k8s.io/v1";

// The DRA kinds replay reads; `check` decodes the object for its warning (the plugin decodes the
// stored JSON again when a pod needs it), `held` says what waits while it does not decode.
struct DraKind {
  std::string_view kind;
  RawKind raw;
  absl::Status (*check)(const json&);
  std::string_view held;
};

constexpr std::array kDraKinds{
    DraKind{"ResourceSlice", RawKind::kResourceSlice,
            [](const json& o) { return dra::DecodeResourceSlice(o).status(); }, "its pool serves nothing (every pod with claims waits if its pool cannot be read)"},
    DraKind{"DeviceClass", RawKind::kDeviceClass, [](const json& o) { return dra::DecodeDeviceClass(o).status(); },
            "pods whose claims ask for it wait"},
    DraKind{"ResourceClaim", RawKind::kResourceClaim,
            [](const json& o) { return dra::DecodeResourceClaim(o).status(); },
            "pods that use it wait (every pod with claims, if it is allocated)"},
};

std::string_view StringAt(const json& object, std::string_view key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

const json& MetadataOf(const json& object) {
  static const json kEmpty = json::object();
  auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

// Whether a reference names the pod (uid "" matches any).
bool NamesPod(const json& ref, std::string_view name, std::string_view uid) {
  if (StringAt(ref, "name") != name) return false;
  const std::string_view ref_uid = StringAt(ref, "uid");
  return uid.empty() || ref_uid.empty() || ref_uid == uid;
}

// A status.reservedFor entry for the pod.
bool ReservesPod(const json& ref, std::string_view name, std::string_view uid) {
  return ref.is_object() && StringAt(ref, "resource") == "pods" && StringAt(ref, "apiGroup").empty() &&
         NamesPod(ref, name, uid);
}

// Whether the claim belongs to the pod (a claim made from a template, or for extended resources).
bool OwnedByPod(const json& claim, std::string_view name, std::string_view uid) {
  const auto owners = MetadataOf(claim).find("ownerReferences");
  if (owners == MetadataOf(claim).end() || !owners->is_array()) return false;
  return std::any_of(owners->begin(), owners->end(), [&](const json& o) {
    return o.is_object() && StringAt(o, "kind") == "Pod" && NamesPod(o, name, uid);
  });
}

}  // namespace

std::optional<std::vector<std::string>> SimulatedCluster::LoadDraObject(const json& object) {
  const std::string_view api_version = StringAt(object, "apiVersion");
  const std::string_view kind = StringAt(object, "kind");
  const DraKind* k = nullptr;
  for (const DraKind& d : kDraKinds) k = d.kind == kind ? &d : k;
  if (k == nullptr || !api_version.starts_with(kDraGroup)) return std::nullopt;
  if (api_version != kDraApiVersion) {
    return std::vector<std::string>{StrCat(DescribeObject(object), ": apiVersion ", api_version,
                                           " is not read (only ", kDraApiVersion, "); skipped")};
  }
  std::vector<std::string> warnings;
  if (absl::Status st = k->check(object); !st.ok()) warnings.push_back(StrCat(st.message(), "; ", k->held));
  // Kept even when it does not decode, so that the plugin fails closed on it as it does live.
  if (absl::Status st = scheduler_->OnRawObject(k->raw, object); !st.ok()) {
    warnings = {std::string(st.message())};
  }
  const std::string_view text = StringAt(MetadataOf(object), "resourceVersion");
  uint64_t version = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), version).ec == std::errc()) {
    resource_version_ = std::max(resource_version_, version);
  }
  return warnings;
}

std::string SimulatedCluster::PutClaim(json claim) {
  std::string version = std::to_string(++resource_version_);
  claim["metadata"]["resourceVersion"] = version;
  // The claim has its name (it came from the store, or the caller gave it one): the put cannot fail.
  (void)scheduler_->OnRawObject(RawKind::kResourceClaim, claim);
  return version;
}

absl::Status SimulatedCluster::WriteResourceClaimStatus(const ObjectMeta& claim, const std::string& status_json) {
  const std::string key = StrCat(claim.namespace_, "/", claim.name);
  const json status = json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded() || !status.is_object()) {
    return absl::InvalidArgumentError(StrCat("ResourceClaim ", key, ": status to write is not a JSON object"));
  }
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  const RawObject* current = objects == nullptr ? nullptr : objects->RawOf(RawKind::kResourceClaim, key);
  if (current == nullptr) {
    return absl::NotFoundError(StrCat("resourceclaims.resource.k8s.io \"", claim.name, "\" not found"));
  }
  const json& meta = MetadataOf(*current->json);
  if (!claim.uid.empty() && claim.uid != StringAt(meta, "uid")) {
    return absl::AlreadyExistsError(StrCat("Precondition failed: UID in precondition: ", claim.uid,
                                           ", UID in object meta: ", StringAt(meta, "uid")));
  }
  if (!claim.resource_version.empty() && claim.resource_version != StringAt(meta, "resourceVersion")) {
    return absl::AlreadyExistsError(StrCat("Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"",
                                           claim.name, "\": the object has been modified; please apply your "
                                           "changes to the latest version and try again"));
  }
  json updated = *current->json;
  if (!updated.contains("status") || !updated["status"].is_object()) updated["status"] = json::object();
  for (const auto& [member, value] : status.items()) {
    if (value.is_null()) {
      updated["status"].erase(member);
    } else {
      updated["status"][member] = value;
    }
  }
  PutClaim(std::move(updated));
  return absl::OkStatus();
}

absl::StatusOr<ObjectMeta> SimulatedCluster::CreateResourceClaim(const std::string& claim_json) {
  json claim = json::parse(claim_json, nullptr, /*allow_exceptions=*/false);
  if (claim.is_discarded() || !claim.is_object() || !claim.contains("metadata") || !claim["metadata"].is_object()) {
    return absl::InvalidArgumentError("ResourceClaim to create: not a JSON object with metadata");
  }
  ObjectMeta meta{.name = std::string(StringAt(claim["metadata"], "name")),
                  .namespace_ = std::string(StringAt(claim["metadata"], "namespace"))};
  if (meta.namespace_.empty()) return absl::InvalidArgumentError("ResourceClaim to create: metadata.namespace: missing");
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  auto taken = [&](const std::string& name) {
    return objects != nullptr && objects->RawOf(RawKind::kResourceClaim, StrCat(meta.namespace_, "/", name)) != nullptr;
  };
  if (meta.name.empty()) {
    // generateName: the API server adds random characters; a counter does here.
    do {
      meta.name = StrCat(StringAt(claim["metadata"], "generateName"), ++claims_created_);
    } while (taken(meta.name));
  } else if (taken(meta.name)) {
    return absl::AlreadyExistsError(StrCat("resourceclaims.resource.k8s.io \"", meta.name, "\" already exists"));
  }
  meta.uid = StrCat("sim-claim-", ++claims_created_);
  claim["metadata"]["name"] = meta.name;
  claim["metadata"]["uid"] = meta.uid;
  meta.resource_version = PutClaim(std::move(claim));
  return meta;
}

absl::Status SimulatedCluster::DeleteResourceClaim(const ObjectMeta& claim) {
  const std::string key = StrCat(claim.namespace_, "/", claim.name);
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  const RawObject* current = objects == nullptr ? nullptr : objects->RawOf(RawKind::kResourceClaim, key);
  if (current == nullptr) return absl::OkStatus();  // gone already: counts as deleted
  const std::string_view uid = StringAt(MetadataOf(*current->json), "uid");
  if (!claim.uid.empty() && claim.uid != uid) {
    return absl::AlreadyExistsError(
        StrCat("Precondition failed: UID in precondition: ", claim.uid, ", UID in object meta: ", uid));
  }
  scheduler_->OnRawObjectDelete(RawKind::kResourceClaim, key);
  return absl::OkStatus();
}

absl::Status SimulatedCluster::WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string&) {
  // The status is for the kubelet; the scheduler does not read it back. Only the pod's identity
  // is checked (pods a driver hands to the scheduler directly are not known here until bound).
  std::string_view uid;
  if (auto it = unbound_.find(pod.Key()); it != unbound_.end()) uid = it->second->meta.uid;
  if (auto it = bound_.find(pod.Key()); it != bound_.end()) uid = it->second.uid;
  if (!uid.empty() && !pod.meta.uid.empty() && uid != pod.meta.uid) {
    return absl::NotFoundError(StrCat("pod ", pod.Key(), " is gone"));
  }
  return absl::OkStatus();
}

void SimulatedCluster::ReleaseClaims(std::string_view namespace_, std::string_view name, std::string_view uid) {
  std::shared_ptr<const ClusterObjects> objects = scheduler_->Objects();
  if (objects == nullptr) return;
  const std::string prefix = StrCat(namespace_, "/");
  const ObjectMap<RawObject>& claims = objects->Raw(RawKind::kResourceClaim);
  // The view is immutable: the puts below replace the store's, not this one.
  for (auto it = claims.lower_bound(prefix); it != claims.end() && it->first.starts_with(prefix); ++it) {
    const json& claim = *it->second.json;
    if (OwnedByPod(claim, name, uid)) {
      // The garbage collector: the claim goes with its pod, and its devices with it.
      scheduler_->OnRawObjectDelete(RawKind::kResourceClaim, it->first);
      continue;
    }
    const auto status = claim.find("status");
    if (status == claim.end() || !status->is_object()) continue;
    const auto reserved = status->find("reservedFor");
    if (reserved == status->end() || !reserved->is_array()) continue;
    json kept = json::array();
    for (const json& ref : *reserved) {
      if (!ReservesPod(ref, name, uid)) kept.push_back(ref);
    }
    if (kept.size() == reserved->size()) continue;
    json updated = claim;
    if (kept.empty()) {
      // No pod holds the claim any more: the controller deallocates it.
      updated["status"].erase("reservedFor");
      updated["status"].erase("allocation");
    } else {
      updated["status"]["reservedFor"] = std::move(kept);
    }
    PutClaim(std::move(updated));
  }
}

}  // namespace tessel::bench
