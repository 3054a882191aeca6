// DynamicResources: resolves, allocates and writes DRA claims (see dynamic_resources.h).
#include "plugins/dynamic_resources/dynamic_resources.h"

#include <cstdio>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/dra/decode.h"
#include "scheduler/framework/dra_extended.h"
#include "scheduler/framework/dra_gpu_units.h"
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

constexpr std::string_view kPodGroupApiGroup = "scheduling.k8s.io";

// Whether `r` names `consumer` (the UIDs compared when both are known).
bool SameConsumer(const dra::ConsumerReference& r, const dra::ConsumerReference& consumer) {
  return r.resource == consumer.resource && r.api_group == consumer.api_group && r.name == consumer.name &&
         (r.uid.empty() || consumer.uid.empty() || r.uid == consumer.uid);
}

bool Reserves(const dra::ResourceClaim& claim, const dra::ConsumerReference& consumer) {
  return std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                     [&](const dra::ConsumerReference& r) { return SameConsumer(r, consumer); });
}

dra::ConsumerReference PodReference(const Pod& pod) {
  return {.api_group = "", .resource = "pods", .name = pod.meta.name, .uid = pod.meta.uid};
}

// Reserved for the pod, or for the scheduling.k8s.io PodGroup it belongs to (which the pod knows
// by name only), as upstream's IsReservedForPod.
bool ReservedFor(const dra::ResourceClaim& claim, const Pod& pod) {
  if (Reserves(claim, PodReference(pod))) return true;
  if (pod.scheduling_group.empty()) return false;
  return Reserves(claim, {.api_group = std::string(kPodGroupApiGroup), .resource = "podgroups",
                          .name = pod.scheduling_group, .uid = ""});
}

// The PodGroup entry the pod's claim uses: the same name, and the same claim or template.
const PodGroupResourceClaim* GroupEntryOf(const std::optional<PodGroupClaims>& group, const PodResourceClaim& c) {
  if (!group.has_value()) return nullptr;
  for (const PodGroupResourceClaim& g : group->claims) {
    if (g.name == c.name && g.resource_claim_name == c.resource_claim_name &&
        g.resource_claim_template_name == c.resource_claim_template_name) {
      return &g;
    }
  }
  return nullptr;
}

// Whether a claim made from a template is the pod's own or its PodGroup's (when the pod's entry
// is the PodGroup's).
bool MadeFor(const dra::ResourceClaim& claim, const Pod& pod, bool for_group) {
  for (const OwnerReference& o : claim.meta.owner_references) {
    if (o.kind == "Pod" && o.name == pod.meta.name && (pod.meta.uid.empty() || o.uid == pod.meta.uid)) return true;
    if (for_group && o.kind == "PodGroup" && o.name == pod.scheduling_group &&
        o.api_version.starts_with(StrCat(kPodGroupApiGroup, "/"))) {
      return true;
    }
  }
  return false;
}

// The pod's claims, each once, in spec order, resolved and decoded, and whom each is reserved for
// (the pod, or its PodGroup when the pod's entry is one of the PodGroup's); or why the pod waits.
struct ResolvedClaims {
  std::vector<dra::ResourceClaim> claims;
  std::vector<dra::ConsumerReference> bind_to;  // per claim
};
absl::StatusOr<ResolvedClaims> ResolveClaims(const ClusterObjects& objects, const Pod& pod,
                                             const std::optional<PodGroupClaims>& group) {
  ResolvedClaims resolved;
  std::vector<dra::ResourceClaim>& out = resolved.claims;
  std::set<std::string, std::less<>> seen;
  for (const PodResourceClaim& c : pod.resource_claims) {
    const PodGroupResourceClaim* shared = GroupEntryOf(group, c);
    std::string name = c.resource_claim_name;
    if (name.empty()) {
      std::optional<std::string> made = c.generated_claim_name;
      if (!made.has_value() && shared != nullptr) {
        // The PodGroup's claim from a template: its status names it too.
        if (auto g = group->generated.find(c.name); g != group->generated.end()) made = g->second;
      }
      if (!made.has_value()) {
        return absl::FailedPreconditionError(
            StrCat(Describe(c), ": waiting for the resourceclaim controller to create the claim"));
      }
      if (made->empty()) continue;  // the controller says the pod needs none
      name = *made;
    }
    if (!seen.insert(name).second) continue;
    const RawObject* raw = objects.RawOf(RawKind::kResourceClaim, KeyOf(pod.meta.namespace_, name));
    if (raw == nullptr) {
      return absl::FailedPreconditionError(StrCat(Describe(c), ": resourceclaim \"", name, "\" not found"));
    }
    absl::StatusOr<dra::ResourceClaim> claim = dra::DecodeResourceClaim(*raw->json);
    if (!claim.ok()) return claim.status();
    if (claim->meta.deletion_timestamp.has_value()) {
      return absl::FailedPreconditionError(StrCat(Describe(c), ": resourceclaim \"", name, "\" is being deleted"));
    }
    // A generated claim must be the pod's own, or its PodGroup's (kube-scheduler checks the owner).
    if (!c.resource_claim_template_name.empty() && !MadeFor(*claim, pod, shared != nullptr)) {
      return absl::FailedPreconditionError(StrCat(Describe(c), ": resourceclaim \"", name, "\" was not created for the ",
                                                  shared != nullptr ? "pod or its PodGroup" : "pod"));
    }
    out.push_back(*std::move(claim));
    resolved.bind_to.push_back(shared != nullptr
                                   ? dra::ConsumerReference{.api_group = std::string(kPodGroupApiGroup),
                                                            .resource = "podgroups", .name = group->name, .uid = group->uid}
                                   : PodReference(pod));
  }
  return resolved;
}

