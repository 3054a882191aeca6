// Decoding resource.k8s.io/v1 objects (scheduler/dra/decode.h): every field the allocator uses
// lands where it should, malformed objects fail naming the object and the field, and an
// allocation encodes back to the JSON the API server takes (and decodes to itself again).
#include <catch2/catch.hpp>

#include "scheduler/dra/decode.h"

namespace tessel::dra {
namespace dra_decode_test {

using nlohmann::json;

json SliceJson() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpus"},
    "spec": {
      "driver": "gpu.example.com",
      "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
      "nodeName": "node-1",
      "devices": [
        {"name": "gpu-0",
         "attributes": {"model": {"string": "A100"}, "index": {"int": 0},
                        "mig": {"bool": true}, "driverVersion": {"version": "1.2.3"},
                        "pci.example.com/root": {"string": "pci0"}},
         "capacity": {"memory": {"value": "80Gi"},
                      "sm": {"value": 100, "requestPolicy": {"default": "10", "validValues": ["10", "50", "100"]}},
                      "bandwidth": {"value": "1000", "requestPolicy": {"default": "100",
                                    "validRange": {"min": "100", "max": "1000", "step": "50"}}}},
         "allowMultipleAllocations": true,
         "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}],
         "taints": [{"key": "maintenance", "value": "soon", "effect": "NoSchedule"}]}
      ]
    }
  })");
}

