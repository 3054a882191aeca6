// The claim for a pod's extended resources backed by DRA (see extended_resources.h).
#include "scheduler/dra/extended_resources.h"

#include <algorithm>
#include <optional>
#include <set>

#include "scheduler/util/strings.h"

namespace tessel::dra {
namespace {

using nlohmann::json;

// The container's request for `resource` when it asks for more than `reusable` (requests of later
// long-lived containers an init container may use first) covers; its mappings either way.
std::optional<DeviceRequest> ContainerRequest(int index, const Container& container, const std::string& resource,
                                              const std::string& class_name,
                                              const std::vector<const DeviceRequest*>& reusable,
                                              std::vector<ExtendedResourceMapping>& mappings) {
  const int64_t milli = container.requests.Get(resource);
  if (milli <= 0 || milli % 1000 != 0) return std::nullopt;
  const int64_t wanted = milli / 1000;
  int64_t covered = 0;
  for (const DeviceRequest* r : reusable) {
    if (r == nullptr) continue;
    covered += r->exactly->count;
    mappings.push_back({container.name, resource, r->name});
    if (covered >= wanted) return std::nullopt;
  }
  // The resource's index among the container's requested names, sorted.
  int name_index = 0;
  for (const auto& [name, amount] : container.requests.Entries()) {
    if (name == resource) break;
    ++name_index;
  }
  DeviceRequest request;
  request.name = StrCat("container-", index, "-request-", name_index);
  request.exactly = DeviceAsk{.device_class_name = class_name, .mode = AllocationMode::kExactCount, .count = wanted - covered};
  mappings.push_back({container.name, resource, request.name});
  return request;
}

}  // namespace

ExtendedResourceClaim ExtendedResourceRequests(const Pod& pod,
                                               const std::map<std::string, std::string, std::less<>>& served) {
  std::vector<const Container*> containers;
  for (const Container& c : pod.init_containers) containers.push_back(&c);
  for (const Container& c : pod.containers) containers.push_back(&c);
  const size_t inits = pod.init_containers.size();
  auto long_lived = [&](size_t i) { return i >= inits || containers[i]->restart_always; };

  ExtendedResourceClaim out;
  for (const auto& [resource, class_name] : served) {  // sorted by resource name
    std::vector<std::optional<DeviceRequest>> by_container(containers.size());
    std::vector<ExtendedResourceMapping> long_mappings;
    for (size_t i = 0; i < containers.size(); ++i) {
      if (!long_lived(i)) continue;
      by_container[i] = ContainerRequest(static_cast<int>(i), *containers[i], resource, class_name, {}, long_mappings);
    }
    // Plain init containers: the largest of their own requests is made; all map to it.
    std::optional<DeviceRequest> largest;
    std::set<std::string> init_names;
    std::vector<ExtendedResourceMapping> init_mappings;
    for (size_t i = 0; i < inits; ++i) {
      if (long_lived(i)) continue;
      std::vector<const DeviceRequest*> reusable;
      for (size_t j = i; j < containers.size(); ++j) reusable.push_back(by_container[j] ? &*by_container[j] : nullptr);
      std::optional<DeviceRequest> r =
          ContainerRequest(static_cast<int>(i), *containers[i], resource, class_name, reusable, init_mappings);
      if (!r.has_value()) continue;
      init_names.insert(r->name);
      if (!largest.has_value() || largest->exactly->count < r->exactly->count) largest = std::move(r);
    }
    if (largest.has_value()) {
      for (ExtendedResourceMapping& m : init_mappings) {
        if (init_names.contains(m.request_name)) m.request_name = largest->name;
      }
      out.requests.push_back(*std::move(largest));
    }
    for (std::optional<DeviceRequest>& r : by_container) {
      if (r.has_value()) out.requests.push_back(*std::move(r));
    }
    out.mappings.insert(out.mappings.end(), long_mappings.begin(), long_mappings.end());
    out.mappings.insert(out.mappings.end(), init_mappings.begin(), init_mappings.end());
  }
  std::stable_sort(out.requests.begin(), out.requests.end(),
                   [](const DeviceRequest& a, const DeviceRequest& b) { return a.name < b.name; });
  return out;
}

json EncodeExtendedResourceClaim(const Pod& pod, const ExtendedResourceClaim& claim) {
  json requests = json::array();
  for (const DeviceRequest& r : claim.requests) {
    requests.push_back({{"name", r.name},
                        {"exactly",
                         {{"deviceClassName", r.exactly->device_class_name},
                          {"allocationMode", "ExactCount"},
                          {"count", r.exactly->count}}}});
  }
  json owner = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.meta.name}, {"uid", pod.meta.uid},
                {"controller", true}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata",
           {{"generateName", StrCat(pod.meta.name, "-extended-resources-")},
            {"namespace", pod.meta.namespace_},
            {"ownerReferences", json::array({owner})},
            {"annotations", {{std::string(kExtendedResourceClaimAnnotation), "true"}}}}},
          {"spec", {{"devices", {{"requests", requests}}}}}};
}

json EncodeExtendedResourceClaimStatus(const ExtendedResourceClaim& claim, std::string_view claim_name) {
  json mappings = json::array();
  for (const ExtendedResourceMapping& m : claim.mappings) {
    mappings.push_back({{"containerName", m.container_name}, {"resourceName", m.resource_name},
                        {"requestName", m.request_name}});
  }
  return {{"requestMappings", mappings}, {"resourceClaimName", claim_name}};
}

bool IsExtendedResourceClaimOf(const ResourceClaim& claim, const Pod& pod) {
  auto a = claim.meta.annotations.find(kExtendedResourceClaimAnnotation);
  if (a == claim.meta.annotations.end() || a->second != "true") return false;
  return std::any_of(claim.meta.owner_references.begin(), claim.meta.owner_references.end(),
                     [&](const OwnerReference& o) {
                       return o.controller && o.name == pod.meta.name && o.uid == pod.meta.uid;
                     });
}

}  // namespace tessel::dra
