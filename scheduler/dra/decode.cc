// resource.k8s.io/v1 JSON -> DRA objects, and allocations back to JSON. Every field goes
// through api's FieldDecoder, so an error carries the object and the field's path.
#include "scheduler/dra/decode.h"

#include <algorithm>
#include <limits>

#include "scheduler/api/decode.h"
#include "scheduler/api/quantity.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::dra {

using nlohmann::json;

namespace {

std::string Path(std::string_view base, std::string_view key) { return StrCat(base, ".", key); }

// A resource.Quantity (a string, or a plain integer) in milli-units; nullopt when bad.
std::optional<int64_t> QuantityValue(FieldDecoder& d, const json& v, std::string_view path,
                                     std::string* text = nullptr) {
  std::string s;
  if (v.is_string()) {
    s = v.get<std::string>();
  } else if (v.is_number_integer()) {
    s = v.dump();
  } else {
    d.Fail(path, StrCat("expected a quantity, got ", v.dump()));
    return std::nullopt;
  }
  absl::StatusOr<int64_t> milli = ParseMilli(s);
  if (!milli.ok()) {
    d.Fail(path, std::string(milli.status().message()));
    return std::nullopt;
  }
  if (*milli < 0) {
    d.Fail(path, StrCat("negative quantity \"", s, "\""));
    return std::nullopt;
  }
  if (text != nullptr) *text = s;
  return *milli;
}

// The quantity under `key`; nullopt when absent, null or bad.
std::optional<int64_t> Quantity(FieldDecoder& d, const json& parent, std::string_view key,
                                std::string_view path, std::string* text = nullptr) {
  auto it = parent.is_object() ? parent.find(key) : parent.end();
  if (it == parent.end() || it->is_null()) return std::nullopt;
  return QuantityValue(d, *it, path, text);
}

std::vector<std::string> Strings(FieldDecoder& d, const json& parent, std::string_view key,
                                 std::string_view path) {
  std::vector<std::string> out;
  d.ForEach(parent, key, path, [&](const json& item, const std::string& p) {
    if (!item.is_string()) {
      d.Fail(p, "expected a string");
      return;
    }
    out.push_back(item.get<std::string>());
  });
  return out;
}

// A map of name -> {"value": quantity} (counters).
Amounts CounterMap(FieldDecoder& d, const json& parent, std::string_view key, std::string_view path) {
  Amounts out;
  const json* m = d.Object(parent, key, path);
  if (m == nullptr) return out;
  for (const auto& [name, counter] : m->items()) {
    std::string p = Path(path, name);
    std::optional<int64_t> value = Quantity(d, counter, "value", Path(p, "value"));
    if (!value.has_value() && d.ok()) d.Fail(Path(p, "value"), "missing");
    out[name] = value.value_or(0);
  }
  return out;
}

// A map of name -> quantity (capacity requests, consumed capacity).
Amounts QuantityMap(FieldDecoder& d, const json& parent, std::string_view key, std::string_view path) {
  Amounts out;
  const json* m = d.Object(parent, key, path);
  if (m == nullptr) return out;
  for (const auto& [name, value] : m->items()) {
    out[name] = Quantity(d, *m, name, Path(path, name)).value_or(0);
  }
  return out;
}

// {domain, name} of a qualified name; the driver's domain when it has none.
std::pair<std::string, std::string> SplitQualified(std::string_view name, std::string_view driver) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return {std::string(driver), std::string(name)};
  return {std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

std::optional<AttributeValue> Attribute(FieldDecoder& d, const json& a, std::string_view path) {
  if (!a.is_object()) {
    d.Fail(path, "expected an object");
    return std::nullopt;
  }
  for (std::string_view list : {"ints", "bools", "strings", "versions"}) {
    if (a.contains(list) && !a[std::string(list)].is_null()) {
      d.Fail(Path(path, list), "list-valued attributes are not supported by Tessel yet");
      return std::nullopt;
    }
  }
  std::optional<AttributeValue> out;
  int set = 0;
  if (auto it = a.find("int"); it != a.end() && !it->is_null()) {
    ++set;
    if (!it->is_number_integer()) d.Fail(Path(path, "int"), StrCat("expected an integer, got ", it->dump()));
    else out = it->get<int64_t>();
  }
  if (auto it = a.find("bool"); it != a.end() && !it->is_null()) {
    ++set;
    if (!it->is_boolean()) d.Fail(Path(path, "bool"), StrCat("expected true or false, got ", it->dump()));
    else out = it->get<bool>();
  }
  if (auto it = a.find("string"); it != a.end() && !it->is_null()) {
    ++set;
    if (!it->is_string()) d.Fail(Path(path, "string"), StrCat("expected a string, got ", it->dump()));
    else out = it->get<std::string>();
  }
  if (auto it = a.find("version"); it != a.end() && !it->is_null()) {
    ++set;
    if (!it->is_string()) d.Fail(Path(path, "version"), StrCat("expected a string, got ", it->dump()));
    else out = SemVer{it->get<std::string>()};
  }
  if (set != 1) {
    d.Fail(path, "must have exactly one of int, bool, string, version");
    return std::nullopt;
  }
  return out;
}

std::optional<CapacityRequestPolicy> RequestPolicy(FieldDecoder& d, const json& capacity,
                                                   std::string_view path) {
  const json* p = d.Object(capacity, "requestPolicy", path);
  if (p == nullptr) return std::nullopt;
  CapacityRequestPolicy policy;
  policy.default_amount = Quantity(d, *p, "default", Path(path, "default"));
  d.ForEach(*p, "validValues", Path(path, "validValues"), [&](const json& v, const std::string& vp) {
    std::optional<int64_t> value = QuantityValue(d, v, vp);
    if (value.has_value()) policy.valid_values.push_back(*value);
  });
  if (!std::is_sorted(policy.valid_values.begin(), policy.valid_values.end())) {
    d.Fail(Path(path, "validValues"), "must be sorted in ascending order");
  }
  if (const json* range = d.Object(*p, "validRange", Path(path, "validRange"))) {
    const std::string rp = Path(path, "validRange");
    policy.range_min = Quantity(d, *range, "min", Path(rp, "min"));
    policy.range_max = Quantity(d, *range, "max", Path(rp, "max"));
    policy.range_step = Quantity(d, *range, "step", Path(rp, "step"));
    if (!policy.range_min.has_value() && d.ok()) d.Fail(Path(rp, "min"), "missing");
    if (policy.range_step.has_value() && *policy.range_step == 0) {
      d.Fail(Path(rp, "step"), "must be positive");
    }
  }
  if (!policy.valid_values.empty() && policy.range_min.has_value()) {
    d.Fail(path, "must not set both validValues and validRange");
  }
  return policy;
}

NodeSelection Selection(FieldDecoder& d, const json& parent, std::string_view path) {
  NodeSelection s;
  s.node_name = d.String(parent, "nodeName", Path(path, "nodeName"));
  s.node_selector = DecodeNodeSelector(d, parent, "nodeSelector", Path(path, "nodeSelector"));
  s.all_nodes = d.Bool(parent, "allNodes", Path(path, "allNodes"));
  return s;
}

int SetCount(const NodeSelection& s) {
  return int{!s.node_name.empty()} + int{s.node_selector.has_value()} + int{s.all_nodes};
}

Device DecodeDevice(FieldDecoder& d, const json& j, std::string_view driver, std::string_view path,
                    bool per_device_node_selection) {
  Device device;
  device.name = d.String(j, "name", Path(path, "name"));
  if (device.name.empty() && d.ok()) d.Fail(Path(path, "name"), "missing");
  const std::string attr_path = Path(path, "attributes");
  if (const json* attrs = d.Object(j, "attributes", attr_path)) {
    for (const auto& [name, value] : attrs->items()) {
      std::optional<AttributeValue> v = Attribute(d, value, Path(attr_path, name));
      if (!v.has_value()) continue;
      auto [domain, id] = SplitQualified(name, driver);
      device.attributes[domain][id] = std::move(*v);
    }
  }
  const std::string cap_path = Path(path, "capacity");
  if (const json* caps = d.Object(j, "capacity", cap_path)) {
    for (const auto& [name, value] : caps->items()) {
      const std::string p = Path(cap_path, name);
      DeviceCapacity cap;
      std::optional<int64_t> amount = Quantity(d, value, "value", Path(p, "value"), &cap.text);
      if (!amount.has_value() && d.ok()) d.Fail(Path(p, "value"), "missing");
      cap.value = amount.value_or(0);
      cap.request_policy = RequestPolicy(d, value, Path(p, "requestPolicy"));
      auto [domain, id] = SplitQualified(name, driver);
      device.capacity_view[domain][id] = cap.text;
      device.capacity[name] = std::move(cap);
    }
  }
  device.consumes_counters = d.List<CounterConsumption>(
      j, "consumesCounters", Path(path, "consumesCounters"), [&](const json& c, const std::string& p) {
        if (c.contains("compatibilityGroups")) {
          d.Fail(Path(p, "compatibilityGroups"), "compatibility groups are not supported by Tessel yet");
        }
        return CounterConsumption{.counter_set = d.String(c, "counterSet", Path(p, "counterSet")),
                                  .counters = CounterMap(d, c, "counters", Path(p, "counters"))};
      });
  device.taints = d.List<DeviceTaint>(j, "taints", Path(path, "taints"), [&](const json& t, const std::string& p) {
    DeviceTaint taint{.key = d.String(t, "key", Path(p, "key")),
                      .value = d.String(t, "value", Path(p, "value")),
                      .effect = d.String(t, "effect", Path(p, "effect"))};
    if (taint.key.empty() && d.ok()) d.Fail(Path(p, "key"), "missing");
    if (taint.effect.empty() && d.ok()) d.Fail(Path(p, "effect"), "missing");
    return taint;
  });
  device.allow_multiple_allocations =
      d.Bool(j, "allowMultipleAllocations", Path(path, "allowMultipleAllocations"));
  device.binds_to_node = d.Bool(j, "bindsToNode", Path(path, "bindsToNode"));
  device.binding_conditions = Strings(d, j, "bindingConditions", Path(path, "bindingConditions"));
  device.node_selection = Selection(d, j, path);
  const int selected = SetCount(device.node_selection);
  if (per_device_node_selection && selected != 1) {
    d.Fail(path, "with spec.perDeviceNodeSelection, exactly one of nodeName, nodeSelector, allNodes must be set");
  } else if (!per_device_node_selection && selected != 0) {
    d.Fail(path, "nodeName, nodeSelector and allNodes need spec.perDeviceNodeSelection");
  }
  for (const auto& [name, cap] : device.capacity) {
    if (cap.request_policy.has_value() && !device.allow_multiple_allocations) {
      d.Fail(Path(Path(cap_path, name), "requestPolicy"), "needs allowMultipleAllocations");
    }
  }
  return device;
}

std::vector<DeviceToleration> Tolerations(FieldDecoder& d, const json& parent, std::string_view path) {
  return d.List<DeviceToleration>(parent, "tolerations", path, [&](const json& t, const std::string& p) {
    DeviceToleration tol;
    DecodeTolerationFields(d, t, p, tol);
    tol.effect = d.String(t, "effect", Path(p, "effect"));
    if (tol.key.empty() && tol.op != DeviceToleration::Operator::kExists) {
      d.Fail(Path(p, "operator"), "must be Exists when the key is empty");
    }
    return tol;
  });
}

std::vector<std::string> Selectors(FieldDecoder& d, const json& parent, std::string_view path) {
  std::vector<std::string> out;
  d.ForEach(parent, "selectors", path, [&](const json& selector, const std::string& p) {
    const json* cel = d.Object(selector, "cel", Path(p, "cel"));
    if (cel == nullptr) {
      if (d.ok()) d.Fail(Path(p, "cel"), "missing (the only selector type)");
      return;
    }
    std::string expression = d.String(*cel, "expression", Path(p, "cel.expression"));
    if (expression.empty() && d.ok()) d.Fail(Path(p, "cel.expression"), "missing");
    out.push_back(std::move(expression));
  });
  return out;
}

DeviceAsk Ask(FieldDecoder& d, const json& j, std::string_view path) {
  DeviceAsk ask;
  ask.device_class_name = d.String(j, "deviceClassName", Path(path, "deviceClassName"));
  if (ask.device_class_name.empty() && d.ok()) d.Fail(Path(path, "deviceClassName"), "missing");
  ask.selectors = Selectors(d, j, Path(path, "selectors"));
  const std::string mode = d.String(j, "allocationMode", Path(path, "allocationMode"), "ExactCount");
  const bool has_count = j.contains("count") && !j["count"].is_null();
  if (mode == "All") {
    ask.mode = AllocationMode::kAll;
    ask.count = 0;
    if (has_count && d.Int(j, "count", Path(path, "count")) != 0) {
      d.Fail(Path(path, "count"), "must not be set with allocationMode All");
    }
  } else if (mode == "ExactCount") {
    ask.count = d.Int(j, "count", Path(path, "count"), 1);
    if (ask.count < 1) d.Fail(Path(path, "count"), StrCat("must be at least 1, got ", ask.count));
  } else {
    d.Fail(Path(path, "allocationMode"), StrCat("unknown mode \"", mode, "\" (want ExactCount or All)"));
  }
  ask.admin_access = d.Bool(j, "adminAccess", Path(path, "adminAccess"));
  ask.tolerations = Tolerations(d, j, Path(path, "tolerations"));
  if (const json* cap = d.Object(j, "capacity", Path(path, "capacity"))) {
    ask.capacity_requests = QuantityMap(d, *cap, "requests", Path(path, "capacity.requests"));
  }
  if (j.contains("derivedAttributes")) {
    d.Fail(Path(path, "derivedAttributes"), "derived attributes are not supported by Tessel yet");
  }
  return ask;
}

DeviceConfig Config(FieldDecoder& d, const json& c, std::string_view path) {
  DeviceConfig config;
  config.requests = Strings(d, c, "requests", Path(path, "requests"));
  if (const json* opaque = d.Object(c, "opaque", Path(path, "opaque"))) {
    config.driver = d.String(*opaque, "driver", Path(path, "opaque.driver"));
    if (auto it = opaque->find("parameters"); it != opaque->end()) config.parameters = *it;
  } else if (d.ok()) {
    d.Fail(Path(path, "opaque"), "missing (the only configuration type)");
  }
  return config;
}

std::vector<DeviceConfig> Configs(FieldDecoder& d, const json& parent, std::string_view path) {
  return d.List<DeviceConfig>(parent, "config", path,
                              [&](const json& c, const std::string& p) { return Config(d, c, p); });
}

bool IsSubRequestOf(std::string_view name, const DeviceRequest& request) {
  for (const DeviceSubRequest& sub : request.first_available) {
    if (name == StrCat(request.name, "/", sub.name)) return true;
  }
  return false;
}

ResourceClaimSpec ClaimSpec(FieldDecoder& d, const json& spec, std::string_view path) {
  ResourceClaimSpec out;
  const json* devices = d.Object(spec, "devices", Path(path, "devices"));
  if (devices == nullptr) return out;
  const std::string base = Path(path, "devices");
  d.ForEach(*devices, "requests", Path(base, "requests"), [&](const json& r, const std::string& p) {
    DeviceRequest request;
    request.name = d.String(r, "name", Path(p, "name"));
    if (request.name.empty() && d.ok()) d.Fail(Path(p, "name"), "missing");
    if (const json* exactly = d.Object(r, "exactly", Path(p, "exactly"))) {
      request.exactly = Ask(d, *exactly, Path(p, "exactly"));
    }
    request.first_available = d.List<DeviceSubRequest>(
        r, "firstAvailable", Path(p, "firstAvailable"), [&](const json& s, const std::string& sp) {
          DeviceSubRequest sub{.name = d.String(s, "name", Path(sp, "name")), .ask = Ask(d, s, sp)};
          if (sub.name.empty() && d.ok()) d.Fail(Path(sp, "name"), "missing");
          return sub;
        });
    if (request.exactly.has_value() == !request.first_available.empty() && d.ok()) {
      d.Fail(p, "must have exactly one of exactly and firstAvailable");
    }
    for (const DeviceRequest& other : out.requests) {
      if (other.name == request.name && d.ok()) {
        d.Fail(Path(p, "name"), StrCat("duplicate request name \"", request.name, "\""));
      }
    }
    out.requests.push_back(std::move(request));
  });
  out.constraints = d.List<DeviceConstraint>(
      *devices, "constraints", Path(base, "constraints"), [&](const json& c, const std::string& p) {
        DeviceConstraint constraint{
            .requests = Strings(d, c, "requests", Path(p, "requests")),
            .match_attribute = d.String(c, "matchAttribute", Path(p, "matchAttribute")),
            .distinct_attribute = d.String(c, "distinctAttribute", Path(p, "distinctAttribute"))};
        if (constraint.match_attribute.empty() == constraint.distinct_attribute.empty() && d.ok()) {
          d.Fail(p, "must have exactly one of matchAttribute and distinctAttribute");
        }
        for (size_t k = 0; k < constraint.requests.size(); ++k) {
          const std::string& name = constraint.requests[k];
          bool known = std::any_of(out.requests.begin(), out.requests.end(), [&](const DeviceRequest& r) {
            return r.name == name || IsSubRequestOf(name, r);
          });
          if (!known && d.ok()) {
            d.Fail(d.ItemPath(Path(p, "requests"), k), StrCat("no request named \"", name, "\""));
          }
        }
        return constraint;
      });
  out.config = Configs(d, *devices, Path(base, "config"));
  return out;
}

DeviceResult Result(FieldDecoder& d, const json& r, std::string_view path) {
  DeviceResult result;
  result.request = d.String(r, "request", Path(path, "request"));
  result.device = {.driver = d.String(r, "driver", Path(path, "driver")),
                   .pool = d.String(r, "pool", Path(path, "pool")),
                   .device = d.String(r, "device", Path(path, "device"))};
  result.admin_access = d.Bool(r, "adminAccess", Path(path, "adminAccess"));
  result.tolerations = Tolerations(d, r, Path(path, "tolerations"));
  result.consumed_capacity = QuantityMap(d, r, "consumedCapacity", Path(path, "consumedCapacity"));
  result.share_id = d.String(r, "shareID", Path(path, "shareID"));
  result.binding_conditions = Strings(d, r, "bindingConditions", Path(path, "bindingConditions"));
  return result;
}

AllocationResult Allocation(FieldDecoder& d, const json& a, std::string_view path) {
  AllocationResult out;
  if (const json* devices = d.Object(a, "devices", Path(path, "devices"))) {
    out.devices = d.List<DeviceResult>(*devices, "results", Path(path, "devices.results"),
                                       [&](const json& r, const std::string& p) { return Result(d, r, p); });
    out.config = d.List<AllocatedConfig>(
        *devices, "config", Path(path, "devices.config"), [&](const json& c, const std::string& p) {
          const std::string source = d.String(c, "source", Path(p, "source"));
          if (source != "FromClass" && source != "FromClaim" && d.ok()) {
            d.Fail(Path(p, "source"), StrCat("unknown source \"", source, "\" (want FromClass or FromClaim)"));
          }
          return AllocatedConfig{
              .source = source == "FromClass" ? ConfigSource::kFromClass : ConfigSource::kFromClaim,
              .config = Config(d, c, p)};
        });
  }
  out.node_selector = DecodeNodeSelector(d, a, "nodeSelector", Path(path, "nodeSelector"));
  return out;
}

}  // namespace

std::optional<ResourceSlice> SliceIdentity(const json& object, std::string why) {
  auto string_at = [](const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto int_at = [](const json& o, const char* key) -> std::optional<int64_t> {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  if (!object.is_object()) return std::nullopt;
  ResourceSlice slice;
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    slice.meta.name = string_at(*meta, "name");
  }
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return std::nullopt;
  slice.driver = string_at(*spec, "driver");
  auto pool = spec->find("pool");
  if (pool != spec->end() && pool->is_object()) {
    slice.pool = string_at(*pool, "name");
    slice.pool_generation = int_at(*pool, "generation").value_or(std::numeric_limits<int64_t>::max());
    slice.pool_slice_count = std::max<int64_t>(int_at(*pool, "resourceSliceCount").value_or(1), 1);
  }
  if (slice.driver.empty() || slice.pool.empty()) return std::nullopt;
  slice.node_selection.all_nodes = true;  // where it is seen cannot be trusted: everywhere
  slice.undecodable = std::move(why);
  return slice;
}

absl::StatusOr<ResourceSlice> DecodeResourceSlice(const json& object) {
  FieldDecoder d(DescribeObject(object));
  ResourceSlice slice;
  slice.meta = d.Meta(object);
  const json* spec = d.Object(object, "spec", "spec");
  if (spec == nullptr) {
    if (d.ok()) d.Fail("spec", "missing");
    return d.status();
  }
  slice.driver = d.String(*spec, "driver", "spec.driver");
  if (slice.driver.empty() && d.ok()) d.Fail("spec.driver", "missing");
  if (const json* pool = d.Object(*spec, "pool", "spec.pool")) {
    slice.pool = d.String(*pool, "name", "spec.pool.name");
    slice.pool_generation = d.Int(*pool, "generation", "spec.pool.generation");
    slice.pool_slice_count = d.Int(*pool, "resourceSliceCount", "spec.pool.resourceSliceCount");
  }
  if (slice.pool.empty() && d.ok()) d.Fail("spec.pool.name", "missing");
  if (slice.pool_slice_count < 1 && d.ok()) {
    d.Fail("spec.pool.resourceSliceCount", StrCat("must be at least 1, got ", slice.pool_slice_count));
  }
  slice.node_selection = Selection(d, *spec, "spec");
  slice.per_device_node_selection = d.Bool(*spec, "perDeviceNodeSelection", "spec.perDeviceNodeSelection");
  slice.devices = d.List<Device>(*spec, "devices", "spec.devices", [&](const json& j, const std::string& p) {
    return DecodeDevice(d, j, slice.driver, p, slice.per_device_node_selection);
  });
  slice.shared_counters = d.List<CounterSet>(
      *spec, "sharedCounters", "spec.sharedCounters", [&](const json& c, const std::string& p) {
        CounterSet set{.name = d.String(c, "name", Path(p, "name")),
                       .counters = CounterMap(d, c, "counters", Path(p, "counters"))};
        if (set.name.empty() && d.ok()) d.Fail(Path(p, "name"), "missing");
        return set;
      });
  const int selected = SetCount(slice.node_selection) + int{slice.per_device_node_selection};
  if (selected > 1 && d.ok()) {
    d.Fail("spec", "at most one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection may be set");
  } else if (selected == 0 && slice.shared_counters.empty() && d.ok()) {
    d.Fail("spec", "one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set");
  }
  if (slice.node_selection.node_selector.has_value() && slice.node_selection.node_selector->size() != 1 &&
      d.ok()) {
    d.Fail("spec.nodeSelector.nodeSelectorTerms", "must have exactly one term");
  }
  RETURN_IF_ERROR(d.status());
  return slice;
}

absl::StatusOr<DeviceClass> DecodeDeviceClass(const json& object) {
  FieldDecoder d(DescribeObject(object));
  DeviceClass dc;
  dc.meta = d.Meta(object);
  if (const json* spec = d.Object(object, "spec", "spec")) {
    dc.selectors = Selectors(d, *spec, "spec.selectors");
    dc.config = Configs(d, *spec, "spec.config");
    dc.extended_resource_name = d.String(*spec, "extendedResourceName", "spec.extendedResourceName");
  }
  RETURN_IF_ERROR(d.status());
  return dc;
}

absl::StatusOr<ResourceClaim> DecodeResourceClaim(const json& object) {
  FieldDecoder d(DescribeObject(object));
  ResourceClaim claim;
  claim.meta = d.Meta(object);
  if (const json* spec = d.Object(object, "spec", "spec")) {
    claim.spec = ClaimSpec(d, *spec, "spec");
  } else if (d.ok()) {
    d.Fail("spec", "missing");
  }
  if (const json* status = d.Object(object, "status", "status")) {
    if (const json* a = d.Object(*status, "allocation", "status.allocation")) {
      claim.allocation = Allocation(d, *a, "status.allocation");
    }
    claim.reserved_for = d.List<ConsumerReference>(
        *status, "reservedFor", "status.reservedFor", [&](const json& r, const std::string& p) {
          return ConsumerReference{.api_group = d.String(r, "apiGroup", Path(p, "apiGroup")),
                                   .resource = d.String(r, "resource", Path(p, "resource")),
                                   .name = d.String(r, "name", Path(p, "name")),
                                   .uid = d.String(r, "uid", Path(p, "uid"))};
        });
  }
  RETURN_IF_ERROR(d.status());
  return claim;
}

absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const json& object) {
  FieldDecoder d(DescribeObject(object));
  ResourceClaimTemplate tmpl;
  tmpl.meta = d.Meta(object);
  const json* spec = d.Object(object, "spec", "spec");
  if (spec == nullptr) {
    if (d.ok()) d.Fail("spec", "missing");
    return d.status();
  }
  if (const json* m = d.Object(*spec, "metadata", "spec.metadata")) {
    tmpl.claim_meta.labels = d.StringMapField(*m, "labels", "spec.metadata.labels");
    tmpl.claim_meta.annotations = d.StringMapField(*m, "annotations", "spec.metadata.annotations");
  }
  if (const json* claim_spec = d.Object(*spec, "spec", "spec.spec")) {
    tmpl.spec = ClaimSpec(d, *claim_spec, "spec.spec");
  } else if (d.ok()) {
    d.Fail("spec.spec", "missing");
  }
  RETURN_IF_ERROR(d.status());
  return tmpl;
}

namespace {

json EncodeRequirements(const std::vector<NodeSelectorRequirement>& requirements) {
  static constexpr std::string_view kOps[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
  json out = json::array();
  for (const NodeSelectorRequirement& r : requirements) {
    json j = {{"key", r.key}, {"operator", kOps[static_cast<int>(r.op)]}};
    if (!r.values.empty()) j["values"] = r.values;
    out.push_back(std::move(j));
  }
  return out;
}

json EncodeAmounts(const Amounts& amounts) {
  json out = json::object();
  for (const auto& [name, milli] : amounts) out[name] = FormatMilli(milli);
  return out;
}

json EncodeConfig(const DeviceConfig& config) {
  json out = {{"opaque", {{"driver", config.driver}, {"parameters", config.parameters}}}};
  if (!config.requests.empty()) out["requests"] = config.requests;
  return out;
}

}  // namespace

json EncodeAllocation(const AllocationResult& allocation) {
  json results = json::array();
  for (const DeviceResult& r : allocation.devices) {
    json j = {{"request", r.request},
              {"driver", r.device.driver},
              {"pool", r.device.pool},
              {"device", r.device.device}};
    if (r.admin_access) j["adminAccess"] = true;
    if (!r.tolerations.empty()) {
      json tolerations = json::array();
      for (const DeviceToleration& t : r.tolerations) {
        json tj = {{"operator", t.op == DeviceToleration::Operator::kExists ? "Exists" : "Equal"}};
        if (!t.key.empty()) tj["key"] = t.key;
        if (!t.value.empty()) tj["value"] = t.value;
        if (!t.effect.empty()) tj["effect"] = t.effect;
        if (t.toleration_seconds.has_value()) tj["tolerationSeconds"] = *t.toleration_seconds;
        tolerations.push_back(std::move(tj));
      }
      j["tolerations"] = std::move(tolerations);
    }
    if (!r.consumed_capacity.empty()) j["consumedCapacity"] = EncodeAmounts(r.consumed_capacity);
    if (!r.share_id.empty()) j["shareID"] = r.share_id;
    if (!r.binding_conditions.empty()) j["bindingConditions"] = r.binding_conditions;
    results.push_back(std::move(j));
  }
  json devices = {{"results", std::move(results)}};
  if (!allocation.config.empty()) {
    json config = json::array();
    for (const AllocatedConfig& c : allocation.config) {
      json j = EncodeConfig(c.config);
      j["source"] = c.source == ConfigSource::kFromClass ? "FromClass" : "FromClaim";
      config.push_back(std::move(j));
    }
    devices["config"] = std::move(config);
  }
  json out = {{"devices", std::move(devices)}};
  if (allocation.node_selector.has_value()) {
    json terms = json::array();
    for (const NodeSelectorTerm& term : *allocation.node_selector) {
      json t = json::object();
      if (!term.match_expressions.empty()) t["matchExpressions"] = EncodeRequirements(term.match_expressions);
      if (!term.match_fields.empty()) t["matchFields"] = EncodeRequirements(term.match_fields);
      terms.push_back(std::move(t));
    }
    out["nodeSelector"] = {{"nodeSelectorTerms", std::move(terms)}};
  }
  return out;
}

json EncodeClaimStatus(const AllocationResult& allocation,
                       const std::vector<ConsumerReference>& reserved_for) {
  json reserved = json::array();
  for (const ConsumerReference& r : reserved_for) {
    json j = {{"resource", r.resource}, {"name", r.name}, {"uid", r.uid}};
    if (!r.api_group.empty()) j["apiGroup"] = r.api_group;
    reserved.push_back(std::move(j));
  }
  return {{"allocation", EncodeAllocation(allocation)}, {"reservedFor", std::move(reserved)}};
}

}  // namespace tessel::dra
