// The DRA allocator (scheduler/dra/allocator.h), feature by feature, each with cases that must
// fit and cases that must not (with the reason they give): counts, All, firstAvailable,
// selectors, constraints, admin access, taints, node selection and pool generations, shared
// counters, consumable capacity, kept allocations, and the choice among alternatives.
#include <catch2/catch.hpp>

#include "unit/dra_fixtures.h"
#include "scheduler/dra/capacity.h"
#include "scheduler/dra/cel_matcher.h"

namespace tessel::dra {
namespace dra_allocator_test {

using namespace testing;  // NOLINT: the fixtures

DraWorld FourGpus() {
  DraWorld w;
  w.slices.push_back(SliceOn("node-1", "node-1",
                             {Gpu("gpu-0", {{"model", "A100"}, {"numa", int64_t{0}}, {"index", int64_t{0}}}),
                              Gpu("gpu-1", {{"model", "A100"}, {"numa", int64_t{0}}, {"index", int64_t{1}}}),
                              Gpu("gpu-2", {{"model", "H100"}, {"numa", int64_t{1}}, {"index", int64_t{2}}}),
                              Gpu("gpu-3", {{"model", "H100"}, {"numa", int64_t{1}}, {"index", int64_t{3}}})}));
  w.classes["gpu"] = Class("gpu", {"driver=gpu.example.com"});
  return w;
}

TEST_CASE("ExactCount takes that many free devices, first fit, or says how many match", "[dra]") {
  DraWorld w = FourGpus();
  ResourceClaim two = Claim("two", {Exactly("gpus", {.device_class_name = "gpu", .count = 2})});
  auto out = w.Run({&two});
  REQUIRE(out.ok());
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0", "node-1/gpu-1"});
  CHECK(out->allocations[0].devices[0].request == "gpus");
  // Node-local devices bind the allocation to the node.
  REQUIRE(out->allocations[0].node_selector.has_value());
  CHECK(out->allocations[0].node_selector->at(0).match_fields.at(0).values == std::vector<std::string>{"node-1"});

  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-0"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-2"});
  ResourceClaim three = Claim("three", {Exactly("gpus", {.device_class_name = "gpu", .count = 3})});
  out = w.Run({&three});
  REQUIRE(out.ok());
  CHECK_FALSE(out->fits());
  CHECK(out->reason == "claim team-a/three, request gpus: 2 free devices of class gpu match, 3 asked "
                       "(of 4 devices on node node-1: 2 in use)");
  out = w.Run({&two});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-1", "node-1/gpu-3"});
}

TEST_CASE("class and request selectors both filter, and a failure names the selector", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["h100"] = Class("h100", {"driver=gpu.example.com && gpu.example.com/model=H100"});
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "h100",
                                                     .selectors = {"gpu.example.com/index!=2"},
                                                     .count = 1})});
  auto out = w.Run({&claim});
  REQUIRE(out.ok());
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-3"});

  claim.spec.requests[0].exactly->count = 2;
  out = w.Run({&claim});
  REQUIRE(out.ok());
  CHECK(out->reason ==
        "claim team-a/c, request gpus: 1 free device of class h100 match, 2 asked (of 4 devices on node "
        "node-1: 2 rejected by the class's selector #0 (driver=gpu.example.com && gpu.example.com/model=H100), "
        "1 rejected by the request's selector #0 (gpu.example.com/index!=2))");
}

TEST_CASE("a selector that fails to evaluate is an error naming the class or claim", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["broken"] = Class("broken", {"fail"});
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "broken"})});
  auto out = w.Run({&claim});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(std::string(out.status().message()),
             Catch::Contains("DeviceClass broken: selector #0 (fail) on device gpu.example.com/node-1/gpu-0: no such key"));
  ResourceClaim by_request = Claim("r", {Exactly("gpus", {.device_class_name = "gpu", .selectors = {"fail"}})});
  out = w.Run({&by_request});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(std::string(out.status().message()), Catch::Contains("claim team-a/r, request gpus: selector #0 (fail)"));
}

TEST_CASE("a missing class and too many devices are reasons, not errors", "[dra]") {
  DraWorld w = FourGpus();
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "tpu"})});
  auto out = w.Run({&claim});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/c, request gpus: device class \"tpu\" does not exist");
  ResourceClaim many = Claim("m", {Exactly("gpus", {.device_class_name = "gpu", .count = 33})});
  out = w.Run({&many});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/m, request gpus: asks for 33 devices, more than the 32 a claim can hold");
}

TEST_CASE("All takes every matching device, and fails if one of them is in use", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["a100"] = Class("a100", {"gpu.example.com/model=A100"});
  ResourceClaim all = Claim("all", {Exactly("gpus", {.device_class_name = "a100", .mode = AllocationMode::kAll})});
  auto out = w.Run({&all});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0", "node-1/gpu-1"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1"});
  out = w.Run({&all});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/all, request gpus: asks for all 2 devices of class a100 that match, 1 of them "
                       "free (of 4 devices on node node-1: 2 rejected by the class's selector #0 "
                       "(gpu.example.com/model=A100), 1 in use)");
  // No matching device at all: All does not fit.
  w.classes["none"] = Class("none", {"gpu.example.com/model=B200"});
  ResourceClaim none = Claim("none", {Exactly("gpus", {.device_class_name = "none", .mode = AllocationMode::kAll})});
  out = w.Run({&none});
  CHECK_THAT(out->reason, Catch::Contains("asks for all devices of class none, and none matches"));
}

