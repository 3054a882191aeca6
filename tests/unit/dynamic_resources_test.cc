// DynamicResources: claim resolution (named claims, templates through status.resourceClaimStatuses),
// the allocator per node, Reserve/Unreserve in memory, PreBind's status write through the fake API;
// and the pod decode keeps spec.resourceClaims, naming a malformed entry.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "plugins/dynamic_resources/dynamic_resources.h"
#include "plugins/tessel_gpu/tessel_gpu.h"
#include "scheduler/api/decode.h"
#include "scheduler/state/cluster_objects.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"
#include "fake_handle.h"

namespace tessel {
namespace dynamic_resources_test {

using dynamic_resources::DynamicResources;
using testing::FakeHandle;
using nlohmann::json;

json PodWithClaims(json claims) {
  json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "infer", "namespace": "team-a"},
      "spec": {"schedulerName": "tessel",
               "containers": [{"name": "main", "image": "busybox",
                               "resources": {"claims": [{"name": "gpu"}]}}]}})");
  pod["spec"]["resourceClaims"] = std::move(claims);
  return pod;
}

// A cluster of DRA objects in a FakeHandle's store: `gpus` whole GPUs on each of `nodes` nodes
// (one pool per node), a class for them, and claims added by the tests.
struct DraCluster {
  FakeHandle h;
  DraCluster(std::vector<std::string> nodes, int gpus) {
    for (const std::string& node : nodes) {
      h.AddNode(testing::NodeBuilder(node).Build());
      json devices = json::array();
      for (int i = 0; i < gpus; ++i) devices.push_back({{"name", StrCat("gpu-", i)}});
      REQUIRE(h.objects().PutRaw(RawKind::kResourceSlice, {
          {"metadata", {{"name", StrCat(node, "-gpus")}, {"resourceVersion", "1"}}},
          {"spec", {{"driver", "gpu.example.com"}, {"nodeName", node},
                    {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
                    {"devices", devices}}}}).ok());
    }
    REQUIRE(h.objects().PutRaw(RawKind::kDeviceClass, json::parse(R"({"metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})")).ok());
  }
  // A claim for `count` GPUs in team-a; `owner` is the pod it was generated for ("" for none).
  json Claim(const std::string& name, int count, const std::string& owner = "") {
    json claim = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name},
                                {"resourceVersion", "5"}}},
                  {"spec", {{"devices", {{"requests", json::array({{{"name", "gpus"},
                      {"exactly", {{"deviceClassName", "gpu"}, {"count", count}}}}})}}}}}};
    if (!owner.empty()) {
      claim["metadata"]["ownerReferences"] =
          json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", owner}, {"uid", "pod-" + owner}}});
    }
    return claim;
  }
  void Put(const json& claim) { REQUIRE(h.objects().PutRaw(RawKind::kResourceClaim, claim).ok()); }
};

Pod ClaimPod(const std::string& name, json claims, json status = nullptr) {
  json pod = PodWithClaims(std::move(claims));
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "pod-" + name;
  if (!status.is_null()) pod["status"] = std::move(status);
  absl::StatusOr<Pod> decoded = DecodePod(pod);
  REQUIRE(decoded.ok());
  return *decoded;
}

// The devices of a claim status JSON the plugin wrote, as "pool/device".
std::vector<std::string> DevicesOf(const std::string& status_json) {
  std::vector<std::string> out;
  const json status = json::parse(status_json);
  for (const json& r : status.at("allocation").at("devices").at("results")) {
    out.push_back(StrCat(r["pool"].get<std::string>(), "/", r["device"].get<std::string>()));
  }
  return out;
}