// The DeviceClass that serves extended resource `resource`, as kube-scheduler's cache resolves
// it: deviceclass.resource.kubernetes.io/<class> names its class; else, of the classes whose
// spec.extendedResourceName it is, the newest (the smaller name on a tie). "" when none does.
std::string ClassServing(const ClusterObjects& objects, std::string_view resource) {
  const ObjectMap<RawObject>& classes = objects.Raw(RawKind::kDeviceClass);
  if (resource.starts_with(kDeviceClassResourcePrefix)) {
    std::string_view name = resource.substr(kDeviceClassResourcePrefix.size());
    return classes.contains(name) ? std::string(name) : std::string();
  }
  const RawObject* newest = nullptr;
  for (const auto& [name, raw] : classes) {  // by name: a tie keeps the smaller
    auto spec = raw.json->find("spec");
    if (spec == raw.json->end() || !spec->is_object()) continue;
    auto named = spec->find("extendedResourceName");
    if (named == spec->end() || !named->is_string() || named->get_ref<const std::string&>() != resource) continue;
    if (newest == nullptr || raw.meta.creation_timestamp > newest->meta.creation_timestamp) newest = &raw;
  }
  return newest == nullptr ? std::string() : newest->meta.name;
}

// The claim an earlier attempt made for the pod's extended resources, if the informer has one.
std::optional<dra::ResourceClaim> LeftExtendedClaim(const ClusterObjects& objects, const Pod& pod) {
  const ObjectMap<RawObject>& claims = objects.Raw(RawKind::kResourceClaim);
  const std::string prefix = StrCat(pod.meta.namespace_, "/");
  for (auto it = claims.lower_bound(prefix); it != claims.end() && it->first.starts_with(prefix); ++it) {
    const json& meta = it->second.json->value("metadata", json::object());
    const json& annotations = meta.value("annotations", json::object());
    if (!annotations.is_object() || annotations.value(std::string(dra::kExtendedResourceClaimAnnotation), "") != "true") {
      continue;
    }
    absl::StatusOr<dra::ResourceClaim> claim = dra::DecodeResourceClaim(*it->second.json);
    if (claim.ok() && dra::IsExtendedResourceClaimOf(*claim, pod)) return *std::move(claim);
  }
  return std::nullopt;
}

// Whether the claim `key` of the pod is reserved for its PodGroup (shared by the group's pods).
bool SharedByGroup(const PodClaims& claims, std::string_view key) {
  for (size_t i = 0; i < claims.claims.size() && i < claims.bind_to.size(); ++i) {
    if (dra::ClaimKey(claims.claims[i]) == key) return claims.bind_to[i].resource == "podgroups";
  }
  return false;
}

// Another pod's reservation of a claim this pod shares: its allocation, and whom its PreBind
// reserves it for (so this pod does not write it again).
void TakeSharedReservation(dra::ResourceClaim& claim, const dra::AllocationResult& allocation,
                           const dra::ConsumerReference& consumer) {
  if (!claim.allocation.has_value()) claim.allocation = allocation;
  if (!consumer.name.empty() && !Reserves(claim, consumer)) claim.reserved_for.push_back(consumer);
}