TEST_CASE("a ResourceSlice decodes its pool, node, devices and their attributes", "[dra]") {
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(SliceJson());
  REQUIRE(slice.ok());
  CHECK(slice->driver == "gpu.example.com");
  CHECK(slice->pool == "node-1");
  CHECK(slice->pool_generation == 3);
  CHECK(slice->pool_slice_count == 2);
  CHECK(slice->node_selection.node_name == "node-1");
  REQUIRE(slice->devices.size() == 1);
  const Device& gpu = slice->devices[0];
  // A name without a domain is the driver's; a qualified one keeps its domain.
  CHECK(gpu.attributes.at("gpu.example.com").at("model") == AttributeValue(std::string("A100")));
  CHECK(gpu.attributes.at("gpu.example.com").at("index") == AttributeValue(int64_t{0}));
  CHECK(gpu.attributes.at("gpu.example.com").at("mig") == AttributeValue(true));
  CHECK(gpu.attributes.at("gpu.example.com").at("driverVersion") == AttributeValue(SemVer{"1.2.3"}));
  CHECK(gpu.attributes.at("pci.example.com").at("root") == AttributeValue(std::string("pci0")));
  CHECK(LookupAttribute(gpu, "gpu.example.com", "gpu.example.com/model") != nullptr);
  CHECK(LookupAttribute(gpu, "gpu.example.com", "other.com/model") == nullptr);
  // Capacities in milli-units, with the text kept for selectors.
  CHECK(gpu.capacity.at("memory").value == int64_t{80} * 1024 * 1024 * 1024 * 1000);
  CHECK(gpu.capacity_view.at("gpu.example.com").at("memory") == "80Gi");
  CHECK(gpu.capacity.at("sm").value == 100'000);
  REQUIRE(gpu.capacity.at("sm").request_policy.has_value());
  CHECK(gpu.capacity.at("sm").request_policy->valid_values == std::vector<int64_t>{10'000, 50'000, 100'000});
  const CapacityRequestPolicy& bw = *gpu.capacity.at("bandwidth").request_policy;
  CHECK(bw.default_amount == 100'000);
  CHECK(bw.range_min == 100'000);
  CHECK(bw.range_max == 1'000'000);
  CHECK(bw.range_step == 50'000);
  CHECK(gpu.allow_multiple_allocations);
  REQUIRE(gpu.consumes_counters.size() == 1);
  CHECK(gpu.consumes_counters[0].counter_set == "gpu-0-counters");
  CHECK(gpu.consumes_counters[0].counters.at("memory") == int64_t{40} * 1024 * 1024 * 1024 * 1000);
  REQUIRE(gpu.taints.size() == 1);
  CHECK(gpu.taints[0].effect == "NoSchedule");
}

TEST_CASE("slices with node selectors, per-device selection and shared counters decode", "[dra]") {
  json by_labels = SliceJson();
  by_labels["spec"].erase("nodeName");
  by_labels["spec"]["nodeSelector"] = {
      {"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "rack"}, {"operator", "In"}, {"values", {"r1"}}}}}}}}};
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(by_labels);
  REQUIRE(slice.ok());
  REQUIRE(slice->node_selection.node_selector.has_value());
  CHECK(slice->node_selection.node_selector->at(0).match_expressions.at(0).key == "rack");

  json per_device = SliceJson();
  per_device["spec"].erase("nodeName");
  per_device["spec"]["perDeviceNodeSelection"] = true;
  per_device["spec"]["devices"][0]["allNodes"] = true;
  slice = DecodeResourceSlice(per_device);
  REQUIRE(slice.ok());
  CHECK(slice->per_device_node_selection);
  CHECK(slice->devices[0].node_selection.all_nodes);

  json counters = json::parse(R"({"kind": "ResourceSlice", "metadata": {"name": "counters"},
    "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
             "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}, "sm": {"value": "7"}}}]}})");
  slice = DecodeResourceSlice(counters);
  REQUIRE(slice.ok());
  REQUIRE(slice->shared_counters.size() == 1);
  CHECK(slice->shared_counters[0].counters.at("sm") == 7000);
}

TEST_CASE("malformed ResourceSlices fail naming the object and the field", "[dra]") {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"bad quantity", [](json& j) { j["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots"; },
       "ResourceSlice node-1-gpus: spec.devices[0].capacity.memory.value: quantity \"lots\""},
      {"two attribute values", [](json& j) { j["spec"]["devices"][0]["attributes"]["model"]["int"] = 3; },
       "ResourceSlice node-1-gpus: spec.devices[0].attributes.model: must have exactly one of int, bool, string, version"},
      {"list attribute", [](json& j) { j["spec"]["devices"][0]["attributes"]["ids"] = {{"ints", {1, 2}}}; },
       "spec.devices[0].attributes.ids.ints: list-valued attributes are not supported"},
      {"no driver", [](json& j) { j["spec"].erase("driver"); }, "ResourceSlice node-1-gpus: spec.driver: missing"},
      {"no node selection", [](json& j) { j["spec"].erase("nodeName"); },
       "spec: one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set"},
      {"two node selections", [](json& j) { j["spec"]["allNodes"] = true; },
       "spec: at most one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection may be set"},
      {"device selection without per-device", [](json& j) { j["spec"]["devices"][0]["allNodes"] = true; },
       "spec.devices[0]: nodeName, nodeSelector and allNodes need spec.perDeviceNodeSelection"},
      {"policy without sharing", [](json& j) { j["spec"]["devices"][0]["allowMultipleAllocations"] = false; },
       "requestPolicy: needs allowMultipleAllocations"},
      {"unsorted valid values",
       [](json& j) { j["spec"]["devices"][0]["capacity"]["sm"]["requestPolicy"]["validValues"] = {"50", "10"}; },
       "spec.devices[0].capacity.sm.requestPolicy.validValues: must be sorted in ascending order"},
      {"zero slices", [](json& j) { j["spec"]["pool"]["resourceSliceCount"] = 0; },
       "spec.pool.resourceSliceCount: must be at least 1, got 0"},
      {"negative counter", [](json& j) { j["spec"]["devices"][0]["consumesCounters"][0]["counters"]["memory"]["value"] = "-1"; },
       "consumesCounters[0].counters.memory.value: negative quantity"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json j = SliceJson();
      c.edit(j);
      absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(j);
      REQUIRE_FALSE(slice.ok());
      CHECK(slice.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(slice.status().message()), Catch::Contains(c.message));
    }
  }
}

json ClaimJson() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train", "namespace": "team-a", "uid": "c1"},
    "spec": {"devices": {
      "requests": [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": 2,
          "selectors": [{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == \"A100\""}}],
          "tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}],
          "capacity": {"requests": {"memory": "10Gi"}}}},
        {"name": "nic", "firstAvailable": [
          {"name": "fast", "deviceClassName": "nic", "allocationMode": "All"},
          {"name": "slow", "deviceClassName": "nic"}]},
        {"name": "monitor", "exactly": {"deviceClassName": "gpu", "adminAccess": true}}
      ],
      "constraints": [{"requests": ["gpus", "nic/fast"], "matchAttribute": "gpu.example.com/numa"},
                      {"distinctAttribute": "gpu.example.com/index"}],
      "config": [{"requests": ["gpus"], "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "shared"}}}]
    }},
    "status": {
      "allocation": {
        "devices": {"results": [{"request": "gpus", "driver": "gpu.example.com", "pool": "node-1",
                                 "device": "gpu-0", "shareID": "00000000-0000-4000-8000-000000000001",
                                 "consumedCapacity": {"memory": "10Gi"}}],
                    "config": [{"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {}}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}
      },
      "reservedFor": [{"resource": "pods", "name": "train-0", "uid": "p1"}]
    }
  })");
}

TEST_CASE("a ResourceClaim decodes requests, subrequests, constraints, config and status", "[dra]") {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(ClaimJson());
  REQUIRE(claim.ok());
  CHECK(ClaimKey(*claim) == "team-a/train");
  const auto& requests = claim->spec.requests;
  REQUIRE(requests.size() == 3);
  REQUIRE(requests[0].exactly.has_value());
  CHECK(requests[0].exactly->count == 2);
  CHECK(requests[0].exactly->selectors.size() == 1);
  CHECK(requests[0].exactly->tolerations.at(0).op == DeviceToleration::Operator::kExists);
  CHECK(requests[0].exactly->capacity_requests.at("memory") == int64_t{10} * 1024 * 1024 * 1024 * 1000);
  REQUIRE(requests[1].first_available.size() == 2);
  CHECK(requests[1].first_available[0].ask.mode == AllocationMode::kAll);
  CHECK(requests[1].first_available[1].ask.count == 1);  // ExactCount by default, count 1
  CHECK(requests[2].exactly->admin_access);
  REQUIRE(claim->spec.constraints.size() == 2);
  CHECK(claim->spec.constraints[0].match_attribute == "gpu.example.com/numa");
  CHECK(claim->spec.constraints[1].distinct_attribute == "gpu.example.com/index");
  CHECK(claim->spec.config.at(0).parameters.at("mode") == "shared");
  REQUIRE(claim->allocation.has_value());
  CHECK(claim->allocation->devices.at(0).share_id == "00000000-0000-4000-8000-000000000001");
  CHECK(claim->allocation->config.at(0).source == ConfigSource::kFromClass);
  CHECK(claim->reserved_for.at(0).name == "train-0");
}

TEST_CASE("malformed ResourceClaims fail naming the object and the field", "[dra]") {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"both exactly and firstAvailable",
       [](json& j) { j["spec"]["devices"]["requests"][1]["exactly"] = {{"deviceClassName", "nic"}}; },
       "ResourceClaim team-a/train: spec.devices.requests[1]: must have exactly one of exactly and firstAvailable"},
      {"zero count", [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"]["count"] = 0; },
       "spec.devices.requests[0].exactly.count: must be at least 1, got 0"},
      {"unknown mode", [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "Some"; },
       "spec.devices.requests[0].exactly.allocationMode: unknown mode \"Some\""},
      {"no class", [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"].erase("deviceClassName"); },
       "spec.devices.requests[0].exactly.deviceClassName: missing"},
      {"constraint on an unknown request",
       [](json& j) { j["spec"]["devices"]["constraints"][0]["requests"] = {"gpu"}; },
       "spec.devices.constraints[0].requests[0]: no request named \"gpu\""},
      {"constraint with both attributes",
       [](json& j) { j["spec"]["devices"]["constraints"][1]["matchAttribute"] = "gpu.example.com/numa"; },
       "spec.devices.constraints[1]: must have exactly one of matchAttribute and distinctAttribute"},
      {"selector without cel",
       [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0] = json::object(); },
       "spec.devices.requests[0].exactly.selectors[0].cel: missing"},
      {"bad toleration operator",
       [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["operator"] = "Lt"; },
       "spec.devices.requests[0].exactly.tolerations[0].operator: unknown operator \"Lt\""},
      {"bad capacity request",
       [](json& j) { j["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"] = "x"; },
       "spec.devices.requests[0].exactly.capacity.requests.memory: quantity \"x\""},
      {"bad result", [](json& j) { j["status"]["allocation"]["devices"]["results"][0]["device"] = 3; },
       "status.allocation.devices.results[0].device: expected a string"},
      {"duplicate request", [](json& j) { j["spec"]["devices"]["requests"][2]["name"] = "gpus"; },
       "spec.devices.requests[2].name: duplicate request name \"gpus\""},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json j = ClaimJson();
      c.edit(j);
      absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(j);
      REQUIRE_FALSE(claim.ok());
      CHECK_THAT(std::string(claim.status().message()), Catch::Contains(c.message));
    }
  }
}

TEST_CASE("DeviceClasses and ResourceClaimTemplates decode", "[dra]") {
  absl::StatusOr<DeviceClass> cls = DecodeDeviceClass(json::parse(R"({
    "kind": "DeviceClass", "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}],
             "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
             "extendedResourceName": "example.com/gpu"}})"));
  REQUIRE(cls.ok());
  CHECK(cls->selectors == std::vector<std::string>{"device.driver == \"gpu.example.com\""});
  CHECK(cls->config.at(0).driver == "gpu.example.com");
  CHECK(cls->extended_resource_name == "example.com/gpu");

  absl::StatusOr<DeviceClass> bad = DecodeDeviceClass(json::parse(R"({
    "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {"config": [{"requests": []}]}})"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains("DeviceClass gpu: spec.config[0].opaque: missing"));

  json tmpl = {{"kind", "ResourceClaimTemplate"},
               {"metadata", {{"name", "one-gpu"}, {"namespace", "team-a"}}},
               {"spec", {{"metadata", {{"labels", {{"app", "x"}}}}}, {"spec", ClaimJson()["spec"]}}}};
  absl::StatusOr<ResourceClaimTemplate> t = DecodeResourceClaimTemplate(tmpl);
  REQUIRE(t.ok());
  CHECK(t->claim_meta.labels.at("app") == "x");
  CHECK(t->spec.requests.size() == 3);
  tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = -1;
  t = DecodeResourceClaimTemplate(tmpl);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(std::string(t.status().message()),
             Catch::Contains("ResourceClaimTemplate team-a/one-gpu: spec.spec.devices.requests[0].exactly.count"));
}

TEST_CASE("an allocation encodes to status JSON and decodes back to itself", "[dra]") {
  AllocationResult allocation;
  allocation.devices.push_back({.request = "gpus",
                                .device = {"gpu.example.com", "node-1", "gpu-0"},
                                .tolerations = {{.key = "maintenance", .op = DeviceToleration::Operator::kExists}},
                                .consumed_capacity = {{"memory", 1500}},
                                .share_id = "00000000-0000-4000-8000-000000000007"});
  allocation.devices.push_back({.request = "nic/slow", .device = {"nic.example.com", "node-1", "eth1"},
                                .admin_access = true});
  allocation.config.push_back({.source = ConfigSource::kFromClass,
                               .config = {.requests = {"gpus"}, .driver = "gpu.example.com",
                                          .parameters = {{"mode", "x"}}}});
  NodeSelectorTerm term;
  term.match_fields.push_back({.key = "metadata.name", .op = NodeSelectorRequirement::Operator::kIn,
                               .values = {"node-1"}});
  allocation.node_selector = std::vector<NodeSelectorTerm>{term};
  json status = EncodeClaimStatus(allocation, {{.resource = "pods", .name = "train-0", .uid = "p1"}});
  const json& r0 = status["allocation"]["devices"]["results"][0];
  CHECK(r0["consumedCapacity"]["memory"] == "1500m");
  CHECK(r0["shareID"] == "00000000-0000-4000-8000-000000000007");
  CHECK(r0["tolerations"][0]["operator"] == "Exists");
  CHECK(status["allocation"]["devices"]["results"][1]["adminAccess"] == true);
  CHECK(status["allocation"]["devices"]["config"][0]["source"] == "FromClass");
  CHECK(status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] == "node-1");
  CHECK(status["reservedFor"][0]["uid"] == "p1");

  json claim = ClaimJson();
  claim["status"] = status;
  absl::StatusOr<ResourceClaim> back = DecodeResourceClaim(claim);
  REQUIRE(back.ok());
  REQUIRE(back->allocation.has_value());
  CHECK(back->allocation->devices == allocation.devices);
  CHECK(back->allocation->config.at(0).config.parameters == allocation.config[0].config.parameters);
  CHECK(back->allocation->node_selector->at(0).match_fields.at(0).values == std::vector<std::string>{"node-1"});
}

}  // namespace dra_decode_test
}  // namespace tessel::dra
