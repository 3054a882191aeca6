// The objects of Dynamic Resource Allocation (resource.k8s.io/v1, as Kubernetes 1.34-1.37 serve
// them), reduced to what allocation needs: ResourceSlices publish devices in pools, DeviceClasses
// name kinds of device, ResourceClaims ask for devices and carry their allocation. Plain values;
// dra/decode.h builds them from JSON and encodes an allocation back.
//
// Every amount (a capacity, a counter, a capacity request) is an exact integer in thousandths of
// its unit (api/quantity.h's ParseMilli: "80Gi" -> 85899345920000, "500m" -> 500): exact for every
// quantity with at most three decimals, which is what DRA's fractional ranges allow.
//
//   absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(json);
//   for (const Device& device : slice->devices) LookupAttribute(device, slice->driver, "gpu.example.com/model");
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/dra/device_view.h"

namespace tessel::dra {

// Amounts keyed by a capacity's or counter's name as published ("memory", "gpu.example.com/sm").
using Amounts = std::map<std::string, int64_t, std::less<>>;

// The most devices one claim's allocation may hold (resource.k8s.io/v1 AllocationResultsMaxSize).
inline constexpr int kMaxDevicesPerClaim = 32;

struct DeviceId {
  std::string driver;
  std::string pool;
  std::string device;
  auto operator<=>(const DeviceId&) const = default;
};
// "driver/pool/device", as Kubernetes prints a device.
std::string FormatDeviceId(const DeviceId& id);

// A device taint (DeviceTaint). Only NoSchedule and NoExecute keep a device from being
// allocated; "None" and effects of later releases are informational.
struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;
};

// A request's toleration (DeviceToleration); `effect` empty tolerates every effect, `key` empty
// with Exists tolerates every taint.
struct DeviceToleration {
  enum class Operator { kEqual, kExists };
  std::string key;
  Operator op = Operator::kEqual;
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
};
bool Tolerates(const DeviceToleration& toleration, const DeviceTaint& taint);
// The taint keeps a device from a request with these tolerations (NoSchedule, NoExecute).
bool TaintBlocks(const DeviceTaint& taint, const std::vector<DeviceToleration>& tolerations);

// CapacityRequestPolicy: how a request consumes a capacity of a device that allows multiple
// allocations. At most one of valid_values (ascending) and a range (min set) is given.
struct CapacityRequestPolicy {
  std::optional<int64_t> default_amount;
  std::vector<int64_t> valid_values;
  std::optional<int64_t> range_min;
  std::optional<int64_t> range_max;
  std::optional<int64_t> range_step;
};

struct DeviceCapacity {
  int64_t value = 0;
  std::string text;  // the quantity as published, for selectors (DeviceView)
  std::optional<CapacityRequestPolicy> request_policy;
};

// consumesCounters: what a device takes from one of its pool's counter sets while allocated.
struct CounterConsumption {
  std::string counter_set;
  Amounts counters;
};

// Where a device (or a whole slice) can be used: exactly one of these is set in valid objects.
struct NodeSelection {
  std::string node_name;
  std::optional<std::vector<NodeSelectorTerm>> node_selector;
  bool all_nodes = false;
  bool Matches(const Node& node) const;
};

struct Device {
  std::string name;
  // Domain -> name -> value; a name published without a domain is under the driver's domain.
  DomainMap<AttributeValue> attributes;
  std::map<std::string, DeviceCapacity, std::less<>> capacity;  // by name as published
  DomainMap<std::string> capacity_view;  // the capacities as selectors read them
  std::vector<CounterConsumption> consumes_counters;
  std::vector<DeviceTaint> taints;
  bool allow_multiple_allocations = false;
  bool binds_to_node = false;
  NodeSelection node_selection;  // only with the slice's perDeviceNodeSelection
  std::vector<std::string> binding_conditions;
};

struct CounterSet {
  std::string name;
  Amounts counters;
};