TEST_CASE("firstAvailable takes the first subrequest that can be satisfied", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["h100"] = Class("h100", {"gpu.example.com/model=H100"});
  w.classes["a100"] = Class("a100", {"gpu.example.com/model=A100"});
  ResourceClaim claim = Claim("c", {FirstAvailable("gpu", {{.name = "big", .ask = {.device_class_name = "h100", .count = 2}},
                                                           {.name = "small", .ask = {.device_class_name = "a100", .count = 1}}})});
  auto out = w.Run({&claim});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-2", "node-1/gpu-3"});
  CHECK(out->allocations[0].devices[0].request == "gpu/big");
  // The big one no longer fits: the small one is taken. Alternatives never fall back while the
  // first subrequest can be satisfied.
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-3"});
  out = w.Run({&claim});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0"});
  CHECK(out->allocations[0].devices[0].request == "gpu/small");
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-0"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1"});
  out = w.Run({&claim});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/c, request gpu: no subrequest can be satisfied: gpu/big: 1 free device of "
                       "class h100 match, 2 asked (of 4 devices on node node-1: 2 rejected by the class's selector "
                       "#0 (gpu.example.com/model=H100), 1 in use); gpu/small: 0 free devices of class a100 match, 1 "
                       "asked (of 4 devices on node node-1: 2 rejected by the class's selector #0 "
                       "(gpu.example.com/model=A100), 2 in use)");
}

TEST_CASE("firstAvailable in one claim falls back when a later claim needs the devices", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["h100"] = Class("h100", {"gpu.example.com/model=H100"});
  w.classes["any"] = Class("any");
  ResourceClaim flexible = Claim("flex", {FirstAvailable("gpu", {{.name = "h", .ask = {.device_class_name = "h100"}},
                                                                 {.name = "any", .ask = {.device_class_name = "any"}}})});
  ResourceClaim strict = Claim("strict", {Exactly("gpus", {.device_class_name = "h100", .count = 2})});
  auto out = w.Run({&flexible, &strict});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0"});
  CHECK(out->allocations[0].devices[0].request == "gpu/any");
  CHECK(Names(out->allocations[1]) == std::vector<std::string>{"node-1/gpu-2", "node-1/gpu-3"});
}

TEST_CASE("matchAttribute keeps the devices of the named requests on one value", "[dra]") {
  DraWorld w = FourGpus();
  DeviceConstraint same_numa{.match_attribute = "gpu.example.com/numa"};
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "gpu", .count = 2})}, {same_numa});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-0"});
  auto out = w.Run({&claim});
  REQUIRE(out->fits());
  // gpu-1 alone is left on NUMA 0: the pair is on NUMA 1.
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-2", "node-1/gpu-3"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-3"});
  out = w.Run({&claim});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/c: no devices on node node-1 satisfy the requests and the constraints "
                       "together (matchAttribute gpu.example.com/numa over all requests)");
  // A constraint over other requests only does not bind this one.
  ResourceClaim two_requests =
      Claim("t", {Exactly("a", {.device_class_name = "gpu"}), Exactly("b", {.device_class_name = "gpu"})},
            {{.requests = {"a"}, .match_attribute = "gpu.example.com/numa"}});
  out = w.Run({&two_requests});
  CHECK(out->fits());
  // An attribute no device has fails the constraint.
  ResourceClaim missing = Claim("x", {Exactly("gpus", {.device_class_name = "gpu"})},
                                {{.match_attribute = "gpu.example.com/rack"}});
  out = w.Run({&missing});
  CHECK_FALSE(out->fits());
}

TEST_CASE("matchAttribute across requests and subrequests", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["h100"] = Class("h100", {"gpu.example.com/model=H100"});
  ResourceClaim claim = Claim(
      "c",
      {Exactly("first", {.device_class_name = "gpu"}),
       FirstAvailable("second", {{.name = "h", .ask = {.device_class_name = "h100"}}})},
      {{.requests = {"first", "second/h"}, .match_attribute = "gpu.example.com/numa"}});
  auto out = w.Run({&claim});
  REQUIRE(out->fits());
  // first-fit gpu-0 (NUMA 0) cannot pair with an H100 (NUMA 1): the search backtracks.
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-2", "node-1/gpu-3"});
}

TEST_CASE("distinctAttribute needs a different value on each device", "[dra]") {
  DraWorld w = FourGpus();
  DeviceConstraint other_numa{.distinct_attribute = "gpu.example.com/numa"};
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "gpu", .count = 2})}, {other_numa});
  auto out = w.Run({&claim});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0", "node-1/gpu-2"});
  claim.spec.requests[0].exactly->count = 3;
  out = w.Run({&claim});
  REQUIRE(out.ok());
  CHECK_THAT(out->reason, Catch::Contains("distinctAttribute gpu.example.com/numa over all requests"));
}