// Whether the pod (by UID) runs, or is assumed, on a node of the snapshot. Walks every node's pods:
// only asked when a claim made for the pod exists while the pod is not bound, and for a claim
// made and not seen since (RecordDone).
bool RunsInSnapshot(const Snapshot& snapshot, std::string_view uid) {
  if (uid.empty()) return false;
  for (const NodeInfo* node : snapshot.nodes()) {
    for (const PodRef& p : node->pods()) {
      if (p->meta.uid == uid) return true;
    }
  }
  return false;
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

std::string DynamicResources::PendingExtendedKey(const Pod& pod) {
  // Not a valid claim name (a space), so it never meets a real claim's key.
  return StrCat(pod.meta.namespace_, "/", pod.meta.name, "-extended-resources (to create, pod ", pod.meta.uid, ")");
}

Status DynamicResources::PreFilter(CycleState& state, const Pod& pod) {
  std::shared_ptr<const ClusterObjects> objects = handle_.Objects();
  PodClaims out;
  out.objects = objects;
  if (objects != nullptr && !objects->Raw(RawKind::kDeviceClass).empty()) {
    for (const auto& [resource, amount] : pod.requests.scalar) {
      if (amount <= 0 || !MayBeDraExtendedResource(resource)) continue;
      if (std::string cls = ClassServing(*objects, resource); !cls.empty()) out.extended.emplace(resource, std::move(cls));
    }
  }
  if (pod.resource_claims.empty() && out.extended.empty()) return Status::Skip();
  if (objects == nullptr) {
    return Status::Unresolvable(StrCat(Describe(pod.resource_claims.front()),
                                       ": the scheduler has no ResourceClaims to read"));
  }
  if (!out.extended.empty() && pod.node_name.empty()) {
    // A claim an earlier attempt created and did not bind with: its allocation may be stale, so
    // it goes (its deletion requeues the pod), as kube-scheduler does. The claim of a pod that
    // runs is its own: a what-if runs PreFilter on a running pod's pending copy too (a move
    // plan asks whether the pod would fit elsewhere).
    if (std::optional<dra::ResourceClaim> left = LeftExtendedClaim(*objects, pod);
        left.has_value() && !RunsInSnapshot(handle_.snapshot(), pod.meta.uid)) {
      ClusterApi* api = handle_.api();
      absl::Status deleted = api == nullptr ? absl::UnavailableError("no cluster to write to")
                                            : api->DeleteResourceClaim(left->meta);
      return Status::Unresolvable(StrCat("ResourceClaim ", dra::ClaimKey(*left),
                                         " for the pod's extended resources is left from an earlier attempt: ",
                                         deleted.ok() ? "deleting it" : StrCat("deleting it failed: ", deleted.message())));
    }
  }

  absl::StatusOr<ResolvedClaims> resolved = ResolveClaims(*objects, pod, handle_.PodGroupClaimsOf(pod));
  if (!resolved.ok()) return Status::Unresolvable(std::string(resolved.status().message()));
  out.claims = std::move(resolved->claims);
  out.bind_to = std::move(resolved->bind_to);
  if (out.claims.empty() && out.extended.empty()) return Status::Skip();

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
      const RawObject* stored = objects->RawOf(RawKind::kResourceClaim, it->first);
      if (stored != nullptr) it->second.awaiting_creation = false;
      // Asked only of a created claim the store does not hold (the store scans its last deletions).
      const bool deleted = stored == nullptr && it->second.awaiting_creation && !it->second.created_uid.empty() &&
                           objects->RecentlyDeleted(RawKind::kResourceClaim, it->first, it->second.created_uid);
      if (RecordDone(it->second, stored, allocated_seen.contains(it->first), deleted)) {
        it = in_flight_.erase(it);  // the informer has it now (or the claim is gone)
        continue;
      }
      out.in_flight_counted.insert(it->first);
      if (own.contains(it->first)) {
        for (dra::ResourceClaim& c : out.claims) {
          if (dra::ClaimKey(c) != it->first) continue;
          if (it->second.pod_uid == pod.meta.uid) {
            if (!c.allocation.has_value()) c.allocation = it->second.allocation;
          } else {
            TakeSharedReservation(c, it->second.allocation, it->second.consumer);
          }
        }
      } else {
        out.allocated.Add(it->second.allocation);
      }
      ++it;
    }
  }

  // Classes the claims ask for; a class that does not decode fails the pods that need it.
  for (const auto& [resource, name] : out.extended) {
    if (out.classes.contains(name)) continue;
    absl::StatusOr<dra::DeviceClass> cls = dra::DecodeDeviceClass(*objects->RawOf(RawKind::kDeviceClass, name)->json);
    if (!cls.ok()) return Status::Unresolvable(StrCat(resource, ": ", cls.status().message()));
    out.classes.emplace(name, *std::move(cls));
  }
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
  if (!out.extended.empty()) state.WriteValue(kDraExtendedStateKey, DraExtendedResources{.class_of = out.extended});
  state.WriteValue(kName, std::make_shared<const PodClaims>(std::move(out)));
  state.WriteValue(kDraGpuUnitsStateKey, static_cast<const DraGpuUnits*>(this));
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
      if (!slice.ok()) {
        // Only its pool is held (invalid wherever it is seen), when its driver and pool can be read.
        if (std::optional<dra::ResourceSlice> identity =
                dra::SliceIdentity(*raw.json, std::string(slice.status().message()))) {
          slice = *std::move(identity);
        }
      }
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

std::optional<ExtendedClaim> DynamicResources::ExtendedClaimOn(const PodClaims& claims, const Pod& pod,
                                                                const Node& node) const {
  std::map<std::string, std::string, std::less<>> served;
  for (const auto& [resource, cls] : claims.extended) {
    if (node.allocatable.Get(resource) == 0) served.emplace(resource, cls);
  }
  if (served.empty()) return std::nullopt;
  ExtendedClaim out;
  out.requests = dra::ExtendedResourceRequests(pod, served);
  if (out.requests.requests.empty()) return std::nullopt;
  out.claim.meta.namespace_ = pod.meta.namespace_;
  out.claim.meta.name = "<extended-resources>";  // kube-scheduler's name for it in memory
  out.claim.spec.requests = out.requests.requests;
  return out;
}

absl::StatusOr<dra::AllocationOutcome> DynamicResources::AllocateOn(const PodClaims& claims,
                                                                    const ExtendedClaim* extended,
                                                                    const Node& node, Purpose purpose,
                                                                    dra::NodeDevices* gathered,
                                                                    const dra::DeviceChoice* choice) const {
  std::vector<const dra::ResourceSlice*> slices;
  slices.reserve(claims.slices.size());
  for (const auto& s : claims.slices) slices.push_back(s.get());
  dra::NodeDevices local;
  dra::NodeDevices& devices = gathered != nullptr ? *gathered : local;
  devices = dra::GatherNodeDevices(node, slices);
  std::vector<const dra::ResourceClaim*> pointers;
  for (const dra::ResourceClaim& c : claims.claims) pointers.push_back(&c);
  if (extended != nullptr) pointers.push_back(&extended->claim);
  dra::AllocatorOptions options{.matcher = &matcher_};
  if (purpose != Purpose::kFit) {
    options.choice = choice != nullptr ? choice : &keep_whole_;
    options.max_alternatives = kAlternatives;
  }
  // Share IDs are made for the allocation kept.
  options.new_share_id = purpose == Purpose::kReserve
                             ? std::function<std::string()>([this] { return NewShareId(); })
                             : std::function<std::string()>([] { return std::string("00000000-0000-4000-8000-000000000000"); });
  return dra::Allocate({.node = node,
                        .claims = std::move(pointers),
                        .devices = devices,
                        .classes = claims.classes,
                        .allocated = claims.allocated},
                       options);
}

