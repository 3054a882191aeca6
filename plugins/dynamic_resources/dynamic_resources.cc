// DynamicResources: resolves, allocates and writes DRA claims (see dynamic_resources.h).
#include "plugins/dynamic_resources/dynamic_resources.h"

#include <cstdio>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/dra/decode.h"
#include "scheduler/state/cluster_objects.h"
#include "scheduler/state/node_info.h"
#include "scheduler/util/strings.h"

namespace tessel::dynamic_resources {
namespace {

using nlohmann::json;

// How a pod's claim entry reads in messages: resource claim "gpu" (ResourceClaim shared-gpu).
std::string Describe(const PodResourceClaim& c) {
  return c.resource_claim_name.empty()
             ? StrCat("resource claim \"", c.name, "\" (ResourceClaimTemplate ", c.resource_claim_template_name, ")")
             : StrCat("resource claim \"", c.name, "\" (ResourceClaim ", c.resource_claim_name, ")");
}

std::string KeyOf(std::string_view namespace_, std::string_view name) { return StrCat(namespace_, "/", name); }

bool ReservedFor(const dra::ResourceClaim& claim, const Pod& pod) {
  for (const dra::ConsumerReference& r : claim.reserved_for) {
    if (r.resource == "pods" && r.api_group.empty() && r.name == pod.meta.name &&
        (r.uid.empty() || pod.meta.uid.empty() || r.uid == pod.meta.uid)) {
      return true;
    }
  }
  return false;
}

dra::ConsumerReference PodReference(const Pod& pod) {
  return {.api_group = "", .resource = "pods", .name = pod.meta.name, .uid = pod.meta.uid};
}

}  // namespace

absl::StatusOr<std::unique_ptr<DynamicResources>> DynamicResources::New(Handle& handle) {
  return std::make_unique<DynamicResources>(handle);
}

size_t DynamicResources::InFlight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_.size();
}

std::string DynamicResources::NewShareId() const {
  // A random (version 4) UUID, as the API server validates a shareID.
  uint64_t hi;
  uint64_t lo;
  {
    absl::MutexLock lock(&mu_);
    hi = ids_();
    lo = ids_();
  }
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32), static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff), static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

Status DynamicResources::PreFilter(CycleState& state, const Pod& pod) {
  if (pod.resource_claims.empty()) return Status::Skip();
  std::shared_ptr<const ClusterObjects> objects = handle_.Objects();
  if (objects == nullptr) {
    return Status::Unresolvable(StrCat(Describe(pod.resource_claims.front()),
                                       ": the scheduler has no ResourceClaims to read"));
  }
  PodClaims out;
  out.objects = objects;

  // The pod's claims, each once.
  std::set<std::string, std::less<>> seen;
  for (const PodResourceClaim& c : pod.resource_claims) {
    std::string name = c.resource_claim_name;
    if (name.empty()) {
      if (!c.generated_claim_name.has_value()) {
        return Status::Unresolvable(
            StrCat(Describe(c), ": waiting for the resourceclaim controller to create the claim"));
      }
      if (c.generated_claim_name->empty()) continue;  // the controller says the pod needs none
      name = *c.generated_claim_name;
    }
    if (!seen.insert(name).second) continue;
    const RawObject* raw = objects->RawOf(RawKind::kResourceClaim, KeyOf(pod.meta.namespace_, name));
    if (raw == nullptr) {
      return Status::Unresolvable(StrCat(Describe(c), ": resourceclaim \"", name, "\" not found"));
    }
    absl::StatusOr<dra::ResourceClaim> claim = dra::DecodeResourceClaim(*raw->json);
    if (!claim.ok()) return Status::Unresolvable(std::string(claim.status().message()));
    if (claim->meta.deletion_timestamp.has_value()) {
      return Status::Unresolvable(StrCat(Describe(c), ": resourceclaim \"", name, "\" is being deleted"));
    }
    if (!c.resource_claim_template_name.empty()) {
      // A generated claim must be the pod's own (kube-scheduler checks the owner).
      bool owned = false;
      for (const OwnerReference& o : claim->meta.owner_references) {
        owned = owned || (o.kind == "Pod" && o.name == pod.meta.name && (pod.meta.uid.empty() || o.uid == pod.meta.uid));
      }
      if (!owned) {
        return Status::Unresolvable(
            StrCat(Describe(c), ": resourceclaim \"", name, "\" was not created for the pod"));
      }
    }
    out.claims.push_back(*std::move(claim));
  }
  if (out.claims.empty()) return Status::Skip();

  // Every allocation: the informer's, and ours not seen back yet.
  const std::set<std::string, std::less<>> own = [&] {
    std::set<std::string, std::less<>> keys;
    for (const dra::ResourceClaim& c : out.claims) keys.insert(dra::ClaimKey(c));
    return keys;
  }();
  std::set<std::string, std::less<>> allocated_seen;
  for (const auto& [key, raw] : objects->Raw(RawKind::kResourceClaim)) {
    const json* status = nullptr;
    if (auto s = raw.json->find("status"); s != raw.json->end() && s->is_object()) status = &*s;
    if (status == nullptr || !status->contains("allocation") || (*status)["allocation"].is_null()) continue;
    absl::StatusOr<dra::ResourceClaim> claim = dra::DecodeResourceClaim(*raw.json);
    if (!claim.ok()) {
      return Status::Unresolvable(StrCat(claim.status().message(), " (its devices cannot be counted as in use)"));
    }
    allocated_seen.insert(key);
    if (own.contains(key)) continue;  // the pod's own allocated claims are kept, not competed with
    out.allocated.Add(*claim->allocation);
  }
  {
    absl::MutexLock lock(&mu_);
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      const bool gone = objects->RawOf(RawKind::kResourceClaim, it->first) == nullptr;
      if (allocated_seen.contains(it->first) || gone) {
        it = in_flight_.erase(it);  // the informer has it now (or the claim is gone)
        continue;
      }
      if (own.contains(it->first)) {
        for (dra::ResourceClaim& c : out.claims) {
          if (dra::ClaimKey(c) == it->first && !c.allocation.has_value()) c.allocation = it->second.allocation;
        }
      } else {
        out.allocated.Add(it->second.allocation);
      }
      ++it;
    }
  }

  // Classes the claims ask for; a class that does not decode fails the pods that need it.
  for (const dra::ResourceClaim& claim : out.claims) {
    if (claim.allocation.has_value()) continue;
    for (const dra::DeviceRequest& r : claim.spec.requests) {
      std::vector<std::string> names;
      if (r.exactly.has_value()) names.push_back(r.exactly->device_class_name);
      for (const dra::DeviceSubRequest& s : r.first_available) names.push_back(s.ask.device_class_name);
      for (const std::string& name : names) {
        if (out.classes.contains(name)) continue;
        const RawObject* raw = objects->RawOf(RawKind::kDeviceClass, name);
        if (raw == nullptr) {
          return Status::Unresolvable(StrCat("claim ", dra::ClaimKey(claim), ", request ", r.name,
                                             ": deviceclass \"", name, "\" not found"));
        }
        absl::StatusOr<dra::DeviceClass> cls = dra::DecodeDeviceClass(*raw->json);
        if (!cls.ok()) return Status::Unresolvable(std::string(cls.status().message()));
        out.classes.emplace(name, *std::move(cls));
      }
    }
  }
  // Every slice (a pool's devices may be anywhere); one that does not decode holds the pod.
  absl::StatusOr<std::vector<std::shared_ptr<const dra::ResourceSlice>>> slices = Slices(*objects);
  if (!slices.ok()) return Status::Unresolvable(std::string(slices.status().message()));
  out.slices = *std::move(slices);
  state.WriteValue(kName, std::make_shared<const PodClaims>(std::move(out)));
  return Status::Ok();
}