TEST_CASE("DynamicResources resolves the pod's claims or says which one it waits for", "[plugins][dra]") {
  DraCluster c({"n1"}, 2);
  DynamicResources plugin(c.h);
  CycleState state;
  SECTION("no claims: skipped") {
    CHECK(plugin.PreFilter(state, ClaimPod("plain", json::array())).IsSkip());
  }
  SECTION("a named claim that is not there waits, named; once it is there the pod resolves") {
    const Pod pod = ClaimPod("infer", json::parse(R"([{"name": "gpu", "resourceClaimName": "shared-gpu"}])"));
    Status st = plugin.PreFilter(state, pod);
    CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
    CHECK(st.reasons() == std::vector<std::string>{
        "resource claim \"gpu\" (ResourceClaim shared-gpu): resourceclaim \"shared-gpu\" not found"});
    c.Put(c.Claim("shared-gpu", 1));
    CHECK(plugin.PreFilter(state, pod).ok());
  }
  SECTION("a template: the claim status.resourceClaimStatuses names, made for the pod") {
    const json claims = json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}])");
    Status st = plugin.PreFilter(state, ClaimPod("infer", claims));
    CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
    CHECK(st.reasons() == std::vector<std::string>{
        "resource claim \"gpu\" (ResourceClaimTemplate single-gpu): waiting for the resourceclaim controller to "
        "create the claim"});
    const json status = json::parse(R"({"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "infer-gpu-x7"}]})");
    c.Put(c.Claim("infer-gpu-x7", 1, "someone-else"));
    st = plugin.PreFilter(state, ClaimPod("infer", claims, status));
    CHECK(st.reasons() == std::vector<std::string>{
        "resource claim \"gpu\" (ResourceClaimTemplate single-gpu): resourceclaim \"infer-gpu-x7\" was not created "
        "for the pod"});
    c.Put(c.Claim("infer-gpu-x7", 1, "infer"));
    CHECK(plugin.PreFilter(state, ClaimPod("infer", claims, status)).ok());
  }
  SECTION("a class the claim asks for that does not exist") {
    json claim = c.Claim("odd", 1);
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "tpu";
    c.Put(claim);
    Status st = plugin.PreFilter(state, ClaimPod("infer", json::parse(R"([{"name": "gpu", "resourceClaimName": "odd"}])")));
    CHECK(st.reasons() == std::vector<std::string>{"claim team-a/odd, request gpus: deviceclass \"tpu\" not found"});
  }
  SECTION("a ResourceSlice that does not decode holds its pool only, naming it (fail closed there)") {
    // A broken driver's slice must not hold every team's DRA pods: its pool serves nothing, the
    // other pools serve as before, and a pod that finds no room says why.
    c.Put(c.Claim("one", 1));
    c.Put(c.Claim("three", 3));
    REQUIRE(c.h.objects().PutRaw(RawKind::kResourceSlice, json::parse(R"({"metadata": {"name": "broken"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "x", "generation": "one"},
                 "devices": [{"name": "gpu-9"}]}})")).ok());
    const NodeInfo& n1 = *c.h.snapshot().Get("n1");
    const Pod one = ClaimPod("infer", json::parse(R"([{"name": "gpu", "resourceClaimName": "one"}])"));
    REQUIRE(plugin.PreFilter(state, one).ok());
    CHECK(plugin.Filter(state, one, n1).ok());  // pool n1's two devices
    CycleState big_state;
    const Pod big = ClaimPod("big", json::parse(R"([{"name": "gpu", "resourceClaimName": "three"}])"));
    REQUIRE(plugin.PreFilter(big_state, big).ok());
    CHECK_FALSE(plugin.Filter(big_state, big, n1).ok());  // gpu-9 is not counted: its slice is unreadable
    CHECK_THAT(plugin.ExplainRejection(big_state, big, n1),
               Catch::Contains("resource pool gpu.example.com/x is invalid: ResourceSlice broken: spec.pool.generation"));
    // A slice whose driver or pool cannot be read at all still holds every pod with claims.
    REQUIRE(c.h.objects().PutRaw(RawKind::kResourceSlice, json::parse(R"({"metadata": {"name": "nameless"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1"}})")).ok());
    CycleState held;
    Status st = plugin.PreFilter(held, one);
    CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
    REQUIRE(st.reasons().size() == 1);
    CHECK_THAT(st.reasons()[0], Catch::StartsWith("ResourceSlice nameless: spec.pool"));
  }
}

