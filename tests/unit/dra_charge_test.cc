// What pods' DRA claims charge their queues (scheduler/state/dra_charge.h): the charge of each
// kind of request, the record that keeps it with the bound pod, and QueueQuota holding a team to
// its quota when its GPUs come through ResourceClaims, through the whole default profile.
#include <catch2/catch.hpp>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/state/dra_charge.h"
#include "scheduler/state/pod_charge.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace dra_charge_test {

using nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

json Class(const std::string& name, const std::string& resource) {
  json c = {{"metadata", {{"name", name}}},
            {"spec", {{"selectors", json::array({{{"cel", {{"expression", "device.driver == \"gpu.example.com\""}}}}})}}}};
  if (!resource.empty()) c["spec"]["extendedResourceName"] = resource;
  return c;
}

json Claim(const std::string& name, json requests, json results = nullptr) {
  json c = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "c-" + name}, {"resourceVersion", "1"}}},
            {"spec", {{"devices", {{"requests", std::move(requests)}}}}}};
  if (!results.is_null()) c["status"] = {{"allocation", {{"devices", {{"results", std::move(results)}}}}}};
  return c;
}

json Exactly(const std::string& name, json ask) { return {{"name", name}, {"exactly", std::move(ask)}}; }

Pod WithClaims(const std::string& name, std::vector<std::string> claims) {
  Pod pod = PodBuilder(name, "team-a").Requests("cpu:1").Build();
  pod.meta.uid = "uid-" + name;
  for (const std::string& c : claims) pod.resource_claims.push_back({.name = c, .resource_claim_name = c});
  return pod;
}

TEST_CASE("a pod's DRA claims charge each device to the resource its class names", "[dra][quota]") {
  ClusterObjectStore store;
  REQUIRE(store.PutRaw(RawKind::kDeviceClass, Class("gpu", "nvidia.com/gpu")).ok());
  REQUIRE(store.PutRaw(RawKind::kDeviceClass, Class("fpga", "")).ok());
  auto result = [](const std::string& request, const std::string& device) {
    return json{{"request", request}, {"driver", "gpu.example.com"}, {"pool", "p"}, {"device", device}};
  };
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("exact", json::array({
      Exactly("a", {{"deviceClassName", "gpu"}, {"count", 2}}),
      Exactly("b", {{"deviceClassName", "fpga"}}),                                       // count defaults to 1
      Exactly("watch", {{"deviceClassName", "gpu"}, {"adminAccess", true}, {"count", 4}})}))).ok());  // nothing
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("all", json::array({
      Exactly("every", {{"deviceClassName", "gpu"}, {"allocationMode", "All"}})}))).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("all-allocated", json::array({
      Exactly("every", {{"deviceClassName", "gpu"}, {"allocationMode", "All"}})}),
      json::array({result("every", "d0"), result("every", "d1"), result("every", "d2")}))).ok());
  const json list = json::array({{{"name", "pick"}, {"firstAvailable", json::array({
      {{"name", "big"}, {"deviceClassName", "gpu"}, {"count", 4}},
      {{"name", "small"}, {"deviceClassName", "fpga"}, {"count", 1}}})}}});
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("list", list)).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("list-small", list, json::array({result("pick/small", "f0")}))).ok());
  auto charge = [&](std::vector<std::string> claims) {
    return DraChargeOf(WithClaims("p", std::move(claims)), *store.view()).DebugString();
  };
  CHECK(charge({"exact"}) == "deviceclass.resource.kubernetes.io/fpga:1,nvidia.com/gpu:2");
  CHECK(charge({"all"}) == "nvidia.com/gpu:1");            // not allocated yet: at least one
  CHECK(charge({"all-allocated"}) == "nvidia.com/gpu:3");  // what it was given
  CHECK(charge({"list"}) == "nvidia.com/gpu:4");           // the first subrequest
  CHECK(charge({"list-small"}) == "deviceclass.resource.kubernetes.io/fpga:1");  // the one allocated
  CHECK(charge({"exact", "exact", "missing"}) == "deviceclass.resource.kubernetes.io/fpga:1,nvidia.com/gpu:2");
}