Status DynamicResources::Filter(const CycleState& state, const Pod& pod, const NodeInfo& info) const {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr || info.node() == nullptr) return Status::Ok();
  // kube-scheduler's reasons, the same on every node, so that "0/n nodes are available" sums
  // them; the allocator's own reason (which names the node) is for the log and explain.
  for (const dra::ResourceClaim& c : (*claims)->claims) {
    if (c.allocation.has_value() && !c.allocation->AvailableOn(*info.node())) {
      return Status::Unresolvable(std::string(kReasonNotAvailable));
    }
  }
  const std::optional<ExtendedClaim> extended = ExtendedClaimOn(**claims, pod, *info.node());
  if ((*claims)->claims.empty() && !extended.has_value()) return Status::Ok();  // the device plugin serves it
  absl::StatusOr<dra::AllocationOutcome> out =
      AllocateOn(**claims, extended.has_value() ? &*extended : nullptr, *info.node(), Purpose::kFit);
  if (!out.ok()) return Status::Unresolvable(std::string(out.status().message()));
  // Resolvable, as in kube-scheduler: devices in use may be freed (preemption: RemovePod).
  if (!out->fits()) return Status::Unschedulable(std::string(kReasonCannotAllocate));
  return Status::Ok();
}

std::vector<dra::ResourceClaim> DynamicResources::AllocatedClaimsOf(const ClusterObjects& objects,
                                                                    const Pod& other) const {
  std::vector<dra::ResourceClaim> out;
  if (absl::StatusOr<ResolvedClaims> resolved = ResolveClaims(objects, other, handle_.PodGroupClaimsOf(other));
      resolved.ok()) {
    for (dra::ResourceClaim& c : resolved->claims) {
      if (c.allocation.has_value()) out.push_back(std::move(c));
    }
  }
  if (std::optional<dra::ResourceClaim> made = LeftExtendedClaim(objects, other); made && made->allocation) {
    out.push_back(*std::move(made));
  }
  return out;
}

Status DynamicResources::RemoveOtherPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                        const NodeInfo&) const {
  const auto* current = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (current == nullptr || (*current)->objects == nullptr || other.meta.uid.empty()) return Status::Ok();
  const PodClaims& mine = **current;
  auto updated = std::make_shared<PodClaims>(mine);
  updated->removed_pods.insert(other.meta.uid);
  if (other.SameKey(to_schedule) && other.meta.uid != to_schedule.meta.uid) {
    // The pod is placed again as its replacement (a move): the claims made for the running pod
    // alone (it owns them, they are reserved for nobody else) are made anew, unallocated.
    for (dra::ResourceClaim& c : updated->claims) {
      const bool owned = std::any_of(c.meta.owner_references.begin(), c.meta.owner_references.end(),
                                     [&](const OwnerReference& o) {
                                       return o.kind == "Pod" && o.controller && o.name == other.meta.name &&
                                              o.uid == other.meta.uid;
                                     });
      const bool alone = std::all_of(c.reserved_for.begin(), c.reserved_for.end(), [&](const dra::ConsumerReference& r) {
        return r.resource == "pods" && r.name == other.meta.name && (r.uid.empty() || r.uid == other.meta.uid);
      });
      if (!owned || !alone || !c.allocation.has_value()) continue;
      c.allocation.reset();
      // The classes it asks for, which PreFilter reads only for claims to allocate.
      for (const dra::DeviceRequest& r : c.spec.requests) {
        std::vector<std::string> names;
        if (r.exactly.has_value()) names.push_back(r.exactly->device_class_name);
        for (const dra::DeviceSubRequest& sub : r.first_available) names.push_back(sub.ask.device_class_name);
        for (const std::string& name : names) {
          if (updated->classes.contains(name)) continue;
          const RawObject* raw = mine.objects->RawOf(RawKind::kDeviceClass, name);
          if (raw == nullptr) continue;  // the allocator says the class is missing
          if (absl::StatusOr<dra::DeviceClass> cls = dra::DecodeDeviceClass(*raw->json); cls.ok()) {
            updated->classes.emplace(name, *std::move(cls));
          }
        }
      }
    }
  }
  std::set<std::string, std::less<>> own;
  for (const dra::ResourceClaim& c : mine.claims) own.insert(dra::ClaimKey(c));
  for (const dra::ResourceClaim& c : AllocatedClaimsOf(*mine.objects, other)) {
    const std::string key = dra::ClaimKey(c);
    if (own.contains(key) || updated->freed.contains(key) || !ReservedFor(c, other)) continue;
    const bool all_gone = std::all_of(c.reserved_for.begin(), c.reserved_for.end(), [&](const dra::ConsumerReference& r) {
      return r.resource == "pods" && updated->removed_pods.contains(r.uid);
    });
    if (!all_gone) continue;
    updated->allocated.Remove(*c.allocation);
    updated->freed.emplace(key, *c.allocation);
  }
  state.WriteValue(kName, std::shared_ptr<const PodClaims>(std::move(updated)));
  return Status::Ok();
}

