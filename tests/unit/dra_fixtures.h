// Small builders and a fake selector language for the DRA allocator's tests.
//
// FakeMatcher reads "true", "fail" (a run-time error), "driver=D", "domain/name=value" and
// "domain/name!=value", joined by " && "; an attribute the device lacks does not match.
//
//   DraWorld w;
//   w.slices.push_back(SliceOn("node-1", "node-1", {Gpu("gpu-0", {{"model", "A100"}})}));
//   w.classes["gpu"] = Class("gpu", {"driver=gpu.example.com"});
//   ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "gpu", .count = 1})});
//   absl::StatusOr<AllocationOutcome> out = w.Run({&claim});
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "scheduler/api/quantity.h"
#include "scheduler/dra/allocator.h"
#include "scheduler/dra/pools.h"
#include "scheduler/util/strings.h"

namespace tessel::dra::testing {

inline constexpr std::string_view kDriver = "gpu.example.com";

inline std::string AttributeText(const AttributeValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return std::get<SemVer>(v).text;
}

class FakeMatcher : public DeviceMatcher {
 public:
  absl::StatusOr<bool> Matches(std::string_view expression, const DeviceView& device) const override {
    ++calls;
    for (absl::string_view part : absl::StrSplit(absl::string_view(expression.data(), expression.size()), " && ")) {
      std::string term(part);
      if (term == "true") continue;
      if (term == "fail") return absl::InvalidArgumentError("no such key: fail");
      if (term.rfind("driver=", 0) == 0) {
        if (device.driver != term.substr(7)) return false;
        continue;
      }
      const bool negate = term.find("!=") != std::string::npos;
      const size_t eq = negate ? term.find("!=") : term.find('=');
      if (eq == std::string::npos) return absl::InvalidArgumentError(StrCat("fake selector: ", term));
      const std::string qualified = term.substr(0, eq);
      const std::string want = term.substr(eq + (negate ? 2 : 1));
      const size_t slash = qualified.find('/');
      auto domain = device.attributes->find(qualified.substr(0, slash));
      if (domain == device.attributes->end()) return false;
      auto value = domain->second.find(qualified.substr(slash + 1));
      if (value == domain->second.end()) return false;
      if ((AttributeText(value->second) == want) == negate) return false;
    }
    return true;
  }
  mutable int calls = 0;
};

// A device of kDriver with attributes under the driver's domain.
inline Device Gpu(std::string name, std::vector<std::pair<std::string, AttributeValue>> attributes = {}) {
  Device d;
  d.name = std::move(name);
  for (auto& [key, value] : attributes) d.attributes[std::string(kDriver)][key] = std::move(value);
  return d;
}

inline Device WithCapacity(Device d, std::string name, int64_t milli,
                           std::optional<CapacityRequestPolicy> policy = std::nullopt) {
  d.capacity[name] = DeviceCapacity{.value = milli, .text = FormatMilli(milli), .request_policy = policy};
  d.capacity_view[std::string(kDriver)][name] = FormatMilli(milli);
  return d;
}

inline Device Consuming(Device d, std::string set, Amounts counters) {
  d.consumes_counters.push_back({.counter_set = std::move(set), .counters = std::move(counters)});
  return d;
}

inline ResourceSlice SliceOn(std::string node, std::string pool, std::vector<Device> devices,
                             int64_t generation = 1, int64_t count = 1, std::string name = "") {
  ResourceSlice s;
  s.meta.name = name.empty() ? StrCat(pool, "-g", generation) : name;
  s.driver = std::string(kDriver);
  s.pool = std::move(pool);
  s.pool_generation = generation;
  s.pool_slice_count = count;
  s.node_selection.node_name = std::move(node);
  s.devices = std::move(devices);
  return s;
}

inline DeviceClass Class(std::string name, std::vector<std::string> selectors = {}) {
  DeviceClass c;
  c.meta.name = std::move(name);
  c.selectors = std::move(selectors);
  return c;
}

inline DeviceRequest Exactly(std::string name, DeviceAsk ask) {
  return DeviceRequest{.name = std::move(name), .exactly = std::move(ask)};
}

inline DeviceRequest FirstAvailable(std::string name, std::vector<DeviceSubRequest> subs) {
  return DeviceRequest{.name = std::move(name), .first_available = std::move(subs)};
}

inline ResourceClaim Claim(std::string name, std::vector<DeviceRequest> requests,
                           std::vector<DeviceConstraint> constraints = {}) {
  ResourceClaim c;
  c.meta.name = std::move(name);
  c.meta.namespace_ = "team-a";
  c.meta.uid = StrCat("uid-", c.meta.name);
  c.spec.requests = std::move(requests);
  c.spec.constraints = std::move(constraints);
  return c;
}

inline Node NodeNamed(std::string name, StringMap labels = {}) {
  Node n;
  n.meta.name = std::move(name);
  n.meta.labels = std::move(labels);
  return n;
}

// A node, the slices, classes and held devices around it, and a way to run the allocator.
struct DraWorld {
  Node node = NodeNamed("node-1");
  std::deque<ResourceSlice> slices;
  DeviceClasses classes;
  AllocatedDevices held;
  FakeMatcher matcher;
  NodeDevices devices;  // rebuilt by each run
  int next_share = 0;

  AllocatorOptions Options() {
    return AllocatorOptions{.matcher = &matcher, .new_share_id = [this] {
                              return StrCat("00000000-0000-4000-8000-", fmt::format("{:012}", ++next_share));
                            }};
  }
  const NodeDevices& Gather() {
    std::vector<const ResourceSlice*> list;
    for (const ResourceSlice& s : slices) list.push_back(&s);
    devices = GatherNodeDevices(node, list);
    return devices;
  }
  AllocationInput Input(std::vector<const ResourceClaim*> claims) {
    Gather();
    return AllocationInput{.node = node, .claims = std::move(claims), .devices = devices,
                           .classes = classes, .allocated = held};
  }
  absl::StatusOr<AllocationOutcome> Run(std::vector<const ResourceClaim*> claims) {
    return Allocate(Input(std::move(claims)), Options());
  }
  absl::StatusOr<AllocationOutcome> Run(std::vector<const ResourceClaim*> claims, AllocatorOptions options) {
    return Allocate(Input(std::move(claims)), options);
  }
};

// The devices of an allocation, as "pool/device" names, in result order.
inline std::vector<std::string> Names(const AllocationResult& a) {
  std::vector<std::string> out;
  for (const DeviceResult& r : a.devices) out.push_back(StrCat(r.device.pool, "/", r.device.device));
  return out;
}

}  // namespace tessel::dra::testing
