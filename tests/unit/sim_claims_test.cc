// The simulated cluster's Dynamic Resource Allocation (bench/sim/simulated_claims.cc): DRA objects
// of a snapshot reach the DynamicResources plugin, its claim status writes land in the cluster's
// store with the API server's preconditions, the claims it makes for extended resources are
// stored, and a pod that ends releases its claims as the resourceclaim controller does (and the
// claims it owns go, as the garbage collector deletes them), so the devices serve the next pod.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "bench/sim/sim_world.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/state/cluster_objects.h"

namespace tessel::bench {
namespace sim_claims_test {

using nlohmann::json;

ObjectList ReadSnapshot(const std::string& name) {
  std::ifstream in(std::string(TESSEL_REPLAY_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ObjectList> objects = DecodeList(text.str());
  REQUIRE(objects.ok());
  return *std::move(objects);
}

struct World {
  SchedulerConfig config;
  std::unique_ptr<SimWorld> w;
  std::vector<std::string> warnings;
  explicit World(const ObjectList& objects) {
    auto made = SimWorld::New({.config = &config});
    REQUIRE(made.ok());
    w = *std::move(made);
    warnings = w->sim.Load(objects);
  }
  SimulatedCluster& sim() { return w->sim; }
  // The claim as the simulated cluster holds it now.
  json Claim(const std::string& key) {
    const RawObject* raw = w->scheduler->Objects()->RawOf(RawKind::kResourceClaim, key);
    REQUIRE(raw != nullptr);
    return *raw->json;
  }
  // The claim's allocated devices as "pool/device", and the pods of its reservedFor.
  std::vector<std::string> Devices(const std::string& key) {
    std::vector<std::string> out;
    const json claim = Claim(key);
    if (!claim.contains("status") || !claim["status"].contains("allocation")) return out;
    for (const json& r : claim["status"]["allocation"]["devices"]["results"]) {
      out.push_back(r["pool"].get<std::string>() + "/" + r["device"].get<std::string>());
    }
    return out;
  }
  std::vector<std::string> ReservedFor(const std::string& key) {
    std::vector<std::string> out;
    const json claim = Claim(key);
    if (!claim.contains("status") || !claim["status"].contains("reservedFor")) return out;
    for (const json& r : claim["status"]["reservedFor"]) {
      out.push_back(r["name"].get<std::string>() + "@" + r["uid"].get<std::string>());
    }
    return out;
  }
};

TEST_CASE("replayed DRA claims: two pods get the two GPUs, the third gets one once a pod ends", "[dra][sim]") {
  World world(ReadSnapshot("dra_claims.json"));
  SimulatedCluster& sim = world.sim();
  REQUIRE(world.warnings.size() == 1);
  CHECK(world.warnings[0].starts_with("DeviceClass broken: spec.selectors[0].cel.expression"));

  sim.RunUntilIdle();
  CHECK(sim.placements() == std::map<std::string, std::string>{
      {"team-a/infer-0", "dra-0"}, {"team-a/infer-1", "dra-0"}, {"team-a/infer-2", ""}});
  CHECK(sim.reasons().at("team-a/infer-2") == "0/2 nodes are available: 2 cannot allocate all claims.");
  // The statuses PreBind wrote: one device each, the pod in reservedFor; the third claim untouched.
  const std::vector<std::string> first = world.Devices("team-a/infer-0-gpu");
  const std::vector<std::string> second = world.Devices("team-a/infer-1-gpu");
  REQUIRE(first.size() == 1);
  REQUIRE(second.size() == 1);
  CHECK(first != second);
  CHECK(world.ReservedFor("team-a/infer-0-gpu") == std::vector<std::string>{"infer-0@pod-uid-0"});
  CHECK(world.ReservedFor("team-a/infer-1-gpu") == std::vector<std::string>{"infer-1@pod-uid-1"});
  CHECK(world.Devices("team-a/infer-2-gpu").empty());
  CHECK(world.Claim("team-a/infer-0-gpu")["metadata"]["resourceVersion"] != "20");

  SECTION("the pod finishes: its claim is deallocated and the waiting pod takes the device") {
    sim.EndPod("team-a/infer-0");
    CHECK(world.Devices("team-a/infer-0-gpu").empty());
    CHECK(world.ReservedFor("team-a/infer-0-gpu").empty());
    CHECK(world.Devices("team-a/infer-1-gpu") == second);  // another pod's claim is kept
    sim.RunUntilIdle();
    CHECK(sim.placements().at("team-a/infer-2") == "dra-0");
    CHECK(world.Devices("team-a/infer-2-gpu") == first);
    CHECK(world.ReservedFor("team-a/infer-2-gpu") == std::vector<std::string>{"infer-2@pod-uid-2"});
  }
  SECTION("the pod is evicted: the same") {
    Pod victim;
    victim.meta.namespace_ = "team-a";
    victim.meta.name = "infer-1";
    victim.meta.uid = "pod-uid-1";
    REQUIRE(sim.Evict(victim, "test").ok());
    CHECK(world.Devices("team-a/infer-1-gpu").empty());
    sim.RunUntilIdle();
    CHECK(sim.placements().at("team-a/infer-2") == "dra-0");
    CHECK(world.Devices("team-a/infer-2-gpu") == second);
  }
  SECTION("without a pod ending, nothing more is placed") {
    sim.RunUntilIdle();
    CHECK(sim.placements().at("team-a/infer-2").empty());
  }
}

TEST_CASE("the simulated claim status write: preconditions, merge, shared claims released last", "[dra][sim]") {
  World world(ReadSnapshot("dra_claims.json"));
  SimulatedCluster& sim = world.sim();
  const std::string key = "team-a/infer-0-gpu";
  ObjectMeta meta{.name = "infer-0-gpu", .namespace_ = "team-a", .uid = "claim-uid-0", .resource_version = "20"};
  const json allocation = json::parse(R"({"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
      "pool": "dra-0", "device": "gpu-1"}]}})");
  const json both = {{"allocation", allocation},
                     {"reservedFor", {{{"resource", "pods"}, {"name", "a"}, {"uid", "ua"}},
                                      {{"resource", "pods"}, {"name", "b"}, {"uid", "ub"}}}}};