TEST_CASE("admin access takes a device in use and holds nothing", "[dra]") {
  DraWorld w = FourGpus();
  for (const char* d : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) w.held.exclusive.insert({"gpu.example.com", "node-1", d});
  ResourceClaim monitor = Claim("m", {Exactly("all", {.device_class_name = "gpu", .mode = AllocationMode::kAll,
                                                      .admin_access = true})});
  auto out = w.Run({&monitor});
  REQUIRE(out->fits());
  CHECK(out->allocations[0].devices.size() == 4);
  CHECK(out->allocations[0].devices[0].admin_access);
  AllocatedDevices after;
  after.Add(out->allocations[0]);
  CHECK(after.exclusive.empty());
  CHECK(after.shared.empty());
  // Without admin access the same claim does not fit.
  ResourceClaim user = Claim("u", {Exactly("one", {.device_class_name = "gpu"})});
  out = w.Run({&user});
  CHECK_FALSE(out->fits());
  // One claim does not take the same device twice with admin access.
  w.held = {};
  w.slices[0].devices.resize(1);
  ResourceClaim twice = Claim("t", {Exactly("a", {.device_class_name = "gpu", .admin_access = true}),
                                    Exactly("b", {.device_class_name = "gpu", .admin_access = true})});
  out = w.Run({&twice});
  CHECK_FALSE(out->fits());
}

TEST_CASE("NoSchedule and NoExecute taints need a toleration; None does not", "[dra]") {
  DraWorld w;
  Device sick = Gpu("gpu-0");
  sick.taints.push_back({.key = "health", .value = "bad", .effect = "NoExecute"});
  Device noted = Gpu("gpu-1");
  noted.taints.push_back({.key = "note", .effect = "None"});
  w.slices.push_back(SliceOn("node-1", "node-1", {sick, noted}));
  w.classes["gpu"] = Class("gpu");
  ResourceClaim two = Claim("c", {Exactly("gpus", {.device_class_name = "gpu", .count = 2})});
  auto out = w.Run({&two});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/c, request gpus: 1 free device of class gpu match, 2 asked (of 2 devices "
                       "on node node-1: 1 with a taint the request does not tolerate)");
  two.spec.requests[0].exactly->tolerations = {{.key = "health", .op = DeviceToleration::Operator::kEqual,
                                                .value = "good"}};
  CHECK_FALSE(w.Run({&two})->fits());  // the value differs
  two.spec.requests[0].exactly->tolerations = {{.key = "health", .value = "bad", .effect = "NoExecute"}};
  out = w.Run({&two});
  REQUIRE(out->fits());
  CHECK(out->allocations[0].devices[0].tolerations.size() == 1);  // the result carries them
  two.spec.requests[0].exactly->tolerations = {{.op = DeviceToleration::Operator::kExists}};
  CHECK(w.Run({&two})->fits());
}

TEST_CASE("slices count for the node they select, in their pool's newest complete generation", "[dra]") {
  DraWorld w;
  w.node = NodeNamed("node-1", {{"rack", "r1"}});
  w.classes["gpu"] = Class("gpu");
  w.slices.push_back(SliceOn("node-2", "node-2", {Gpu("other-node")}));
  ResourceSlice rack = SliceOn("", "rack-r1", {Gpu("rack-gpu")});
  NodeSelectorTerm term;
  term.match_expressions.push_back({.key = "rack", .op = NodeSelectorRequirement::Operator::kIn, .values = {"r1"}});
  rack.node_selection.node_selector = std::vector<NodeSelectorTerm>{term};
  w.slices.push_back(rack);
  ResourceSlice everywhere = SliceOn("", "shared", {Gpu("network-gpu")});
  everywhere.node_selection.all_nodes = true;
  w.slices.push_back(everywhere);
  ResourceSlice per_device = SliceOn("", "mixed", {Gpu("mine"), Gpu("theirs")});
  per_device.per_device_node_selection = true;
  per_device.devices[0].node_selection.node_name = "node-1";
  per_device.devices[1].node_selection.node_name = "node-2";
  w.slices.push_back(per_device);
  // An old generation of a pool is ignored; so is a pool whose newest generation is incomplete.
  w.slices.push_back(SliceOn("node-1", "local", {Gpu("old")}, 1));
  w.slices.push_back(SliceOn("node-1", "local", {Gpu("new")}, 2));
  w.slices.push_back(SliceOn("node-1", "updating", {Gpu("half")}, 5, 2));

  w.Gather();
  std::vector<std::string> usable;
  for (const Candidate& c : w.devices.candidates) usable.push_back(StrCat(c.id.pool, "/", c.id.device));
  CHECK(usable == std::vector<std::string>{"local/new", "mixed/mine", "rack-r1/rack-gpu", "shared/network-gpu"});
  REQUIRE(w.devices.pools.size() == 5);
  CHECK(w.devices.pools[4].incomplete);

  ResourceClaim rack_claim = Claim("r", {Exactly("g", {.device_class_name = "gpu", .selectors = {"true"}})});
  w.classes["rack"] = Class("rack", {"driver=gpu.example.com"});
  // The node selector of the result follows the device's selection.
  w.slices.erase(w.slices.begin() + 4, w.slices.end());  // keep: node-2, rack, shared, mixed
  w.slices.erase(w.slices.begin() + 3);                  // keep: node-2, rack, shared
  auto out = w.Run({&rack_claim});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"rack-r1/rack-gpu"});
  REQUIRE(out->allocations[0].node_selector.has_value());
  CHECK(out->allocations[0].node_selector->at(0).match_expressions.at(0).key == "rack");
  w.held.exclusive.insert({"gpu.example.com", "rack-r1", "rack-gpu"});
  out = w.Run({&rack_claim});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"shared/network-gpu"});
  CHECK_FALSE(out->allocations[0].node_selector.has_value());  // usable from every node
}

