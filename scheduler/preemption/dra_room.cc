// DRA devices in the arithmetic of moves (see dra_room.h).
#include "scheduler/preemption/dra_room.h"

#include <map>
#include <set>
#include <tuple>

#include "nlohmann/json.hpp"
#include "scheduler/framework/dra_extended.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/state/raw_json.h"

namespace tessel::preemption {
namespace {

using nlohmann::json;

// Whether the reference names `pod` (a uid on both sides must agree).
bool NamesPod(const json& ref, const Pod& pod) {
  const std::string uid = RawString(RawField(ref, "uid"));
  return RawString(RawField(ref, "name")) == pod.meta.name && (uid.empty() || pod.meta.uid.empty() || uid == pod.meta.uid);
}

}  // namespace

int64_t DraDeviceMilli(const Pod& pod) {
  int64_t milli = 0;
  for (const auto& [resource, amount] : pod.dra_charge.scalar) milli += amount;
  return milli;
}

int64_t AskedGpuMilli(const Pod& pod) { return gpu::ReadGpuRequest(pod).total_milli() + DraDeviceMilli(pod); }

bool ClaimsAllOwn(const Pod& pod, const ClusterObjects& objects) {
  for (const PodResourceClaim& c : pod.resource_claims) {
    if (!c.resource_claim_name.empty() || !c.generated_claim_name.has_value()) return false;
    if (c.generated_claim_name->empty()) continue;  // the pod needs no claim for it
    const RawObject* raw = objects.RawOf(RawKind::kResourceClaim, StrCat(pod.meta.namespace_, "/", *c.generated_claim_name));
    if (raw == nullptr) return false;
    bool owned = false;
    const json& owners = RawField(RawField(*raw->json, "metadata"), "ownerReferences");
    if (owners.is_array()) {
      for (const json& o : owners) {
        const json& controller = RawField(o, "controller");
        owned = owned || (RawString(RawField(o, "kind")) == "Pod" && controller.is_boolean() && controller.get<bool>() &&
                          NamesPod(o, pod));
      }
    }
    if (!owned) return false;
    const json& reserved = RawField(RawField(*raw->json, "status"), "reservedFor");
    if (reserved.is_array()) {
      for (const json& r : reserved) {
        if (RawString(RawField(r, "resource")) != "pods" || !NamesPod(r, pod)) return false;
      }
    }
  }
  return true;
}

bool UsesDra(const Pod& pod, const ClusterObjects& objects) {
  if (!pod.resource_claims.empty()) return true;
  const ObjectMap<RawObject>& classes = objects.Raw(RawKind::kDeviceClass);
  if (classes.empty()) return false;
  for (const auto& [resource, amount] : pod.requests.scalar) {
    if (amount <= 0 || !MayBeDraExtendedResource(resource)) continue;
    if (resource.starts_with(kDeviceClassResourcePrefix)) {
      if (classes.contains(std::string_view(resource).substr(kDeviceClassResourcePrefix.size()))) return true;
      continue;
    }
    for (const auto& [name, raw] : classes) {
      if (RawString(RawField(RawField(*raw.json, "spec"), "extendedResourceName")) == resource) return true;
    }
  }
  return false;
}

StringKeyedMap<int64_t> DraFreeMilliByNode(const ClusterObjects& objects) {
  using PoolKey = std::pair<std::string, std::string>;  // driver, pool
  std::map<PoolKey, int64_t> newest;
  auto pool_of = [](const json& spec) {
    const json& pool = RawField(spec, "pool");
    const json& generation = RawField(pool, "generation");
    return std::make_pair(PoolKey{RawString(RawField(spec, "driver")), RawString(RawField(pool, "name"))},
                          generation.is_number_integer() ? generation.get<int64_t>() : int64_t{0});
  };
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const auto [pool, generation] = pool_of(RawField(*raw.json, "spec"));
    auto [it, added] = newest.emplace(pool, generation);
    if (!added && generation > it->second) it->second = generation;
  }
  StringKeyedMap<int64_t> free;
  std::map<std::tuple<std::string, std::string, std::string>, std::string> node_of;  // driver, pool, device
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const json& spec = RawField(*raw.json, "spec");
    const std::string node = RawString(RawField(spec, "nodeName"));
    const auto [pool, generation] = pool_of(spec);
    if (node.empty() || pool.first.empty() || newest[pool] != generation) continue;
    const json& devices = RawField(spec, "devices");
    if (!devices.is_array()) continue;
    for (const json& d : devices) {
      if (node_of.emplace(std::make_tuple(pool.first, pool.second, RawString(RawField(d, "name"))), node).second) {
        free[node] += 1000;
      }
    }
  }
  std::set<std::tuple<std::string, std::string, std::string>> held;
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceClaim)) {
    const json& results = RawField(RawField(RawField(RawField(*raw.json, "status"), "allocation"), "devices"), "results");
    if (!results.is_array()) continue;
    for (const json& r : results) {
      if (RawField(r, "adminAccess").is_boolean() && RawField(r, "adminAccess").get<bool>()) continue;
      auto device = std::make_tuple(RawString(RawField(r, "driver")), RawString(RawField(r, "pool")),
                                    RawString(RawField(r, "device")));
      auto it = node_of.find(device);
      if (it != node_of.end() && held.insert(std::move(device)).second) free[it->second] -= 1000;
    }
  }
  return free;
}

}  // namespace tessel::preemption