TEST_CASE("DynamicResources filters nodes by what the allocator finds there", "[plugins][dra]") {
  DraCluster c({"n1", "n2"}, 2);
  // n2's GPUs are both held by a claim someone else allocated.
  json held = c.Claim("held", 2);
  held["status"] = json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "gpus", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"},
      {"request": "gpus", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-1"}]}},
      "reservedFor": [{"resource": "pods", "name": "other", "uid": "pod-other"}]})");
  c.Put(held);
  c.Put(c.Claim("two", 2));
  c.Put(c.Claim("three", 3));
  DynamicResources plugin(c.h);
  CycleState state;
  const NodeInfo& n1 = *c.h.snapshot().Get("n1");
  const NodeInfo& n2 = *c.h.snapshot().Get("n2");
  const Pod two = ClaimPod("a", json::parse(R"([{"name": "gpu", "resourceClaimName": "two"}])"));
  REQUIRE(plugin.PreFilter(state, two).ok());
  CHECK(plugin.Filter(state, two, n1).ok());
  Status st = plugin.Filter(state, two, n2);
  CHECK(st.code() == Code::kUnschedulable);  // resolvable: preemption may free devices
  CHECK(st.reasons() == std::vector<std::string>{"cannot allocate all claims"});

  const Pod three = ClaimPod("b", json::parse(R"([{"name": "gpu", "resourceClaimName": "three"}])"));
  CycleState state3;
  REQUIRE(plugin.PreFilter(state3, three).ok());
  CHECK_FALSE(plugin.Filter(state3, three, n1).ok());  // two GPUs there, three asked
}

TEST_CASE("DynamicResources decodes a ResourceSlice once per version; an update is read at the next pod",
          "[plugins][dra]") {
  DraCluster c({"n1", "n2"}, 2);
  c.Put(c.Claim("three", 3));
  DynamicResources plugin(c.h);
  const NodeInfo& n1 = *c.h.snapshot().Get("n1");
  const Pod pod = ClaimPod("a", json::parse(R"([{"name": "gpu", "resourceClaimName": "three"}])"));
  CycleState first;
  REQUIRE(plugin.PreFilter(first, pod).ok());
  CHECK(plugin.SlicesDecoded() == 2);
  CHECK_FALSE(plugin.Filter(first, pod, n1).ok());  // two GPUs there, three asked
  CycleState again;
  REQUIRE(plugin.PreFilter(again, pod).ok());
  CHECK(plugin.SlicesDecoded() == 2);  // nothing changed: nothing decoded
  // n1's driver publishes a third GPU: that slice alone is decoded again, and the claim fits.
  REQUIRE(c.h.objects().PutRaw(RawKind::kResourceSlice, {
      {"metadata", {{"name", "n1-gpus"}, {"resourceVersion", "2"}}},
      {"spec", {{"driver", "gpu.example.com"}, {"nodeName", "n1"},
                {"pool", {{"name", "n1"}, {"generation", 2}, {"resourceSliceCount", 1}}},
                {"devices", json::array({{{"name", "gpu-0"}}, {{"name", "gpu-1"}}, {{"name", "gpu-2"}}})}}}}).ok());
  CycleState updated;
  REQUIRE(plugin.PreFilter(updated, pod).ok());
  CHECK(plugin.SlicesDecoded() == 3);
  CHECK(plugin.Filter(updated, pod, n1).ok());
  // A slice that stops decoding makes its pool serve nothing, naming it, and is not decoded again
  // until it changes; the other pool serves as before.
  REQUIRE(c.h.objects().PutRaw(RawKind::kResourceSlice, {
      {"metadata", {{"name", "n2-gpus"}, {"resourceVersion", "2"}}},
      {"spec", {{"driver", "gpu.example.com"}, {"nodeName", "n2"},
                {"pool", {{"name", "n2"}, {"generation", "two"}, {"resourceSliceCount", 1}}},
                {"devices", json::array({{{"name", "gpu-0"}}, {{"name", "gpu-1"}}, {{"name", "gpu-2"}}})}}}}).ok());
  const NodeInfo& n2 = *c.h.snapshot().Get("n2");
  CycleState broken;
  REQUIRE(plugin.PreFilter(broken, pod).ok());
  CHECK(plugin.Filter(broken, pod, n1).ok());
  CHECK_FALSE(plugin.Filter(broken, pod, n2).ok());
  CHECK_THAT(plugin.ExplainRejection(broken, pod, n2),
             Catch::Contains("resource pool gpu.example.com/n2 is invalid: ResourceSlice n2-gpus: spec.pool.generation"));
  CycleState again_broken;
  REQUIRE(plugin.PreFilter(again_broken, pod).ok());
  CHECK(plugin.SlicesDecoded() == 4);
}