Status DynamicResources::AddOtherPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                     const NodeInfo& node) const {
  const auto* current = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (current == nullptr || node.node() == nullptr || (*current)->objects == nullptr) return Status::Ok();
  if ((*current)->removed_pods.contains(other.meta.uid) && !other.meta.uid.empty()) {
    // A pod taken off comes back (preemption's reprieve): its freed claims hold their devices again.
    auto updated = std::make_shared<PodClaims>(**current);
    updated->removed_pods.erase(other.meta.uid);
    for (auto it = updated->freed.begin(); it != updated->freed.end();) {
      const RawObject* raw = updated->objects->RawOf(RawKind::kResourceClaim, it->first);
      absl::StatusOr<dra::ResourceClaim> claim =
          raw == nullptr ? absl::NotFoundError("gone") : dra::DecodeResourceClaim(*raw->json);
      if (claim.ok() && ReservedFor(*claim, other)) {
        updated->allocated.Add(it->second);
        it = updated->freed.erase(it);
      } else {
        ++it;
      }
    }
    state.WriteValue(kName, std::shared_ptr<const PodClaims>(std::move(updated)));
    return Status::Ok();
  }
  // A gang's planner adds the member it filters with (its shape's representative) as one more
  // member: then its own claims count too, as the next member's.
  const bool itself = other.SameKey(to_schedule);
  const PodClaims& mine = **current;
  const ClusterObjects& objects = *mine.objects;
  PodClaims theirs;
  theirs.slices = mine.slices;
  theirs.classes = mine.classes;
  theirs.allocated = mine.allocated;
  // Claims the other pod shares with this one, not allocated yet (a PodGroup's, a claim both
  // name): allocated on the other pod's node in this pod's view, so this pod goes where they are.
  std::set<std::string, std::less<>> shared;
  if (absl::StatusOr<ResolvedClaims> resolved = ResolveClaims(objects, other, handle_.PodGroupClaimsOf(other));
      resolved.ok()) {
    std::set<std::string, std::less<>> own;
    for (const dra::ResourceClaim& c : mine.claims) {
      if (!c.allocation.has_value()) own.insert(dra::ClaimKey(c));
    }
    absl::MutexLock lock(&mu_);
    for (dra::ResourceClaim& c : resolved->claims) {
      const std::string key = dra::ClaimKey(c);
      // A claim made for a pod of this name (from a template) whose devices a removal freed
      // (RemovePod) is made anew for the pod's replacement (a move): allocated where it goes.
      if (c.allocation.has_value() && mine.freed.contains(key) && !own.contains(key) && !mine.added.contains(key) &&
          std::any_of(c.meta.owner_references.begin(), c.meta.owner_references.end(), [&](const OwnerReference& o) {
            return o.kind == "Pod" && o.controller && o.name == other.meta.name;
          })) {
        c.allocation.reset();
      }
      // Counted already: allocated (in `allocated`, or this pod's own view of it), in flight
      // (likewise), or added by an earlier member.
      if (c.allocation.has_value() || in_flight_.contains(key) || mine.added.contains(key)) continue;
      // The gang planner's "itself" (one more member like this one) shares only the claims
      // reserved for the PodGroup; a claim of its own is one more claim like it.
      if (own.contains(key) && (!itself || SharedByGroup(mine, key))) shared.insert(key);
      theirs.claims.push_back(std::move(c));
    }
  }
  for (const auto& [resource, amount] : other.requests.scalar) {
    if (amount <= 0 || !MayBeDraExtendedResource(resource)) continue;
    if (std::string cls = ClassServing(objects, resource); !cls.empty()) theirs.extended.emplace(resource, std::move(cls));
  }
  std::optional<ExtendedClaim> extended = ExtendedClaimOn(theirs, other, *node.node());
  const std::string extended_key = PendingExtendedKey(other);
  if (extended.has_value() && mine.added.contains(extended_key)) extended.reset();
  if (extended.has_value()) {
    absl::MutexLock lock(&mu_);
    if (in_flight_.contains(extended_key) || LeftExtendedClaim(objects, other).has_value()) extended.reset();
  }
  if (theirs.claims.empty() && !extended.has_value()) return Status::Ok();
  // Classes the other pod's claims name that this pod's do not.
  auto need_class = [&](const std::string& name) {
    if (theirs.classes.contains(name)) return;
    const RawObject* raw = objects.RawOf(RawKind::kDeviceClass, name);
    if (raw == nullptr) return;
    if (absl::StatusOr<dra::DeviceClass> cls = dra::DecodeDeviceClass(*raw->json); cls.ok()) {
      theirs.classes.emplace(name, *std::move(cls));
    }
  };
  for (const auto& [resource, cls] : theirs.extended) need_class(cls);
  for (const dra::ResourceClaim& c : theirs.claims) {
    for (const dra::DeviceRequest& r : c.spec.requests) {
      if (r.exactly.has_value()) need_class(r.exactly->device_class_name);
      for (const dra::DeviceSubRequest& sub : r.first_available) need_class(sub.ask.device_class_name);
    }
  }
  // The allocation the other pod's Reserve would choose (not the first found): a gang's members
  // planned one beside another leave each other the room their own reservations would.
  const NodeChoice choice(state, other, node, keep_whole_);
  dra::NodeDevices devices;
  absl::StatusOr<dra::AllocationOutcome> out = AllocateOn(
      theirs, extended.has_value() ? &*extended : nullptr, *node.node(), Purpose::kChoose, &devices, choice.get());
  if (out.ok() && !out->fits() && ReleaseTerminating(theirs, objects, node)) {
    // A pod nominated where its preemption's victims still terminate: the devices they hold are
    // its, once they are gone. Counted here besides theirs, so no other pod takes its room.
    out = AllocateOn(theirs, extended.has_value() ? &*extended : nullptr, *node.node(), Purpose::kChoose, &devices,
                     choice.get());
  }
  if (!out.ok()) return Status::Ok();  // their own cycle finds out; nothing to count here
  auto updated = std::make_shared<PodClaims>(mine);
  if (!out->fits()) {
    // It does not fit even so (a pod that outranks it took part of its room since it was
    // nominated). As with device-plugin GPUs, where a nominated pod's request counts against the
    // node's free total whatever it finds there, nothing of the node's devices is left to the
    // pods it outranks or equals: they are all held in this view.
    for (const dra::Candidate& c : devices.candidates) updated->allocated.exclusive.insert(c.id);
  }
  if (out->fits()) {
    for (size_t i = 0; i < out->allocations.size(); ++i) {
      const std::string key = i < theirs.claims.size() ? dra::ClaimKey(theirs.claims[i]) : extended_key;
      if (!shared.contains(key)) {
        updated->allocated.Add(out->allocations[i]);
        continue;
      }
      for (dra::ResourceClaim& c : updated->claims) {
        if (dra::ClaimKey(c) == key) c.allocation = out->allocations[i];
      }
    }
  }
  for (const dra::ResourceClaim& c : theirs.claims) updated->added.insert(dra::ClaimKey(c));
  if (extended.has_value()) updated->added.insert(extended_key);
  state.WriteValue(kName, std::shared_ptr<const PodClaims>(std::move(updated)));
  return Status::Ok();
}