TEST_CASE("the charge record keeps a bound pod's DRA charge; a malformed one is named", "[dra][quota][charge]") {
  Pod pod = WithClaims("p", {"c"});
  pod.dra_charge.Set("nvidia.com/gpu", 2000);
  pod.dra_charge.Set("deviceclass.resource.kubernetes.io/fpga", 1000);
  const std::string record = ChargeRecord(pod, {});
  CHECK(json::parse(record)["tessel.io/dra-charge"] == "deviceclass.resource.kubernetes.io/fpga=1,nvidia.com/gpu=2");
  Pod restarted = WithClaims("p", {"c"});  // seen first after a restart, its claims since released
  restarted.meta.annotations["tessel.io/charge"] = record;
  RestoreCharge(restarted);
  CHECK(restarted.dra_charge == pod.dra_charge);
  Pod broken = WithClaims("p", {"c"});
  broken.meta.annotations["tessel.io/charge"] = R"({"tessel.io/dra-charge": "nvidia.com/gpu"})";
  RestoreCharge(broken);
  REQUIRE(broken.decode_warnings.size() == 1);
  CHECK_THAT(broken.decode_warnings[0], Catch::Contains("tessel.io/dra-charge") && Catch::Contains("not name=quantity"));
}

json Slice(int devices) {
  json list = json::array();
  for (int i = 0; i < devices; ++i) list.push_back({{"name", StrCat("gpu-", i)}});
  return {{"metadata", {{"name", "n1-gpus"}}},
          {"spec", {{"driver", "gpu.example.com"}, {"nodeName", "n1"},
                    {"pool", {{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}}, {"devices", list}}}};
}

TEST_CASE("a queue's GPU quota holds the GPUs its pods take through ResourceClaims", "[dra][quota]") {
  testing::CoreHarness h;
  h.AddNode(NodeBuilder("n1").Allocatable("cpu:32,memory:128Gi,pods:110").Build());
  REQUIRE(h.s->OnRawObject(RawKind::kResourceSlice, Slice(4)).ok());
  auto queue = [&](const std::string& resource) {
    REQUIRE(h.ApplyQueueObject({{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", "team"}}},
                                {"spec", {{"namespaces", {"team-a"}}, {"nominalQuota", {{resource, "1"}}}}}})
                .ok());
  };
  auto claim = [&](const std::string& name) {
    REQUIRE(h.s->OnRawObject(RawKind::kResourceClaim,
                             Claim(name, json::array({Exactly("gpu", {{"deviceClassName", "gpu"}, {"count", 1}})}))).ok());
  };
  SECTION("a class that serves nvidia.com/gpu: the queue's nvidia.com/gpu covers it") {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, Class("gpu", "nvidia.com/gpu")).ok());
    queue("nvidia.com/gpu");
    claim("a");
    claim("b");
    h.AddPod(WithClaims("a", {"a"}));
    h.AddPod(WithClaims("b", {"b"}));
  }
  SECTION("a class without one: its implicit name") {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, Class("gpu", "")).ok());
    queue("deviceclass.resource.kubernetes.io/gpu");
    claim("a");
    claim("b");
    h.AddPod(WithClaims("a", {"a"}));
    h.AddPod(WithClaims("b", {"b"}));
  }
  SECTION("claims that come after their pods are charged when they come") {
    REQUIRE(h.s->OnRawObject(RawKind::kDeviceClass, Class("gpu", "nvidia.com/gpu")).ok());
    queue("nvidia.com/gpu");
    h.AddPod(WithClaims("a", {"a"}));
    h.AddPod(WithClaims("b", {"b"}));
    h.RunUntilIdle();
    REQUIRE(h.binds().empty());  // no claims yet
    claim("a");
    claim("b");
  }
  h.RunUntilIdle();
  h.clock.Advance(absl::Seconds(60));
  h.RunUntilIdle();
  REQUIRE(h.binds().size() == 1);  // four devices free, one GPU of quota
  REQUIRE(h.api.bind_annotations.size() == 1);
  const json record = json::parse(h.api.bind_annotations[0].second.at("tessel.io/charge"));
  CHECK_THAT(record.value("tessel.io/dra-charge", ""), Catch::EndsWith("=1"));
}

}  // namespace dra_charge_test
}  // namespace tessel