absl::StatusOr<std::vector<std::shared_ptr<const dra::ResourceSlice>>> DynamicResources::Slices(
    const ClusterObjects& objects) {
  absl::MutexLock lock(&slices_mu_);
  std::map<std::string, DecodedSlice, std::less<>> current;
  std::vector<std::shared_ptr<const dra::ResourceSlice>> out;
  std::optional<absl::Status> first_error;
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    auto cached = decoded_slices_.find(key);
    if (cached == decoded_slices_.end() || cached->second.source != raw.json) {
      absl::StatusOr<dra::ResourceSlice> slice = dra::DecodeResourceSlice(*raw.json);
      ++slices_decoded_;
      DecodedSlice fresh{.source = raw.json,
                         .slice = slice.ok() ? absl::StatusOr<std::shared_ptr<const dra::ResourceSlice>>(
                                                   std::make_shared<const dra::ResourceSlice>(*std::move(slice)))
                                             : slice.status()};
      cached = current.emplace(key, std::move(fresh)).first;
    } else {
      cached = current.emplace(key, std::move(cached->second)).first;
    }
    if (!cached->second.slice.ok()) {
      if (!first_error) first_error = cached->second.slice.status();
      continue;
    }
    out.push_back(*cached->second.slice);
  }
  decoded_slices_ = std::move(current);
  if (first_error) return *first_error;
  return out;
}

int64_t DynamicResources::SlicesDecoded() const {
  absl::MutexLock lock(&slices_mu_);
  return slices_decoded_;
}

absl::StatusOr<dra::AllocationOutcome> DynamicResources::AllocateOn(const PodClaims& claims, const Node& node,
                                                                    bool with_share_ids) const {
  std::vector<const dra::ResourceSlice*> slices;
  slices.reserve(claims.slices.size());
  for (const auto& s : claims.slices) slices.push_back(s.get());
  const dra::NodeDevices devices = dra::GatherNodeDevices(node, slices);
  std::vector<const dra::ResourceClaim*> pointers;
  for (const dra::ResourceClaim& c : claims.claims) pointers.push_back(&c);
  dra::AllocatorOptions options{.matcher = &matcher_};
  // Filter only asks whether the claims fit; share IDs are made for the allocation kept.
  options.new_share_id = with_share_ids ? std::function<std::string()>([this] { return NewShareId(); })
                                        : std::function<std::string()>([] { return std::string("00000000-0000-4000-8000-000000000000"); });
  return dra::Allocate({.node = node,
                        .claims = std::move(pointers),
                        .devices = devices,
                        .classes = claims.classes,
                        .allocated = claims.allocated},
                       options);
}