  SECTION("a claim that is not there, another uid, a stale resourceVersion") {
    ObjectMeta gone = meta;
    gone.name = "nothing";
    CHECK(sim.WriteResourceClaimStatus(gone, both.dump()).code() == absl::StatusCode::kNotFound);
    ObjectMeta other = meta;
    other.uid = "someone-else";
    absl::Status st = sim.WriteResourceClaimStatus(other, both.dump());
    CHECK(st.code() == absl::StatusCode::kAlreadyExists);
    CHECK(st.message() == "Precondition failed: UID in precondition: someone-else, UID in object meta: claim-uid-0");
    ObjectMeta stale = meta;
    stale.resource_version = "19";
    CHECK(sim.WriteResourceClaimStatus(stale, both.dump()).code() == absl::StatusCode::kAlreadyExists);
    CHECK(world.Devices(key).empty());  // none of them changed the claim
  }
  SECTION("a write replaces the status members it names; the next one needs the new resourceVersion") {
    REQUIRE(sim.WriteResourceClaimStatus(meta, both.dump()).ok());
    CHECK(world.Devices(key) == std::vector<std::string>{"dra-0/gpu-1"});
    CHECK(world.ReservedFor(key) == std::vector<std::string>{"a@ua", "b@ub"});
    CHECK(world.Claim(key)["spec"]["devices"]["requests"][0]["name"] == "gpu");  // the rest is kept
    // The old resourceVersion no longer passes; without one (Unreserve's undo) the write lands.
    CHECK(sim.WriteResourceClaimStatus(meta, json{{"reservedFor", nullptr}}.dump()).code() ==
          absl::StatusCode::kAlreadyExists);
    ObjectMeta any_version = meta;
    any_version.resource_version.clear();
    REQUIRE(sim.WriteResourceClaimStatus(any_version, json{{"reservedFor", nullptr}}.dump()).ok());
    CHECK(world.ReservedFor(key).empty());
    CHECK(world.Devices(key) == std::vector<std::string>{"dra-0/gpu-1"});  // not named: kept
  }
  SECTION("a claim two pods share keeps its devices until the last one ends") {
    REQUIRE(sim.WriteResourceClaimStatus(meta, both.dump()).ok());
    sim.EndPod("team-a/a");
    CHECK(world.ReservedFor(key) == std::vector<std::string>{"b@ub"});
    CHECK(world.Devices(key) == std::vector<std::string>{"dra-0/gpu-1"});
    sim.EndPod("other-namespace/b");  // not this claim's pod
    CHECK(world.ReservedFor(key) == std::vector<std::string>{"b@ub"});
    sim.EndPod("team-a/b");
    CHECK(world.ReservedFor(key).empty());
    CHECK(world.Devices(key).empty());
  }
}