struct ResourceSlice {
  ObjectMeta meta;
  std::string driver;
  std::string pool;
  int64_t pool_generation = 0;
  int64_t pool_slice_count = 0;
  NodeSelection node_selection;
  bool per_device_node_selection = false;
  std::vector<Device> devices;
  std::vector<CounterSet> shared_counters;
  // Non-empty: the slice did not decode (why); only its driver, pool, generation and slice count
  // are known (SliceIdentity), and its pool is invalid wherever it is seen.
  std::string undecodable;
};

// The attribute `qualified` ("domain/name") of a device of `driver`, as matchAttribute reads it:
// a name without a domain stands for the driver's domain. nullptr when the device has none.
const AttributeValue* LookupAttribute(const Device& device, std::string_view driver,
                                      std::string_view qualified);
// What a selector sees of the device.
DeviceView ViewOf(const Device& device, std::string_view driver);

// A device configuration (DeviceConfiguration.opaque) and the requests it applies to (all when
// empty). Kept opaque: the scheduler copies it into the allocation, the driver reads it.
struct DeviceConfig {
  std::vector<std::string> requests;
  std::string driver;
  nlohmann::json parameters;
};

struct DeviceClass {
  ObjectMeta meta;
  std::vector<std::string> selectors;  // CEL expressions
  std::vector<DeviceConfig> config;
  std::string extended_resource_name;  // "" when unset
};

enum class AllocationMode { kExactCount, kAll };

// What an `exactly` request or a `firstAvailable` subrequest asks for.
struct DeviceAsk {
  std::string device_class_name;
  std::vector<std::string> selectors;  // CEL expressions
  AllocationMode mode = AllocationMode::kExactCount;
  int64_t count = 1;
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  Amounts capacity_requests;  // capacity.requests, by capacity name
};

struct DeviceSubRequest {
  std::string name;
  DeviceAsk ask;
};

// Exactly one of `exactly` and `first_available` is set.
struct DeviceRequest {
  std::string name;
  std::optional<DeviceAsk> exactly;
  std::vector<DeviceSubRequest> first_available;
};

// A constraint over the devices of the named requests (all of the claim's when empty); a name
// may be "request" or "request/subrequest". Exactly one attribute is set.
struct DeviceConstraint {
  std::vector<std::string> requests;
  std::string match_attribute;     // fully qualified, "" when unset
  std::string distinct_attribute;  // fully qualified, "" when unset
};

struct ResourceClaimSpec {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceConfig> config;
};

// One allocated device (DeviceRequestAllocationResult).
struct DeviceResult {
  std::string request;  // "request" or "request/subrequest"
  DeviceId device;
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  Amounts consumed_capacity;  // only for devices that allow multiple allocations
  std::string share_id;       // "" unless the device allows multiple allocations
  std::vector<std::string> binding_conditions;
  friend bool operator==(const DeviceResult& a, const DeviceResult& b) {
    return a.request == b.request && a.device == b.device && a.admin_access == b.admin_access &&
           a.consumed_capacity == b.consumed_capacity && a.share_id == b.share_id;
  }
};

// Where the configuration in an allocation came from (AllocationConfigSource).
enum class ConfigSource { kFromClass, kFromClaim };
struct AllocatedConfig {
  ConfigSource source = ConfigSource::kFromClaim;
  DeviceConfig config;
};

// status.allocation.
struct AllocationResult {
  std::vector<DeviceResult> devices;
  std::vector<AllocatedConfig> config;
  // The nodes that can use the devices; nullopt means every node.
  std::optional<std::vector<NodeSelectorTerm>> node_selector;
  bool AvailableOn(const Node& node) const;
};

// A status.reservedFor entry: the pod (or other consumer) that uses the claim.
struct ConsumerReference {
  std::string api_group;
  std::string resource;
  std::string name;
  std::string uid;
};

struct ResourceClaim {
  ObjectMeta meta;
  ResourceClaimSpec spec;
  std::optional<AllocationResult> allocation;
  std::vector<ConsumerReference> reserved_for;
};
// "namespace/name".
std::string ClaimKey(const ResourceClaim& claim);

struct ResourceClaimTemplate {
  ObjectMeta meta;
  ObjectMeta claim_meta;  // spec.metadata: labels and annotations for the claims made from it
  ResourceClaimSpec spec;
};

}  // namespace tessel::dra