TEST_CASE("DynamicResources: Reserve takes devices from later pods, Unreserve gives them back, PreBind writes",
          "[plugins][dra]") {
  DraCluster c({"n1"}, 2);
  c.Put(c.Claim("first", 1));
  c.Put(c.Claim("second", 1));
  c.Put(c.Claim("third", 1));
  DynamicResources plugin(c.h);
  const NodeInfo& n1 = *c.h.snapshot().Get("n1");
  const Pod a = ClaimPod("a", json::parse(R"([{"name": "gpu", "resourceClaimName": "first"}])"));
  const Pod b = ClaimPod("b", json::parse(R"([{"name": "gpu", "resourceClaimName": "second"}])"));
  const Pod d = ClaimPod("d", json::parse(R"([{"name": "gpu", "resourceClaimName": "third"}])"));
  testing::FakeClusterApi& api = c.h.recording_api();

  CycleState sa;
  REQUIRE(plugin.PreFilter(sa, a).ok());
  REQUIRE(plugin.Reserve(sa, a, "n1").ok());
  CHECK(plugin.InFlight() == 1);
  CycleState sb;
  REQUIRE(plugin.PreFilter(sb, b).ok());
  REQUIRE(plugin.Reserve(sb, b, "n1").ok());
  // Both GPUs are taken by the two reservations: the third pod does not fit.
  CycleState sd;
  REQUIRE(plugin.PreFilter(sd, d).ok());
  CHECK_FALSE(plugin.Filter(sd, d, n1).ok());

  SECTION("PreBind writes each claim's allocation and reservedFor; no device is given twice") {
    REQUIRE(plugin.PreBind(sa, a, "n1").ok());
    REQUIRE(plugin.PreBind(sb, b, "n1").ok());
    REQUIRE(api.claim_statuses.size() == 2);
    CHECK(api.claim_statuses[0].first == "team-a/first");
    CHECK(api.claim_statuses[1].first == "team-a/second");
    const std::vector<std::string> da = DevicesOf(api.claim_statuses[0].second);
    const std::vector<std::string> db = DevicesOf(api.claim_statuses[1].second);
    REQUIRE(da.size() == 1);
    REQUIRE(db.size() == 1);
    CHECK(da[0] != db[0]);
    const json status = json::parse(api.claim_statuses[0].second);
    CHECK(status["reservedFor"] == json::parse(R"([{"resource": "pods", "name": "a", "uid": "pod-a"}])"));
    CHECK(status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] == "n1");
    // The informer delivers the written claims: the memory is no longer needed, the devices stay taken.
    for (const auto& [key, st] : api.claim_statuses) {
      json claim = c.Claim(key.substr(key.find('/') + 1), 1);
      claim["status"] = json::parse(st);
      c.Put(claim);
    }
    CycleState again;
    REQUIRE(plugin.PreFilter(again, d).ok());
    CHECK(plugin.InFlight() == 0);
    CHECK_FALSE(plugin.Filter(again, d, n1).ok());
  }
  SECTION("Unreserve forgets the allocation: the device is free again") {
    plugin.Unreserve(sb, b, "n1");
    CHECK(plugin.InFlight() == 1);
    CycleState again;
    REQUIRE(plugin.PreFilter(again, d).ok());
    CHECK(plugin.Filter(again, d, n1).ok());
    CHECK(api.claim_statuses.empty());  // nothing was written, nothing to undo
  }
  SECTION("a failed write fails PreBind; Unreserve after a write undoes it") {
    REQUIRE(plugin.PreBind(sa, a, "n1").ok());
    plugin.Unreserve(sa, a, "n1");
    REQUIRE(api.claim_statuses.size() == 2);
    CHECK(json::parse(api.claim_statuses[1].second) == json::parse(R"({"allocation": null, "reservedFor": null})"));
    api.claim_status_answer = absl::UnavailableError("apiserver down");
    Status st = plugin.PreBind(sb, b, "n1");
    CHECK(st.code() == Code::kError);
    CHECK_THAT(st.reasons().at(0), Catch::Contains("ResourceClaim team-a/second: apiserver down"));
  }
}