TEST_CASE("All refuses a pool that is being updated", "[dra]") {
  DraWorld w = FourGpus();
  w.slices.push_back(SliceOn("node-1", "updating", {Gpu("half")}, 2, 2));
  ResourceClaim all = Claim("all", {Exactly("gpus", {.device_class_name = "gpu", .mode = AllocationMode::kAll})});
  auto out = w.Run({&all});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/all, request gpus: asks for all devices, but resource pool "
                       "gpu.example.com/updating is being updated");
  // ExactCount still allocates from the complete pools.
  ResourceClaim one = Claim("one", {Exactly("gpus", {.device_class_name = "gpu"})});
  CHECK(w.Run({&one})->fits());
}

// A GPU of 8 memory units as counters, published as the whole GPU and two halves.
DraWorld PartitionedGpus(int gpus) {
  DraWorld w;
  ResourceSlice counters = SliceOn("", "node-1", {}, 1, 2, "node-1-counters");
  counters.node_selection = {};
  ResourceSlice devices = SliceOn("node-1", "node-1", {}, 1, 2, "node-1-devices");
  for (int g = 0; g < gpus; ++g) {
    const std::string set = StrCat("gpu-", g);
    counters.shared_counters.push_back({.name = set, .counters = {{"memory", 8000}}});
    devices.devices.push_back(Consuming(Gpu(StrCat("gpu-", g, "-whole"), {{"size", "whole"}}), set, {{"memory", 8000}}));
    devices.devices.push_back(Consuming(Gpu(StrCat("gpu-", g, "-half-a"), {{"size", "half"}}), set, {{"memory", 4000}}));
    devices.devices.push_back(Consuming(Gpu(StrCat("gpu-", g, "-half-b"), {{"size", "half"}}), set, {{"memory", 4000}}));
  }
  w.slices.push_back(counters);
  w.slices.push_back(devices);
  w.classes["whole"] = Class("whole", {"gpu.example.com/size=whole"});
  w.classes["half"] = Class("half", {"gpu.example.com/size=half"});
  return w;
}

TEST_CASE("partitions draw on their pool's shared counters", "[dra]") {
  DraWorld w = PartitionedGpus(1);
  ResourceClaim whole = Claim("w", {Exactly("g", {.device_class_name = "whole"})});
  ResourceClaim half = Claim("h", {Exactly("g", {.device_class_name = "half"})});
  ResourceClaim two_halves = Claim("hh", {Exactly("g", {.device_class_name = "half", .count = 2})});
  CHECK(w.Run({&two_halves})->fits());
  auto out = w.Run({&whole, &half});
  REQUIRE(out.ok());
  CHECK(out->reason == "the pod's claims cannot all be allocated together on node node-1: their requests compete "
                       "for the same devices, capacity or counters");
  // An allocated half consumes the counters: the whole GPU is gone, the other half is not.
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-0-half-a"});
  out = w.Run({&whole});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/w, request g: 0 free devices of class whole match, 1 asked (of 3 devices on "
                       "node node-1: 2 rejected by the class's selector #0 (gpu.example.com/size=whole), 1 whose "
                       "shared counters are used up)");
  out = w.Run({&half});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-half-b"});
}

TEST_CASE("a pool with an undefined counter set is invalid and allocates nothing", "[dra]") {
  DraWorld w = PartitionedGpus(1);
  w.slices[1].devices[0].consumes_counters[0].counter_set = "gpu-9";
  w.Gather();
  REQUIRE(w.devices.pools.size() == 1);
  CHECK_THAT(w.devices.pools[0].invalid_reason, Catch::Contains("consumes counter set \"gpu-9\""));
  ResourceClaim half = Claim("h", {Exactly("g", {.device_class_name = "half"})});
  auto out = w.Run({&half});
  REQUIRE(out.ok());
  CHECK_THAT(out->reason, Catch::Contains("resource pool gpu.example.com/node-1 is invalid"));
}