bool DynamicResources::ReleaseTerminating(PodClaims& view, const ClusterObjects& objects, const NodeInfo& node) const {
  std::set<std::string, std::less<>> leaving;  // UIDs of the node's terminating pods
  for (const PodRef& p : node.pods()) {
    if (p->meta.deletion_timestamp.has_value() && !p->meta.uid.empty()) leaving.insert(p->meta.uid);
  }
  if (leaving.empty()) return false;
  bool released = false;
  std::set<std::string, std::less<>> seen;
  for (const PodRef& p : node.pods()) {
    if (!leaving.contains(p->meta.uid)) continue;
    for (const dra::ResourceClaim& c : AllocatedClaimsOf(objects, *p)) {
      if (!seen.insert(dra::ClaimKey(c)).second) continue;
      const bool all_leaving = std::all_of(c.reserved_for.begin(), c.reserved_for.end(), [&](const dra::ConsumerReference& r) {
        return r.resource == "pods" && leaving.contains(r.uid);
      });
      if (!all_leaving) continue;
      view.allocated.Remove(*c.allocation);
      released = true;
    }
  }
  return released;
}

std::string DynamicResources::ExplainRejection(const CycleState& state, const Pod& pod, const NodeInfo& info) const {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr || info.node() == nullptr) return "";
  for (const dra::ResourceClaim& c : (*claims)->claims) {
    if (c.allocation.has_value() && !c.allocation->AvailableOn(*info.node())) {
      return StrCat("claim ", dra::ClaimKey(c), " is allocated already to devices node ", info.name(), " cannot use");
    }
  }
  const std::optional<ExtendedClaim> extended = ExtendedClaimOn(**claims, pod, *info.node());
  absl::StatusOr<dra::AllocationOutcome> out =
      AllocateOn(**claims, extended.has_value() ? &*extended : nullptr, *info.node(), Purpose::kFit);
  if (!out.ok()) return std::string(out.status().message());
  return out->reason;
}

Status DynamicResources::PreScore(CycleState& state, const Pod&, const std::vector<const NodeInfo*>&) {
  // With a GPU policy's workload in the state, the policy scores the pod's DRA units (UnitsOn).
  const bool claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName) != nullptr;
  return claims && GpuWorkloadOf(state) == nullptr ? Status::Ok() : Status::Skip();
}

DynamicResources::NodeChoice::NodeChoice(const CycleState& state, const Pod& pod, const NodeInfo& info,
                                         const dra::DeviceChoice& fallback)
    : NodeChoice(GpuWorkloadOf(state), pod, info, fallback) {}

DynamicResources::NodeChoice::NodeChoice(const gpu::FragModel* workload, const Pod& pod, const NodeInfo& info,
                                         const dra::DeviceChoice& fallback)
    : choice_(&fallback) {
  if (workload == nullptr) return;
  gpu::NodeShape node;  // the node outside its units: its CPU after the pod; no GPU model named
  node.cpu_free = info.FreeMilliCpu() - pod.requests.milli_cpu;
  fgd_.emplace(*workload, node);
  choice_ = &*fgd_;
}

std::optional<GpuUnitsOnNode> DynamicResources::UnitsOn(const CycleState& state, const Pod& pod, const NodeInfo& info,
                                                        const gpu::FragModel& workload) const {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr || info.node() == nullptr) return std::nullopt;
  const std::optional<ExtendedClaim> extended = ExtendedClaimOn(**claims, pod, *info.node());
  if ((*claims)->claims.empty() && !extended.has_value()) return std::nullopt;
  const NodeChoice choice(&workload, pod, info, keep_whole_);
  dra::NodeDevices devices;
  absl::StatusOr<dra::AllocationOutcome> out = AllocateOn(
      **claims, extended.has_value() ? &*extended : nullptr, *info.node(), Purpose::kChoose, &devices, choice.get());
  if (!out.ok() || !out->fits()) return std::nullopt;
  return GpuUnitsOnNode{.before = dra::UnitFreeMilli(devices, (*claims)->allocated, {}),
                        .after = dra::UnitFreeMilli(devices, (*claims)->allocated, out->picks)};
}