TEST_CASE("replay names a DRA object it cannot read, and fails closed on it", "[dra][sim]") {
  ObjectList objects = ReadSnapshot("dra_claims.json");
  for (json& item : objects.others) {
    if (item["kind"] == "ResourceSlice") item["spec"]["devices"][1]["capacity"] = {{"memory", {{"value", "lots"}}}};
  }
  objects.others.push_back(json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"namespace": "team-a"}, "spec": {}})"));
  objects.others.push_back(json::parse(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass",
      "metadata": {"name": "old"}, "spec": {}})"));
  World world(objects);
  CAPTURE(world.warnings);
  REQUIRE(world.warnings.size() == 4);
  CHECK(world.warnings[0].starts_with("ResourceSlice dra-0-gpu.example.com: spec.devices[1].capacity.memory.value: "));
  CHECK(world.warnings[0].ends_with("; its pool serves nothing (every pod with claims waits if its pool cannot be read)"));
  CHECK(world.warnings[1].starts_with("DeviceClass broken: spec.selectors[0].cel.expression"));
  CHECK(world.warnings[2] == "ResourceClaim: metadata.name: missing");
  CHECK(world.warnings[3] == "DeviceClass old: apiVersion resource.k8s.io/v1beta1 is not read (only "
                             "resource.k8s.io/v1); skipped");
  // The undecodable slice is kept, as live: its pool (the snapshot's only one) serves nothing, so
  // no pod with claims is placed while it is there.
  world.sim().RunUntilIdle();
  for (const auto& [key, node] : world.sim().placements()) CHECK(node.empty());
  CHECK(world.sim().reasons().at("team-a/infer-0").find("cannot allocate all claims") != std::string::npos);
}

// A pod asking `nvidia.com/gpu: 1`, which only a DRA device can serve in dra_claims.json.
Pod GpuPod(const std::string& name) {
  json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"namespace": "team-a", "creationTimestamp": "2025-06-01T11:00:00Z"},
      "spec": {"schedulerName": "tessel",
               "containers": [{"name": "main", "image": "busybox",
                               "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                                             "limits": {"nvidia.com/gpu": "1"}}}]}})");
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "pod-uid-" + name;
  absl::StatusOr<Pod> decoded = DecodePod(pod);
  REQUIRE(decoded.ok());
  return *std::move(decoded);
}

TEST_CASE("replayed GPU pods served by DRA: the claims made for them, deleted with their pods", "[dra][sim]") {
  ObjectList objects = ReadSnapshot("dra_claims.json");
  objects.pods.clear();
  objects.others.push_back(json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
      "metadata": {"name": "gpu-extended", "creationTimestamp": "2025-01-01T00:00:00Z"},
      "spec": {"extendedResourceName": "nvidia.com/gpu",
               "selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})"));
  for (const char* name : {"a", "b", "c"}) objects.pods.push_back(GpuPod(name));
  World world(objects);
  SimulatedCluster& sim = world.sim();
  sim.RunUntilIdle();
  CHECK(sim.placements() == std::map<std::string, std::string>{
      {"team-a/a", "dra-0"}, {"team-a/b", "dra-0"}, {"team-a/c", ""}});
  // Each bound pod got a claim of its own, allocated and reserved for it.
  auto claims_of = [&](const std::string& pod) {
    std::vector<std::string> out;
    for (const auto& [key, raw] : world.w->scheduler->Objects()->Raw(RawKind::kResourceClaim)) {
      if (key.starts_with("team-a/" + pod + "-extended-resources-")) out.push_back(key);
    }
    return out;
  };
  const std::vector<std::string> of_a = claims_of("a");
  REQUIRE(of_a.size() == 1);
  CHECK(world.Devices(of_a[0]).size() == 1);
  CHECK(world.ReservedFor(of_a[0]) == std::vector<std::string>{"a@pod-uid-a"});
  CHECK(claims_of("b").size() == 1);
  CHECK(claims_of("c").empty());

  sim.EndPod("team-a/a");
  CHECK(claims_of("a").empty());  // the garbage collector's part
  sim.RunUntilIdle();
  CHECK(sim.placements().at("team-a/c") == "dra-0");
  REQUIRE(claims_of("c").size() == 1);
  CHECK(world.ReservedFor(claims_of("c")[0]) == std::vector<std::string>{"c@pod-uid-c"});
}

}  // namespace sim_claims_test
}  // namespace tessel::bench