DraWorld SharedGpu(std::optional<CapacityRequestPolicy> policy) {
  DraWorld w;
  Device gpu = WithCapacity(Gpu("shared-gpu"), "memory", 80'000, policy);
  gpu.allow_multiple_allocations = true;
  w.slices.push_back(SliceOn("node-1", "node-1", {gpu}));
  w.classes["gpu"] = Class("gpu");
  return w;
}

TEST_CASE("a device that allows multiple allocations is shared while its capacity lasts", "[dra]") {
  DraWorld w = SharedGpu(std::nullopt);
  ResourceClaim a = Claim("a", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"memory", 30'000}}})});
  ResourceClaim b = Claim("b", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"memory", 30'000}}})});
  ResourceClaim c = Claim("c", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"memory", 30'000}}})});
  auto out = w.Run({&a, &b});
  REQUIRE(out->fits());
  const DeviceResult& first = out->allocations[0].devices[0];
  const DeviceResult& second = out->allocations[1].devices[0];
  CHECK(first.consumed_capacity == Amounts{{"memory", 30'000}});
  CHECK_FALSE(first.share_id.empty());
  CHECK(first.share_id != second.share_id);
  CHECK(w.Run({&a, &b, &c})->reason ==
        "the pod's claims cannot all be allocated together on node node-1: their requests compete for the same "
        "devices, capacity or counters");
  // Shares held by other claims count.
  w.held.Add(out->allocations[0]);
  w.held.Add(out->allocations[1]);
  CHECK(w.held.shared.at({"gpu.example.com", "node-1", "shared-gpu"}) == Amounts{{"memory", 60'000}});
  out = w.Run({&c});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/c, request g: 0 free devices of class gpu match, 1 asked (of 1 device on node "
                       "node-1: 1 shared with too little capacity left)");
  // Without a capacity request a share takes the whole capacity; asking a capacity the device
  // does not have matches nothing.
  w.held = {};
  ResourceClaim whole = Claim("w", {Exactly("g", {.device_class_name = "gpu"})});
  out = w.Run({&whole});
  REQUIRE(out->fits());
  CHECK(out->allocations[0].devices[0].consumed_capacity == Amounts{{"memory", 80'000}});
  ResourceClaim cores = Claim("k", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"cores", 1000}}})});
  CHECK_THAT(w.Run({&cores})->reason, Catch::Contains("1 without the capacity asked"));
}

TEST_CASE("a capacity's request policy rounds requests up and refuses what it cannot round", "[dra]") {
  SECTION("valid values") {
    CapacityRequestPolicy policy{.default_amount = 10'000, .valid_values = {10'000, 20'000, 40'000}};
    DeviceCapacity cap{.value = 80'000, .request_policy = policy};
    CHECK(ConsumedAmount(cap, std::nullopt) == 10'000);
    CHECK(ConsumedAmount(cap, 15'000) == 20'000);
    CHECK(ConsumedAmount(cap, 20'000) == 20'000);
    CHECK(ConsumedAmount(cap, 41'000) == std::nullopt);
    DraWorld w = SharedGpu(policy);
    ResourceClaim claim = Claim("c", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"memory", 15'000}}})});
    auto out = w.Run({&claim});
    REQUIRE(out->fits());
    CHECK(out->allocations[0].devices[0].consumed_capacity == Amounts{{"memory", 20'000}});
    claim.spec.requests[0].exactly->capacity_requests["memory"] = 50'000;
    CHECK_FALSE(w.Run({&claim})->fits());
  }
  SECTION("a range with a step, in milli-units") {
    CapacityRequestPolicy policy{.default_amount = 1'000, .range_min = 1'000, .range_max = 8'000, .range_step = 500};
    DeviceCapacity cap{.value = 8'000, .request_policy = policy};
    CHECK(ConsumedAmount(cap, 200) == 1'000);    // below the minimum: the minimum
    CHECK(ConsumedAmount(cap, 1'200) == 1'500);  // up to the next step
    CHECK(ConsumedAmount(cap, 1'500) == 1'500);
    CHECK(ConsumedAmount(cap, 8'000) == 8'000);
    CHECK(ConsumedAmount(cap, 8'001) == std::nullopt);  // above the maximum
    CapacityRequestPolicy open{.range_min = 2'000};
    CHECK(ConsumedAmount({.value = 8'000, .request_policy = open}, 3'333) == 3'333);  // no step: as asked
  }
  SECTION("no policy") {
    CHECK(ConsumedAmount({.value = 8'000}, 3'000) == 3'000);
    CHECK(ConsumedAmount({.value = 8'000}, std::nullopt) == 8'000);
  }
}

TEST_CASE("a shared partition consumes its counters once, whatever the number of shares", "[dra]") {
  DraWorld w = PartitionedGpus(1);
  Device& half = w.slices[1].devices[1];  // gpu-0-half-a
  half.allow_multiple_allocations = true;
  half = WithCapacity(half, "memory", 4'000);
  ResourceClaim a = Claim("a", {Exactly("g", {.device_class_name = "half", .capacity_requests = {{"memory", 1'000}}})});
  ResourceClaim b = Claim("b", {Exactly("g", {.device_class_name = "half", .capacity_requests = {{"memory", 1'000}}})});
  ResourceClaim c = Claim("c", {Exactly("g", {.device_class_name = "half"})});
  // a and b share half-a (counters once), c takes half-b: the GPU's 8 units are enough.
  auto out = w.Run({&a, &b, &c});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-half-a"});
  CHECK(Names(out->allocations[1]) == std::vector<std::string>{"node-1/gpu-0-half-a"});
  CHECK(Names(out->allocations[2]) == std::vector<std::string>{"node-1/gpu-0-half-b"});
}

TEST_CASE("claims already allocated are kept if the node can use them", "[dra]") {
  DraWorld w = FourGpus();
  ResourceClaim kept = Claim("kept", {Exactly("g", {.device_class_name = "gpu"})});
  AllocationResult elsewhere;
  elsewhere.devices.push_back({.request = "g", .device = {"gpu.example.com", "node-2", "gpu-0"}});
  NodeSelectorTerm term;
  term.match_fields.push_back({.key = "metadata.name", .op = NodeSelectorRequirement::Operator::kIn, .values = {"node-2"}});
  elsewhere.node_selector = std::vector<NodeSelectorTerm>{term};
  kept.allocation = elsewhere;
  ResourceClaim fresh = Claim("fresh", {Exactly("g", {.device_class_name = "gpu"})});
  auto out = w.Run({&kept, &fresh});
  REQUIRE(out.ok());
  CHECK(out->reason == "claim team-a/kept is allocated to devices that node node-1 cannot use");
  kept.allocation->node_selector->at(0).match_fields[0].values = {"node-1"};
  out = w.Run({&kept, &fresh});
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-2/gpu-0"});  // as it was
  CHECK(Names(out->allocations[1]) == std::vector<std::string>{"node-1/gpu-0"});
  CHECK(out->picks.size() == 1);
}

TEST_CASE("class and claim configuration go into the allocation", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["gpu"].config.push_back({.driver = "gpu.example.com", .parameters = {{"from", "class"}}});
  ResourceClaim claim = Claim("c", {Exactly("a", {.device_class_name = "gpu"}), Exactly("b", {.device_class_name = "gpu"})});
  claim.spec.config.push_back({.requests = {"a"}, .driver = "gpu.example.com", .parameters = {{"from", "claim"}}});
  claim.spec.config.push_back({.requests = {"zzz"}, .driver = "gpu.example.com"});
  auto out = w.Run({&claim});
  REQUIRE(out->fits());
  const auto& config = out->allocations[0].config;
  REQUIRE(config.size() == 2);
  CHECK(config[0].source == ConfigSource::kFromClass);
  CHECK(config[0].config.requests.empty());  // both requests use the class: all of them
  CHECK(config[1].source == ConfigSource::kFromClaim);
  CHECK(config[1].config.requests == std::vector<std::string>{"a"});
}

TEST_CASE("alternatives enumerate distinct allocations, and KeepWholeDevices keeps whole GPUs", "[dra]") {
  DraWorld w = PartitionedGpus(2);
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1-half-a"});
  ResourceClaim half = Claim("h", {Exactly("g", {.device_class_name = "half"})});
  absl::StatusOr<std::vector<Alternative>> all = EnumerateAllocations(w.Input({&half}), w.Options(), 10);
  REQUIRE(all.ok());
  std::vector<std::vector<std::string>> names;
  for (const Alternative& a : *all) names.push_back(Names(a.allocations[0]));
  CHECK(names == std::vector<std::vector<std::string>>{
                     {"node-1/gpu-0-half-a"}, {"node-1/gpu-0-half-b"}, {"node-1/gpu-1-half-b"}});
  CHECK(EnumerateAllocations(w.Input({&half}), w.Options(), 2)->size() == 2);

  // First fit splits GPU 0; keeping whole GPUs takes the other half of GPU 1.
  auto first_fit = w.Run({&half});
  CHECK(Names(first_fit->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-half-a"});
  KeepWholeDevices keep;
  AllocatorOptions options = w.Options();
  options.choice = &keep;
  options.max_alternatives = 8;
  auto chosen = w.Run({&half}, options);
  REQUIRE(chosen->fits());
  CHECK(chosen->alternatives == 3);
  CHECK(Names(chosen->allocations[0]) == std::vector<std::string>{"node-1/gpu-1-half-b"});
  CHECK(MeasureWholeLeft(w.devices, w.held, chosen->picks) == WholeLeft{.counter_sets = 1, .devices = 3});
}

TEST_CASE("PackingScore puts a node in use first, then the tightest fit", "[dra]") {
  DraWorld w = PartitionedGpus(2);  // two partitionable GPUs: two whole units
  ResourceClaim half = Claim("h", {Exactly("g", {.device_class_name = "half"})});
  auto idle = w.Run({&half});
  REQUIRE(idle->fits());
  CHECK(PackingScore(w.devices, w.held, idle->picks) == 25);  // idle; one unit of two taken
  CHECK(PackingScore(w.devices, w.held, {}) == 0);             // idle, nothing taken
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1-half-a"});
  KeepWholeDevices keep;
  AllocatorOptions options = w.Options();
  options.choice = &keep;
  options.max_alternatives = 8;
  auto in_use = w.Run({&half}, options);
  REQUIRE(in_use->fits());
  // In use (+50); the other half of GPU 1 leaves GPU 0 whole: one unit of two taken.
  CHECK(PackingScore(w.devices, w.held, in_use->picks) == 75);
  DraWorld none;
  CHECK(PackingScore(none.Gather(), none.held, {}) == 0);  // no devices at all
}

TEST_CASE("UnitFreeMilli: a partitionable GPU is one unit, a plain device another, a shared device by capacity", "[dra]") {
  DraWorld w = PartitionedGpus(2);
  w.Gather();
  CHECK(UnitFreeMilli(w.devices, w.held, {}) == std::vector<int64_t>{1000, 1000});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1-half-a"});
  ResourceClaim half = Claim("h", {Exactly("g", {.device_class_name = "half"})});
  auto out = w.Run({&half});  // first fit: a half of GPU 0
  REQUIRE(out->fits());
  CHECK(UnitFreeMilli(w.devices, w.held, {}) == std::vector<int64_t>{1000, 500});
  CHECK(UnitFreeMilli(w.devices, w.held, out->picks) == std::vector<int64_t>{500, 500});

  DraWorld shared = SharedGpu(std::nullopt);
  shared.slices.front().devices.push_back(Gpu("plain"));
  ResourceClaim a = Claim("a", {Exactly("g", {.device_class_name = "gpu", .capacity_requests = {{"memory", 30'000}}})});
  out = shared.Run({&a});
  REQUIRE(out->fits());
  CHECK(UnitFreeMilli(shared.devices, shared.held, out->picks) == std::vector<int64_t>{625, 1000});
  shared.held.Add(out->allocations[0]);
  shared.held.exclusive.insert({"gpu.example.com", "node-1", "plain"});
  CHECK(UnitFreeMilli(shared.devices, shared.held, {}) == std::vector<int64_t>{625, 0});
  // Admin access holds nothing.
  std::vector<Pick> admin = out->picks;
  admin[0].admin_access = true;
  shared.held = {};
  CHECK(UnitFreeMilli(shared.devices, shared.held, admin) == std::vector<int64_t>{1000, 1000});
}

// Two GPUs of 8 memory units published as quarters: GPU 0 has one quarter taken, GPU 1 two.
DraWorld QuarteredGpus() {
  DraWorld w;
  ResourceSlice counters = SliceOn("", "node-1", {}, 1, 2, "node-1-counters");
  counters.node_selection = {};
  ResourceSlice devices = SliceOn("node-1", "node-1", {}, 1, 2, "node-1-devices");
  for (int g = 0; g < 2; ++g) {
    const std::string set = StrCat("gpu-", g);
    counters.shared_counters.push_back({.name = set, .counters = {{"memory", 8000}}});
    for (int q = 0; q < 4; ++q) {
      devices.devices.push_back(Consuming(Gpu(StrCat("gpu-", g, "-q", q)), set, {{"memory", 2000}}));
    }
  }
  w.slices.push_back(counters);
  w.slices.push_back(devices);
  w.classes["quarter"] = Class("quarter");
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-0-q0"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1-q0"});
  w.held.exclusive.insert({"gpu.example.com", "node-1", "gpu-1-q1"});
  return w;
}

TEST_CASE("LeastFragmentation leaves the remainder the workload can still use; KeepWholeDevices cannot tell", "[dra]") {
  DraWorld w = QuarteredGpus();
  ResourceClaim quarter = Claim("q", {Exactly("g", {.device_class_name = "quarter"})});
  AllocatorOptions options = w.Options();
  options.max_alternatives = 16;
  KeepWholeDevices keep;
  options.choice = &keep;
  auto kept = w.Run({&quarter}, options);
  REQUIRE(kept->fits());
  // No GPU is whole either way: the first alternative, on GPU 0, leaves 1/2 and 1/2 free.
  CHECK(Names(kept->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-q1"});

  // A workload of 3/4-GPU pods: 1/2 + 1/2 free serves none of them; 3/4 + 1/4 serves one.
  gpu::FragModel workload({gpu::TargetClass{.gpu_milli = 750, .num_gpu = 1}});
  gpu::NodeShape node;
  node.cpu_free = 64'000;
  LeastFragmentation fgd(workload, node);
  options.choice = &fgd;
  auto chosen = w.Run({&quarter}, options);
  REQUIRE(chosen->fits());
  CHECK(Names(chosen->allocations[0]) == std::vector<std::string>{"node-1/gpu-1-q2"});
  CHECK(UnitFreeMilli(w.devices, w.held, chosen->picks) == std::vector<int64_t>{750, 250});
  // An empty workload leaves the choice to KeepWholeDevices.
  gpu::FragModel none;
  LeastFragmentation fallback(none, node);
  options.choice = &fallback;
  CHECK(Names(w.Run({&quarter}, options)->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-q1"});
}

// `claim` allocated on `w` by LeastFragmentation under `workload` among up to 16 alternatives
// (the node's CPU: 64 cores free).
auto RunLeastFragmentation(DraWorld& w, const ResourceClaim& claim, const gpu::FragModel& workload) {
  gpu::NodeShape node;
  node.cpu_free = 64'000;
  LeastFragmentation fgd(workload, node);
  AllocatorOptions options = w.Options();
  options.choice = &fgd;
  options.max_alternatives = 16;
  return w.Run({&claim}, options);
}

TEST_CASE("LeastFragmentation takes the least first: two halves of one GPU, not two whole GPUs", "[dra]") {
  // Found by the composition property: with a class that selects whole GPUs and halves alike,
  // FGD's measure alone (idle GPU counts as fragmented for the workload's CPU-only pods) chose two
  // whole GPUs for a claim of two devices, and a gang's later members found no room.
  DraWorld w = PartitionedGpus(2);
  w.classes["any"] = Class("any");
  ResourceClaim two = Claim("t", {Exactly("g", {.device_class_name = "any", .count = 2})});
  auto chosen = RunLeastFragmentation(
      w, two, gpu::FragModel({gpu::TargetClass{.cpu_milli = 1000}, gpu::TargetClass{.gpu_milli = 1000, .num_gpu = 1}}));
  REQUIRE(chosen->fits());
  CHECK(Names(chosen->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-half-a", "node-1/gpu-0-half-b"});
  CHECK(UnitFreeMilli(w.devices, w.held, chosen->picks) == std::vector<int64_t>{0, 1000});
}

TEST_CASE("with alternatives to choose among, the search tries the smallest devices first", "[dra]") {
  // Composition seed 1628: four devices of a class that selects whole GPUs and halves alike, on
  // a node of eight free GPUs. In the devices' own order the first 16 alternatives all begin with
  // whole GPUs (gpu-0 whole with every combination of the rest), so the choice never saw four
  // halves, took whole GPUs in one cycle and halves in another, and a gang's plan that counted
  // halves found its node full at the next attempt.
  DraWorld w = PartitionedGpus(8);
  w.classes["any"] = Class("any");
  ResourceClaim four = Claim("f", {Exactly("g", {.device_class_name = "any", .count = 4})});
  auto chosen = RunLeastFragmentation(w, four, gpu::FragModel({gpu::TargetClass{.gpu_milli = 1000, .num_gpu = 1}}));
  REQUIRE(chosen->fits());
  CHECK(Names(chosen->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-half-a", "node-1/gpu-0-half-b",
                                                                   "node-1/gpu-1-half-a", "node-1/gpu-1-half-b"});
  CHECK(UnitFreeMilli(w.devices, w.held, chosen->picks) ==
        std::vector<int64_t>{0, 0, 1000, 1000, 1000, 1000, 1000, 1000});
  // KeepWholeDevices sees the same alternatives: six whole GPUs left, not four.
  KeepWholeDevices keep;
  AllocatorOptions options = w.Options();
  options.max_alternatives = 16;
  options.choice = &keep;
  auto kept = w.Run({&four}, options);
  REQUIRE(kept->fits());
  CHECK(MeasureWholeLeft(w.devices, w.held, kept->picks).counter_sets == 6);
  // Without a choice the first allocation found in the devices' own order is taken, as
  // kube-scheduler takes it.
  auto first = w.Run({&four});
  REQUIRE(first->fits());
  CHECK(Names(first->allocations[0]) == std::vector<std::string>{"node-1/gpu-0-whole", "node-1/gpu-1-whole",
                                                                  "node-1/gpu-2-whole", "node-1/gpu-3-whole"});
}

TEST_CASE("the search gives up after its step budget with a reason", "[dra]") {
  DraWorld w = FourGpus();
  ResourceClaim claim = Claim("c", {Exactly("gpus", {.device_class_name = "gpu", .count = 3})},
                              {{.match_attribute = "gpu.example.com/numa"}});
  AllocatorOptions options = w.Options();
  options.max_steps = 3;
  auto out = w.Run({&claim}, options);
  REQUIRE(out.ok());
  CHECK(out->reason == "no allocation found for the pod's claims on node node-1 within 3 device trials");
}

TEST_CASE("the product's matcher evaluates CEL selectors through dra/cel", "[dra]") {
  DraWorld w = FourGpus();
  w.classes["h100"] = Class("h100", {"device.driver == \"gpu.example.com\" && "
                                     "device.attributes[\"gpu.example.com\"].model == \"H100\""});
  ResourceClaim claim = Claim("c", {Exactly("g", {.device_class_name = "h100",
                                                  .selectors = {"device.attributes[\"gpu.example.com\"].index > 2"}})});
  CelDeviceMatcher cel;
  AllocatorOptions options = w.Options();
  options.matcher = &cel;
  auto out = w.Run({&claim}, options);
  REQUIRE(out.ok());
  REQUIRE(out->fits());
  CHECK(Names(out->allocations[0]) == std::vector<std::string>{"node-1/gpu-3"});
  // The same expression again is the cached program, with the same answers.
  CHECK(*cel.Matches("device.driver == \"gpu.example.com\"", ViewOf(w.slices[0].devices[0], kDriver)));
  CHECK_FALSE(*cel.Matches("device.driver == \"other\"", ViewOf(w.slices[0].devices[0], kDriver)));
  // An expression that does not compile is an error naming the class and the selector.
  w.classes["bad"] = Class("bad", {"device.driver =="});
  ResourceClaim bad = Claim("b", {Exactly("g", {.device_class_name = "bad"})});
  auto error = w.Run({&bad}, options);
  REQUIRE_FALSE(error.ok());
  CHECK_THAT(std::string(error.status().message()), Catch::Contains("DeviceClass bad: selector #0 (device.driver ==)"));
}

}  // namespace dra_allocator_test
}  // namespace tessel::dra