NodeLocalPlugin::ScoreUse DynamicResources::AppendScoreKey(const CycleState& state, const Pod&, std::string&) const {
  return state.ReadValue<std::shared_ptr<const PodClaims>>(kName) == nullptr ? ScoreUse::kUnused : ScoreUse::kOther;
}

ScoreResult DynamicResources::Score(const CycleState& state, const Pod& pod, const NodeInfo& info) const {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr || info.node() == nullptr) return {0, Status::Ok()};
  const std::optional<ExtendedClaim> extended = ExtendedClaimOn(**claims, pod, *info.node());
  if ((*claims)->claims.empty() && !extended.has_value()) return {0, Status::Ok()};
  dra::NodeDevices devices;
  absl::StatusOr<dra::AllocationOutcome> out =
      AllocateOn(**claims, extended.has_value() ? &*extended : nullptr, *info.node(), Purpose::kChoose, &devices);
  if (!out.ok() || !out->fits()) return {0, Status::Ok()};  // Filter let it through: a node changed meanwhile
  return {dra::PackingScore(devices, (*claims)->allocated, out->picks), Status::Ok()};
}

std::shared_ptr<const PodClaims> DynamicResources::WithLaterReservations(std::shared_ptr<const PodClaims> claims,
                                                                         const Pod& pod) const {
  std::set<std::string, std::less<>> own{PendingExtendedKey(pod)};
  for (const dra::ResourceClaim& c : claims->claims) own.insert(dra::ClaimKey(c));
  std::shared_ptr<PodClaims> updated;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, record] : in_flight_) {
    if (claims->in_flight_counted.contains(key) || claims->added.contains(key) || record.pod_uid == pod.meta.uid) continue;
    if (key == PendingExtendedKey(pod)) continue;
    if (updated == nullptr) updated = std::make_shared<PodClaims>(*claims);
    if (!own.contains(key)) {
      updated->allocated.Add(record.allocation);
      continue;
    }
    // A claim this pod shares (its PodGroup's), reserved by another member since PreFilter.
    for (dra::ResourceClaim& c : updated->claims) {
      if (dra::ClaimKey(c) == key) TakeSharedReservation(c, record.allocation, record.consumer);
    }
  }
  return updated == nullptr ? claims : updated;
}