TEST_CASE("DynamicResources forgets an allocation it wrote once the claim is released, seen allocated or not",
          "[plugins][dra]") {
  DraCluster c({"n1"}, 1);
  c.Put(c.Claim("first", 1));
  c.Put(c.Claim("second", 1));
  DynamicResources plugin(c.h);
  const NodeInfo& n1 = *c.h.snapshot().Get("n1");
  const Pod a = ClaimPod("a", json::parse(R"([{"name": "gpu", "resourceClaimName": "first"}])"));
  const Pod b = ClaimPod("b", json::parse(R"([{"name": "gpu", "resourceClaimName": "second"}])"));
  CycleState sa;
  REQUIRE(plugin.PreFilter(sa, a).ok());
  REQUIRE(plugin.Reserve(sa, a, "n1").ok());
  REQUIRE(plugin.PreBind(sa, a, "n1").ok());
  auto b_fits = [&] {
    CycleState sb;
    REQUIRE(plugin.PreFilter(sb, b).ok());
    return plugin.Filter(sb, b, n1).ok();
  };
  SECTION("the first version after the write carries only the finalizer: the device stays taken") {
    json patched = c.Claim("first", 1);
    patched["metadata"]["resourceVersion"] = "6";
    patched["metadata"]["finalizers"] = json::array({"resource.kubernetes.io/delete-protection"});
    c.Put(patched);
    CHECK_FALSE(b_fits());
    CHECK(plugin.InFlight() == 1);
  }
  SECTION("released before any PreFilter saw it allocated (its pod ended): the device is free") {
    json released = c.Claim("first", 1);
    released["metadata"]["resourceVersion"] = "9";  // deallocated, finalizer gone
    c.Put(released);
    CHECK(b_fits());
    CHECK(plugin.InFlight() == 0);
  }
  SECTION("the same version as reserved is not a release") {
    CHECK_FALSE(b_fits());
    CHECK(plugin.InFlight() == 1);
  }
}

TEST_CASE("a learned workload counts a pod whose GPUs come only through its claims by what it took", "[plugins][dra]") {
  DraCluster c({"n1"}, 4);
  c.Put(c.Claim("pair", 2));
  auto tessel = tessel_gpu::Tessel::New({}, c.h);
  REQUIRE(tessel.ok());
  DynamicResources plugin(c.h);
  const Pod a = ClaimPod("a", json::parse(R"([{"name": "gpu", "resourceClaimName": "pair"}])"));
  CycleState state;
  REQUIRE(plugin.PreFilter(state, a).ok());
  REQUIRE((*tessel)->PreFilter(state, a).ok());
  // PreFilter sees no GPU request to count: the pod is counted once its devices are reserved.
  CHECK((*tessel)->workload().observed() == 0);
  REQUIRE(GpuWorkloadOf(state) != nullptr);
  REQUIRE(plugin.Reserve(state, a, "n1").ok());
  CHECK((*tessel)->workload().observed() == 1);
  CHECK((*tessel)->workload().CountOf(gpu::TargetClass{.gpu_milli = 1000, .num_gpu = 2}) == 2);  // doubled
  // Another attempt of the same pod is not counted again.
  plugin.Unreserve(state, a, "n1");
  CycleState again;
  REQUIRE(plugin.PreFilter(again, a).ok());
  REQUIRE((*tessel)->PreFilter(again, a).ok());
  REQUIRE(plugin.Reserve(again, a, "n1").ok());
  CHECK((*tessel)->workload().observed() == 1);
}