Status DynamicResources::Filter(const CycleState& state, const Pod&, const NodeInfo& info) const {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr || info.node() == nullptr) return Status::Ok();
  // kube-scheduler's reasons, the same on every node, so that "0/n nodes are available" sums
  // them; the allocator's own reason (which names the node) is for the log and explain.
  for (const dra::ResourceClaim& c : (*claims)->claims) {
    if (c.allocation.has_value() && !c.allocation->AvailableOn(*info.node())) {
      return Status::Unresolvable(std::string(kReasonNotAvailable));
    }
  }
  absl::StatusOr<dra::AllocationOutcome> out = AllocateOn(**claims, *info.node(), false);
  if (!out.ok()) return Status::Unresolvable(std::string(out.status().message()));
  if (!out->fits()) return Status::Unresolvable(std::string(kReasonCannotAllocate));
  return Status::Ok();
}

Status DynamicResources::Reserve(CycleState& state, const Pod& pod, const std::string& node_name) {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr) return Status::Ok();
  const NodeInfo* info = handle_.snapshot().Get(node_name);
  if (info == nullptr || info->node() == nullptr) {
    return Status::Error(StrCat("node \"", node_name, "\" is not in the snapshot"));
  }
  absl::StatusOr<dra::AllocationOutcome> out = AllocateOn(**claims, *info->node(), true);
  if (!out.ok()) return Status::Unresolvable(std::string(out.status().message()));
  if (!out->fits()) return Status::Unresolvable(StrCat(kReasonCannotAllocate, ": ", out->reason));
  Reservation r;
  r.claims = (*claims)->claims;
  r.allocations = std::move(out->allocations);
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < r.claims.size(); ++i) {
      const bool fresh = !r.claims[i].allocation.has_value();
      r.newly_allocated.push_back(fresh);
      r.written.push_back(false);
      if (fresh) {
        in_flight_[dra::ClaimKey(r.claims[i])] = InFlightAllocation{.allocation = r.allocations[i], .pod_uid = pod.meta.uid};
      }
    }
  }
  state.WriteValue(std::string(kName) + "/reservation", std::move(r));
  return Status::Ok();
}

void DynamicResources::Unreserve(CycleState& state, const Pod& pod, const std::string&) {
  Reservation* r = state.ReadMutableValue<Reservation>(std::string(kName) + "/reservation");
  if (r == nullptr) return;
  ClusterApi* api = handle_.api();
  for (size_t i = 0; i < r->claims.size(); ++i) {
    const dra::ResourceClaim& claim = r->claims[i];
    if (r->newly_allocated[i]) {
      absl::MutexLock lock(&mu_);
      auto it = in_flight_.find(dra::ClaimKey(claim));
      if (it != in_flight_.end() && it->second.pod_uid == pod.meta.uid) in_flight_.erase(it);
    }
    if (!r->written[i] || api == nullptr) continue;
    // Undo the status write (best effort): the allocation made for this pod goes, and the pod
    // leaves reservedFor.
    json status = json::object();
    if (r->newly_allocated[i]) status["allocation"] = nullptr;
    json reserved = json::array();
    for (const dra::ConsumerReference& ref : claim.reserved_for) {
      reserved.push_back({{"resource", ref.resource}, {"name", ref.name}, {"uid", ref.uid}});
      if (!ref.api_group.empty()) reserved.back()["apiGroup"] = ref.api_group;
    }
    status["reservedFor"] = reserved.empty() ? json(nullptr) : reserved;
    ObjectMeta meta = claim.meta;
    meta.resource_version.clear();  // our write changed it
    (void)api->WriteResourceClaimStatus(meta, status.dump());
    r->written[i] = false;
  }
}

Status DynamicResources::PreBind(CycleState& state, const Pod& pod, const std::string&) {
  Reservation* r = state.ReadMutableValue<Reservation>(std::string(kName) + "/reservation");
  if (r == nullptr) return Status::Ok();
  ClusterApi* api = handle_.api();
  if (api == nullptr) return Status::Error("allocating resource claims: no cluster to write to");
  for (size_t i = 0; i < r->claims.size(); ++i) {
    const dra::ResourceClaim& claim = r->claims[i];
    if (!r->newly_allocated[i] && ReservedFor(claim, pod)) continue;  // nothing to write
    std::vector<dra::ConsumerReference> reserved = claim.reserved_for;
    if (!ReservedFor(claim, pod)) reserved.push_back(PodReference(pod));
    const json status = dra::EncodeClaimStatus(r->allocations[i], reserved);
    absl::Status st = api->WriteResourceClaimStatus(claim.meta, status.dump());
    if (!st.ok()) {
      return Status::Error(StrCat("writing the status of ResourceClaim ", dra::ClaimKey(claim), ": ", st.message()));
    }
    r->written[i] = true;
  }
  return Status::Ok();
}

}  // namespace tessel::dynamic_resources