Status DynamicResources::Reserve(CycleState& state, const Pod& pod, const std::string& node_name) {
  const auto* claims = state.ReadValue<std::shared_ptr<const PodClaims>>(kName);
  if (claims == nullptr) return Status::Ok();
  const NodeInfo* info = handle_.snapshot().Get(node_name);
  if (info == nullptr || info->node() == nullptr) {
    return Status::Error(StrCat("node \"", node_name, "\" is not in the snapshot"));
  }
  std::optional<ExtendedClaim> extended = ExtendedClaimOn(**claims, pod, *info->node());
  if ((*claims)->claims.empty() && !extended.has_value()) return Status::Ok();
  const std::shared_ptr<const PodClaims> view = WithLaterReservations(*claims, pod);
  const NodeChoice choice(state, pod, *info, keep_whole_);
  dra::NodeDevices devices;
  absl::StatusOr<dra::AllocationOutcome> out = AllocateOn(
      *view, extended.has_value() ? &*extended : nullptr, *info->node(), Purpose::kReserve, &devices, choice.get());
  if (!out.ok()) return Status::Unresolvable(std::string(out.status().message()));
  if (!out->fits()) return Status::Unresolvable(StrCat(kReasonCannotAllocate, ": ", out->reason));
  // A learned workload counts what the pod took (once per pod: a pod it counted already is not).
  const GpuWorkloadState* workload = state.ReadValue<GpuWorkloadState>(kGpuWorkloadStateKey);
  if (workload != nullptr && workload->learner != nullptr && !out->picks.empty()) {
    const GpuUnitsOnNode units{.before = dra::UnitFreeMilli(devices, view->allocated, {}),
                               .after = dra::UnitFreeMilli(devices, view->allocated, out->picks)};
    workload->learner->ObserveDraPlacement(pod, ClassOfUnits(units, pod.requests.milli_cpu));
  }
  Reservation r;
  r.claims = view->claims;  // with the allocations other members reserved since PreFilter
  r.bind_to = view->bind_to;
  r.allocations = std::move(out->allocations);
  if (extended.has_value()) {
    r.extended_allocation = std::move(r.allocations.back());
    r.allocations.pop_back();
    r.extended = std::move(extended);
  }
  {
    absl::MutexLock lock(&mu_);
    if (r.extended.has_value()) {
      in_flight_[PendingExtendedKey(pod)] =
          InFlightAllocation{.allocation = *r.extended_allocation, .pod_uid = pod.meta.uid, .awaiting_creation = true};
    }
    for (size_t i = 0; i < r.claims.size(); ++i) {
      const bool fresh = !r.claims[i].allocation.has_value();
      r.newly_allocated.push_back(fresh);
      r.written.push_back(false);
      if (fresh) {
        in_flight_[dra::ClaimKey(r.claims[i])] =
            InFlightAllocation{.allocation = r.allocations[i],
                               .pod_uid = pod.meta.uid,
                               .consumer = i < r.bind_to.size() ? r.bind_to[i] : PodReference(pod),
                               .reserved_version = r.claims[i].meta.resource_version};
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
  if (r->extended.has_value()) {
    {
      absl::MutexLock lock(&mu_);
      for (const std::string& key : {PendingExtendedKey(pod), r->extended_created.has_value()
                                                                  ? KeyOf(r->extended_created->namespace_, r->extended_created->name)
                                                                  : std::string()}) {
        auto it = in_flight_.find(key);
        if (it != in_flight_.end() && it->second.pod_uid == pod.meta.uid) in_flight_.erase(it);
      }
    }
    // The claim made for the pod goes (best effort; the next attempt deletes one left over).
    if (r->extended_created.has_value() && api != nullptr) (void)api->DeleteResourceClaim(*r->extended_created);
    r->extended_created.reset();
  }
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

void DynamicResources::MarkWritten(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (auto it = in_flight_.find(key); it != in_flight_.end()) {
    it->second.written = true;
    it->second.written_at = handle_.clock().Now();
  }
}

bool DynamicResources::RecordDone(const InFlightAllocation& record, const RawObject* stored, bool allocated,
                                  bool deleted) const {
  if (allocated) return true;
  if (stored == nullptr) {
    if (!record.awaiting_creation || deleted) return true;
    if (!record.written) return false;
    // Made, and not seen since: not delivered yet, or made and deleted between two looks (its
    // pod ran and ended). Its pod no longer in the snapshot (neither assumed nor bound) tells.
    const absl::Duration age = handle_.clock().Now() - record.written_at;
    return age > kUnseenCreatedLimit || (age > kUnseenCreatedGrace && !RunsInSnapshot(handle_.snapshot(), record.pod_uid));
  }
  if (!record.written || stored->meta.resource_version == record.reserved_version) return false;
  const json& meta = stored->json->value("metadata", json::object());
  const json& finalizers = meta.value("finalizers", json::array());
  return !(finalizers.is_array() &&
           std::find(finalizers.begin(), finalizers.end(), json(std::string(kResourceClaimFinalizer))) != finalizers.end());
}

Status DynamicResources::PreBind(CycleState& state, const Pod& pod, const std::string&) {
  Reservation* r = state.ReadMutableValue<Reservation>(std::string(kName) + "/reservation");
  if (r == nullptr) return Status::Ok();
  ClusterApi* api = handle_.api();
  if (api == nullptr) return Status::Error("allocating resource claims: no cluster to write to");
  for (size_t i = 0; i < r->claims.size(); ++i) {
    const dra::ResourceClaim& claim = r->claims[i];
    const dra::ConsumerReference consumer = i < r->bind_to.size() ? r->bind_to[i] : PodReference(pod);
    // Reserved for the pod or its PodGroup already (or by another member whose PreBind writes
    // it): nothing to write.
    if (!r->newly_allocated[i] && (ReservedFor(claim, pod) || Reserves(claim, consumer))) continue;
    std::vector<dra::ConsumerReference> reserved = claim.reserved_for;
    if (!Reserves(claim, consumer)) reserved.push_back(consumer);
    const json status = dra::EncodeClaimStatus(r->allocations[i], reserved);
    absl::Status st = api->WriteResourceClaimStatus(claim.meta, status.dump());
    if (!st.ok()) {
      return Status::Error(StrCat("writing the status of ResourceClaim ", dra::ClaimKey(claim), ": ", st.message()));
    }
    r->written[i] = true;
    if (r->newly_allocated[i]) MarkWritten(dra::ClaimKey(claim));
  }
  if (r->extended.has_value()) return CreateExtendedClaim(*r, pod, *api);
  return Status::Ok();
}

Status DynamicResources::CreateExtendedClaim(Reservation& r, const Pod& pod, ClusterApi& api) {
  absl::StatusOr<ObjectMeta> created = api.CreateResourceClaim(dra::EncodeExtendedResourceClaim(pod, r.extended->requests).dump());
  if (!created.ok()) {
    return Status::Error(StrCat("creating the ResourceClaim for the extended resources of pod ", pod.Key(), ": ",
                                created.status().message()));
  }
  r.extended_created = *created;
  const std::string key = KeyOf(created->namespace_, created->name);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = in_flight_.find(PendingExtendedKey(pod)); it != in_flight_.end()) {
      InFlightAllocation moved = std::move(it->second);
      in_flight_.erase(it);
      moved.reserved_version = created->resource_version;
      moved.created_uid = created->uid;
      in_flight_[key] = std::move(moved);  // still awaiting: the informer has not seen it
    }
  }
  const json status = dra::EncodeClaimStatus(*r.extended_allocation, {PodReference(pod)});
  if (absl::Status st = api.WriteResourceClaimStatus(*created, status.dump()); !st.ok()) {
    return Status::Error(StrCat("writing the status of ResourceClaim ", key, ": ", st.message()));
  }
  MarkWritten(key);
  const json mapping = dra::EncodeExtendedResourceClaimStatus(r.extended->requests, created->name);
  if (absl::Status st = api.WritePodExtendedResourceClaimStatus(pod, mapping.dump()); !st.ok()) {
    return Status::Error(StrCat("setting status.extendedResourceClaimStatus of pod ", pod.Key(), ": ", st.message()));
  }
  return Status::Ok();
}

}  // namespace tessel::dynamic_resources