TEST_CASE("DynamicResources keeps an allocated claim's devices and only adds the pod to reservedFor",
          "[plugins][dra]") {
  DraCluster c({"n1", "n2"}, 1);
  json shared = c.Claim("shared", 1);
  shared["status"] = json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "gpus", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}]},
      "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}},
      "reservedFor": [{"resource": "pods", "name": "first", "uid": "pod-first"}]})");
  c.Put(shared);
  DynamicResources plugin(c.h);
  const Pod pod = ClaimPod("second", json::parse(R"([{"name": "gpu", "resourceClaimName": "shared"}])"));
  CycleState state;
  REQUIRE(plugin.PreFilter(state, pod).ok());
  // The claim's device is on n2 only: n1 cannot use it.
  CHECK(plugin.Filter(state, pod, *c.h.snapshot().Get("n1")).reasons() ==
        std::vector<std::string>{"resourceclaim not available on the node"});
  REQUIRE(plugin.Filter(state, pod, *c.h.snapshot().Get("n2")).ok());
  REQUIRE(plugin.Reserve(state, pod, "n2").ok());
  CHECK(plugin.InFlight() == 0);
  REQUIRE(plugin.PreBind(state, pod, "n2").ok());
  testing::FakeClusterApi& api = c.h.recording_api();
  REQUIRE(api.claim_statuses.size() == 1);
  const json status = json::parse(api.claim_statuses[0].second);
  CHECK(DevicesOf(api.claim_statuses[0].second) == std::vector<std::string>{"n2/gpu-0"});
  CHECK(status["reservedFor"] == json::parse(R"([{"resource": "pods", "name": "first", "uid": "pod-first"},
                                                 {"resource": "pods", "name": "second", "uid": "pod-second"}])"));
}

TEST_CASE("the pod decode keeps spec.resourceClaims and names a malformed entry", "[decode][dra]") {
  absl::StatusOr<Pod> pod = DecodePod(PodWithClaims(json::parse(R"([{"name": "gpu", "resourceClaimName": "c"}])")));
  REQUIRE(pod.ok());
  REQUIRE(pod->resource_claims.size() == 1);
  CHECK(pod->resource_claims[0].name == "gpu");
  CHECK(pod->resource_claims[0].resource_claim_name == "c");
  CHECK(pod->resource_claims[0].resource_claim_template_name.empty());

  struct Case {
    const char* claims;
    const char* want;
  };
  const Case cases[] = {
      {R"([{"resourceClaimName": "c"}])", "Pod team-a/infer: spec.resourceClaims[0].name: missing"},
      {R"([{"name": "gpu"}])",
       "Pod team-a/infer: spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName "
       "must be set"},
      {R"([{"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}])",
       "Pod team-a/infer: spec.resourceClaims[0]: exactly one of resourceClaimName and resourceClaimTemplateName "
       "must be set"},
      {R"({"name": "gpu"})", "Pod team-a/infer: spec.resourceClaims: expected a list, got object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Pod> bad = DecodePod(PodWithClaims(json::parse(c.claims)));
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()), Catch::StartsWith(c.want));
  }
}

}  // namespace dynamic_resources_test
}  // namespace tessel
