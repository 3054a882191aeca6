// What a DRA device selector sees of a device (resource.k8s.io/v1 Device): its driver, its
// typed attributes and its capacities, both keyed by domain ("gpu.nvidia.com") and then by name
// ("model"), as CEL reads them: device.attributes["gpu.nvidia.com"].model. A name published
// without a domain in a ResourceSlice belongs to the driver's domain. The CEL evaluator
// (dra/cel) reads devices only through this view; the allocator (dra/) builds it from slices.
//
//   DeviceView view{.driver = "gpu.example.com", .attributes = &attrs, .capacity = &cap};
//   absl::StatusOr<bool> match = program.Matches(view);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace tessel::dra {

// A semantic version attribute (DeviceAttribute.version), the text as published ("1.2.3-rc.1").
struct SemVer {
  std::string text;
  friend bool operator==(const SemVer&, const SemVer&) = default;
};

// One DeviceAttribute: exactly one of int, bool, string, version.
using AttributeValue = std::variant<int64_t, bool, std::string, SemVer>;

// Domain -> name -> value.
template <typename V>
using DomainMap = std::map<std::string, std::map<std::string, V, std::less<>>, std::less<>>;

struct DeviceView {
  std::string_view driver;
  const DomainMap<AttributeValue>* attributes = nullptr;
  // Capacity values as Kubernetes quantities, the text as published ("80Gi", "1500m").
  const DomainMap<std::string>* capacity = nullptr;
  bool allow_multiple_allocations = false;
};

}  // namespace tessel::dra
